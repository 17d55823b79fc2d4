//! Which wire format a lister-watcher asks for, and which one the API server answered:
//! client-go's `rest.Config.ContentType`.
//!
//! client-go's typed clients and informers ask for protobuf for built-in types
//! (`Accept: application/vnd.kubernetes.protobuf, application/json`) and the server
//! answers JSON for what has no protobuf form (custom resources). The answer's
//! `Content-Type` decides how it is read, so what was *asked* and what was *answered*
//! can differ; the lister-watcher keeps the latter for the log line at the first answer, the
//! pipeline page and tests.
//!
//! The process-wide choice is `KUBE_API_CONTENT_TYPE` ([`Wire::from_env`], named after
//! kube-controller-manager's `--kube-api-content-type`): the binaries' flag of that name
//! falls back to it, and the test harness sets it to run the e2e suites on JSON too.

use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::info;

use crate::error::Error;

/// The environment variable [`Wire::from_env`] reads.
pub const CONTENT_TYPE_ENV: &str = "KUBE_API_CONTENT_TYPE";

/// Protobuf's media type, as client-go's `runtime.ContentTypeProtobuf`.
pub const PROTOBUF_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// JSON's media type.
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// What a lister-watcher asks the API server for: client-go's `rest.Config.ContentType`.
///
/// ```
/// use cache::Wire;
///
/// let wire: Wire = "application/json".parse()?;
/// assert_eq!(wire, Wire::Json);
/// assert_eq!("protobuf".parse::<Wire>()?, Wire::Protobuf);
/// assert_eq!(Wire::Protobuf.content_type(), "application/vnd.kubernetes.protobuf");
/// assert!("text/yaml".parse::<Wire>().is_err());
/// # Ok::<(), cache::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wire {
    /// Protobuf for the types that have a decoder ([`protowire::registry`]: the
    /// built-in types the controllers use), JSON for the rest (custom resources have
    /// no protobuf). client-go's default for its typed clients and informers.
    #[default]
    Protobuf,
    /// JSON for everything (client-go: `ContentType = "application/json"`).
    Json,
}

impl Wire {
    /// The name used in logs and on the pipeline page: `protobuf` or `json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Protobuf => "protobuf",
            Self::Json => "json",
        }
    }

    /// The media type, as `--kube-api-content-type` takes it.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => PROTOBUF_CONTENT_TYPE,
            Self::Json => JSON_CONTENT_TYPE,
        }
    }

    /// The process-wide choice: [`CONTENT_TYPE_ENV`] when set to a content type this
    /// parses, else protobuf (a value that does not parse is logged and ignored; the
    /// binaries' flag, which falls back to the same variable, refuses it instead).
    pub fn from_env() -> Self {
        match std::env::var(CONTENT_TYPE_ENV) {
            Ok(value) if !value.trim().is_empty() => value.parse().unwrap_or_else(|err| {
                tracing::warn!(%err, "{CONTENT_TYPE_ENV} ignored; asking for protobuf");
                Self::Protobuf
            }),
            _ => Self::Protobuf,
        }
    }

    /// The wire a response is in, by its `Content-Type` (protobuf for an envelope or a
    /// watch's frames, JSON for anything else).
    pub(crate) fn of_response(headers: &http::HeaderMap) -> Self {
        if super::protobuf::is_protobuf(headers) {
            Self::Protobuf
        } else {
            Self::Json
        }
    }

    /// The decoder to ask for protobuf with, if this wire and `K` allow it.
    pub(crate) fn decoder<K: 'static>(self) -> Option<protowire::registry::DecodeFn<K>> {
        match self {
            Self::Protobuf => protowire::registry::decoder::<K>(),
            Self::Json => None,
        }
    }
}

impl FromStr for Wire {
    type Err = Error;

    /// The media type (parameters such as `;charset=utf-8` ignored) or its short name.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let media = s.split(';').next().unwrap_or_default().trim();
        match media.to_ascii_lowercase().as_str() {
            PROTOBUF_CONTENT_TYPE | "protobuf" => Ok(Self::Protobuf),
            JSON_CONTENT_TYPE | "json" => Ok(Self::Json),
            _ => Err(Error::UnknownContentType(s.to_string())),
        }
    }
}

/// The wire of the server's latest answer to one lister-watcher; logged when it is
/// first known and whenever it changes.
#[derive(Debug, Default)]
pub(crate) struct Answered {
    /// 0: no answer yet; 1: protobuf; 2: JSON.
    wire: AtomicU8,
}

impl Answered {
    /// An answer to `asked` for `resource` (its URL) came in `answered`.
    pub(crate) fn record(&self, resource: &str, asked: Wire, answered: Wire) {
        let code = match answered {
            Wire::Protobuf => 1,
            Wire::Json => 2,
        };
        if self.wire.swap(code, Ordering::Relaxed) != code {
            info!(
                resource,
                asked = asked.as_str(),
                answered = answered.as_str(),
                "the API server answers this informer in {}",
                answered.as_str()
            );
        }
    }

    /// The wire of the latest answer, `None` before the first.
    pub(crate) fn get(&self) -> Option<Wire> {
        match self.wire.load(Ordering::Relaxed) {
            1 => Some(Wire::Protobuf),
            2 => Some(Wire::Json),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_parse_with_parameters_and_in_any_case() {
        for (text, wire) in [
            ("application/vnd.kubernetes.protobuf", Wire::Protobuf),
            ("Application/JSON; charset=utf-8", Wire::Json),
            (" protobuf ", Wire::Protobuf),
        ] {
            assert_eq!(text.parse::<Wire>().unwrap(), wire, "{text}");
        }
        let err = "application/cbor".parse::<Wire>().unwrap_err();
        assert!(err.to_string().contains("application/cbor"), "{err}");
    }

    #[test]
    fn the_answer_is_unknown_until_one_is_recorded_and_then_the_latest() {
        let answered = Answered::default();
        assert_eq!(answered.get(), None);
        answered.record("/api/v1/configmaps", Wire::Protobuf, Wire::Protobuf);
        assert_eq!(answered.get(), Some(Wire::Protobuf));
        answered.record("/apis/example.com/v1/foos", Wire::Protobuf, Wire::Json);
        assert_eq!(answered.get(), Some(Wire::Json));
    }
}
