//! Log set-up for the binaries: `tracing` to stderr as text or JSON.
//!
//! Text is for people at a terminal; JSON (one object per line, with the span and
//! fields such as `controller` and `key`) is for log collectors. The level comes from
//! `RUST_LOG` (e.g. `RUST_LOG=info,controller=debug`), `info` when unset.

use std::fmt;
use std::io::IsTerminal;
use std::str::FromStr;

use tracing_subscriber::EnvFilter;

/// The `--log-format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

impl FromStr for LogFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("unknown log format {other:?} (want text or json)")),
        }
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoggingError {
    /// `RUST_LOG` does not parse.
    #[error("RUST_LOG does not parse")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// A global subscriber is already installed.
    #[error("installing the log subscriber")]
    Install(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Installs the global subscriber. Fails (with the reason) if one is already
/// installed or `RUST_LOG` does not parse.
pub fn init_logging(format: LogFormat) -> Result<(), LoggingError> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.is_empty() => EnvFilter::try_new(directives)?,
        _ => EnvFilter::new("info"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only for a terminal: escape codes in a log file or collector are noise.
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    }
    .map_err(LoggingError::Install)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        for f in [LogFormat::Text, LogFormat::Json] {
            assert_eq!(f.to_string().parse::<LogFormat>().unwrap(), f);
        }
        assert!(
            "xml"
                .parse::<LogFormat>()
                .unwrap_err()
                .contains("text or json")
        );
    }
}
