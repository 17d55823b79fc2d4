//! The serving flags, as a clap [`Args`] struct to `#[command(flatten)]` into a
//! binary's flags: controller-runtime's `--metrics-bind-address` and
//! `--health-probe-bind-address`, and kubebuilder v4's scaffold flags for secure
//! metrics (`--metrics-secure`, `--metrics-cert-path`, `--metrics-cert-name`,
//! `--metrics-cert-key`), with their defaults.
//!
//! # The metrics port's default
//!
//! kubebuilder's scaffold disables metrics by default (`--metrics-bind-address=0`) and
//! its manifests pass `:8443` for HTTPS, or `:8080` when the operator chooses HTTP
//! ("Use :8443 for HTTPS or :8080 for HTTP"). Here an unset address follows the mode:
//! `:8443` when secure (the default), `:8080` with `--metrics-secure=false`, so a local
//! run in plain mode keeps the port it always had and a Deployment needs no address.

use std::path::PathBuf;

use clap::Args;
use serving::auth::AuthFilter;
use serving::certs::ServingCert;

use crate::bind_address::BindAddress;
use crate::error::Result;
use crate::server::MetricsServing;

/// The metrics port when secure and no address is given (`:8443`, kubebuilder's).
pub const DEFAULT_SECURE_METRICS_PORT: u16 = 8443;
/// The metrics port in plain mode when no address is given (`:8080`,
/// controller-runtime's).
pub const DEFAULT_PLAIN_METRICS_PORT: u16 = 8080;

/// Where the metrics and health probe servers listen, and how metrics are protected.
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
/// let cli = Cli::try_parse_from(["foo-controller"]).unwrap();
/// assert!(cli.serving.metrics_secure);
/// assert_eq!(cli.serving.metrics_address().to_string(), "0.0.0.0:8443");
///
/// let cli = Cli::try_parse_from(["foo-controller", "--metrics-secure=false"]).unwrap();
/// assert_eq!(cli.serving.metrics_address().to_string(), "0.0.0.0:8080");
///
/// let cli = Cli::try_parse_from(["foo-controller", "--metrics-bind-address", "0"]).unwrap();
/// assert_eq!(cli.serving.metrics_address(), metrics::BindAddress::Disabled);
/// assert_eq!(cli.serving.health_probe_bind_address.to_string(), "0.0.0.0:8081");
/// ```
#[derive(Debug, Clone, Args)]
pub struct ServingArgs {
    /// The address the metrics endpoint (/metrics) binds to: ":8443" for all
    /// interfaces, "127.0.0.1:8443" for one, "0" to disable. Default: ":8443" when
    /// --metrics-secure (HTTPS), ":8080" with --metrics-secure=false (HTTP).
    #[arg(long, env = "METRICS_BIND_ADDRESS", value_name = "ADDRESS")]
    pub metrics_bind_address: Option<BindAddress>,

    /// Serve metrics over HTTPS, each request authenticated (TokenReview) and
    /// authorized (SubjectAccessReview: get on the non-resource URL, e.g. /metrics)
    /// by the API server. --metrics-secure=false serves plain HTTP to anyone (local
    /// runs).
    #[arg(
        long,
        env = "METRICS_SECURE",
        default_value_t = true,
        default_missing_value = "true",
        num_args = 0..=1,
        require_equals = true,
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new(),
        value_name = "BOOL"
    )]
    pub metrics_secure: bool,

    /// The directory that holds the metrics server's certificate and key (reloaded
    /// when they change). Unset: a self-signed certificate for localhost and
    /// 127.0.0.1, made at start-up.
    #[arg(long, env = "METRICS_CERT_PATH", value_name = "DIR")]
    pub metrics_cert_path: Option<PathBuf>,

    /// The certificate's file name in --metrics-cert-path.
    #[arg(
        long,
        env = "METRICS_CERT_NAME",
        default_value = "tls.crt",
        value_name = "FILE"
    )]
    pub metrics_cert_name: String,

    /// The key's file name in --metrics-cert-path.
    #[arg(
        long,
        env = "METRICS_CERT_KEY",
        default_value = "tls.key",
        value_name = "FILE"
    )]
    pub metrics_cert_key: String,

    /// The address the health probe endpoints (/healthz, /readyz) bind to: ":8081" for
    /// all interfaces, "0" to disable. Always plain HTTP without authentication: the
    /// kubelet probes it.
    #[arg(
        long,
        env = "HEALTH_PROBE_BIND_ADDRESS",
        default_value = ":8081",
        value_name = "ADDRESS"
    )]
    pub health_probe_bind_address: BindAddress,

    /// Serve the live pipeline view on the metrics port: /debug/pipeline (a page
    /// following one object from the watch to the API writes), with its JSON under
    /// /debug/pipeline/state and /debug/pipeline/trip. Read-only, behind the same
    /// authentication and authorization as /metrics; off by default, since it shows
    /// object keys.
    #[arg(long, env = "DEBUG_PIPELINE", value_parser = clap::builder::FalseyValueParser::new())]
    pub debug_pipeline: bool,
}

impl Default for ServingArgs {
    /// The flags' defaults.
    fn default() -> Self {
        Self {
            metrics_bind_address: None,
            metrics_secure: true,
            metrics_cert_path: None,
            metrics_cert_name: "tls.crt".into(),
            metrics_cert_key: "tls.key".into(),
            health_probe_bind_address: BindAddress::Tcp {
                host: "0.0.0.0".into(),
                port: 8081,
            },
            debug_pipeline: false,
        }
    }
}

impl ServingArgs {
    /// The metrics address: `--metrics-bind-address`, else the mode's default (see
    /// the [module docs](self)).
    pub fn metrics_address(&self) -> BindAddress {
        if let Some(address) = &self.metrics_bind_address {
            return address.clone();
        }
        BindAddress::Tcp {
            host: "0.0.0.0".into(),
            port: if self.metrics_secure {
                DEFAULT_SECURE_METRICS_PORT
            } else {
                DEFAULT_PLAIN_METRICS_PORT
            },
        }
    }

    /// How to serve metrics: with `--metrics-secure`, HTTPS with the certificate of
    /// `--metrics-cert-path` (or a self-signed one) and every request authenticated
    /// and authorized against the API server `client` talks to; without it, plain
    /// HTTP and `client` is not used. The certificate is loaded here, so a missing
    /// or broken one fails at start-up. With metrics disabled (`"0"`), nothing is
    /// loaded.
    pub fn metrics_serving(&self, client: &kube::Client) -> Result<MetricsServing> {
        if !self.metrics_secure || self.metrics_address() == BindAddress::Disabled {
            return Ok(MetricsServing::plain(self.debug_pipeline));
        }
        let cert = ServingCert::load(
            self.metrics_cert_path.as_deref(),
            &self.metrics_cert_name,
            &self.metrics_cert_key,
        )?;
        Ok(MetricsServing::secure(
            self.debug_pipeline,
            cert,
            AuthFilter::new(client.clone()),
        ))
    }
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

    fn parse(args: &[&str]) -> ServingArgs {
        let mut argv = vec!["x"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).unwrap().serving
    }

    #[test]
    fn defaults_are_kubebuilders_secure_ones() {
        let serving = parse(&[]);
        assert!(serving.metrics_secure);
        assert_eq!(
            serving.metrics_address(),
            BindAddress::Tcp {
                host: "0.0.0.0".into(),
                port: 8443
            }
        );
        assert_eq!(serving.metrics_cert_path, None);
        assert_eq!(
            (
                serving.metrics_cert_name.as_str(),
                serving.metrics_cert_key.as_str()
            ),
            ("tls.crt", "tls.key")
        );
        assert_eq!(
            serving.health_probe_bind_address,
            BindAddress::Tcp {
                host: "0.0.0.0".into(),
                port: 8081
            }
        );
        let default = ServingArgs::default();
        assert_eq!(
            (
                default.metrics_secure,
                default.metrics_address(),
                default.health_probe_bind_address
            ),
            (
                true,
                serving.metrics_address(),
                serving.health_probe_bind_address
            )
        );
    }

    #[test]
    fn metrics_secure_reads_as_a_go_bool_flag() {
        assert!(parse(&["--metrics-secure"]).metrics_secure);
        assert!(parse(&["--metrics-secure=true"]).metrics_secure);
        let plain = parse(&["--metrics-secure=false"]);
        assert!(!plain.metrics_secure);
        // Plain mode keeps controller-runtime's :8080 unless told otherwise.
        assert_eq!(plain.metrics_address().to_string(), "0.0.0.0:8080");
        assert_eq!(
            parse(&[
                "--metrics-secure=false",
                "--metrics-bind-address=127.0.0.1:9090"
            ])
            .metrics_address()
            .to_string(),
            "127.0.0.1:9090"
        );
        // As in Go, `--metrics-secure false` is not a value for the flag.
        assert!(Cli::try_parse_from(["x", "--metrics-secure", "false"]).is_err());
        let err = Cli::try_parse_from(["x", "--metrics-secure=maybe"])
            .err()
            .expect("rejected")
            .to_string();
        assert!(err.contains("--metrics-secure"), "{err}");
    }

    #[test]
    fn flags_override_and_bad_values_name_the_flag() {
        let serving = parse(&[
            "--metrics-bind-address",
            "127.0.0.1:9090",
            "--health-probe-bind-address",
            "0",
            "--metrics-cert-path",
            "/certs",
            "--metrics-cert-name",
            "m.crt",
            "--metrics-cert-key",
            "m.key",
        ]);
        assert_eq!(serving.metrics_address().to_string(), "127.0.0.1:9090");
        assert_eq!(serving.health_probe_bind_address, BindAddress::Disabled);
        assert_eq!(serving.metrics_cert_path, Some(PathBuf::from("/certs")));
        assert_eq!(serving.metrics_cert_name, "m.crt");
        assert_eq!(serving.metrics_cert_key, "m.key");
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
