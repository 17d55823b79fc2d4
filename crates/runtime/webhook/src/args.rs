//! The webhook server's flags, as a clap [`Args`] struct to `#[command(flatten)]` into a
//! binary's flags, with controller-runtime's defaults.

use std::path::PathBuf;

use clap::Args;
use metrics::BindAddress;

use crate::server::WebhookServer;

/// Where the webhook server listens and finds its certificate.
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     webhook: webhook::WebhookArgs,
/// }
///
/// // Off unless asked for: a controller started without certificates still runs.
/// let cli = Cli::try_parse_from(["foo-controller"]).unwrap();
/// assert_eq!(cli.webhook.webhook_bind_address, metrics::BindAddress::Disabled);
/// let cli = Cli::try_parse_from([
///     "foo-controller", "--webhook-bind-address", ":9443", "--webhook-cert-dir", "/certs",
/// ])
/// .unwrap();
/// assert_eq!(cli.webhook.webhook_bind_address.to_string(), "0.0.0.0:9443");
/// let server = cli.webhook.server();
/// assert_eq!(server.cert_path(), std::path::Path::new("/certs/tls.crt"));
/// ```
#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// The address the admission webhook server binds to, e.g. ":9443" (all
    /// interfaces; what deploy/ sets), or "0" to disable it (the default: the server
    /// needs a certificate, which a controller run by hand usually has not got;
    /// controller-runtime likewise starts it only when asked to).
    #[arg(
        long,
        env = "WEBHOOK_BIND_ADDRESS",
        default_value = "0",
        value_name = "ADDRESS"
    )]
    pub webhook_bind_address: BindAddress,

    /// The directory holding the serving certificate and key (a mounted
    /// kubernetes.io/tls Secret, as cert-manager writes it).
    #[arg(
        long,
        env = "WEBHOOK_CERT_DIR",
        default_value = "/tmp/k8s-webhook-server/serving-certs",
        value_name = "DIR"
    )]
    pub webhook_cert_dir: PathBuf,

    /// The certificate's file name in the certificate directory.
    #[arg(
        long,
        env = "WEBHOOK_CERT_NAME",
        default_value = "tls.crt",
        value_name = "FILE"
    )]
    pub webhook_cert_name: String,

    /// The key's file name in the certificate directory.
    #[arg(
        long,
        env = "WEBHOOK_KEY_NAME",
        default_value = "tls.key",
        value_name = "FILE"
    )]
    pub webhook_key_name: String,
}

impl WebhookArgs {
    /// A [`WebhookServer`] configured from these flags, without handlers yet.
    pub fn server(&self) -> WebhookServer {
        WebhookServer::new(self.webhook_bind_address.clone(), &self.webhook_cert_dir)
            .with_cert_name(&self.webhook_cert_name)
            .with_key_name(&self.webhook_key_name)
    }
}
