//! The serving flags, as a clap [`Args`] struct to `#[command(flatten)]` into a
//! binary's flags: controller-runtime's `--metrics-bind-address` and
//! `--health-probe-bind-address`, with its defaults.

use clap::Args;

use crate::bind_address::BindAddress;

/// Where the metrics and health probe servers listen.
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     serving: metrics::ServingArgs,
/// }
///
/// let cli = Cli::try_parse_from(["foo-controller", "--metrics-bind-address", "0"]).unwrap();
/// assert_eq!(cli.serving.metrics_bind_address, metrics::BindAddress::Disabled);
/// assert_eq!(cli.serving.health_probe_bind_address.to_string(), "0.0.0.0:8081");
/// ```
#[derive(Debug, Clone, Args)]
pub struct ServingArgs {
    /// The address the metrics endpoint (/metrics) binds to: ":8080" for all
    /// interfaces, "127.0.0.1:8080" for one, "0" to disable.
    #[arg(
        long,
        env = "METRICS_BIND_ADDRESS",
        default_value = ":8080",
        value_name = "ADDRESS"
    )]
    pub metrics_bind_address: BindAddress,

    /// The address the health probe endpoints (/healthz, /readyz) bind to: ":8081" for
    /// all interfaces, "0" to disable.
    #[arg(
        long,
        env = "HEALTH_PROBE_BIND_ADDRESS",
        default_value = ":8081",
        value_name = "ADDRESS"
    )]
    pub health_probe_bind_address: BindAddress,

    /// Serve the live pipeline view on the metrics port: /debug/pipeline (a page
    /// following one object from the watch to the API writes), with its JSON under
    /// /debug/pipeline/state and /debug/pipeline/trip. Read-only; off by default,
    /// since it shows object keys.
    #[arg(long, env = "DEBUG_PIPELINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub debug_pipeline: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serving: ServingArgs,
    }

    #[test]
    fn defaults_are_controller_runtimes() {
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(
            cli.serving.metrics_bind_address,
            BindAddress::Tcp {
                host: "0.0.0.0".into(),
                port: 8080
            }
        );
        assert_eq!(
            cli.serving.health_probe_bind_address,
            BindAddress::Tcp {
                host: "0.0.0.0".into(),
                port: 8081
            }
        );
    }

    #[test]
    fn flags_override_and_bad_values_name_the_flag() {
        let cli = Cli::try_parse_from([
            "x",
            "--metrics-bind-address",
            "127.0.0.1:9090",
            "--health-probe-bind-address",
            "0",
        ])
        .unwrap();
        assert_eq!(
            cli.serving.metrics_bind_address.to_string(),
            "127.0.0.1:9090"
        );
        assert_eq!(cli.serving.health_probe_bind_address, BindAddress::Disabled);
        let err = Cli::try_parse_from(["x", "--metrics-bind-address", "nonsense"])
            .err()
            .expect("rejected")
            .to_string();
        assert!(
            err.contains("--metrics-bind-address") && err.contains("nonsense"),
            "{err}"
        );
    }
}
