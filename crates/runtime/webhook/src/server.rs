//! The HTTPS server the API server calls (controller-runtime's `webhook.DefaultServer`).
//!
//! # Lifecycle
//!
//! 1. [`WebhookServer::new`] with the bind address (`:9443` by default in
//!    [`WebhookArgs`](crate::WebhookArgs)) and the certificate directory; then
//!    [`register_validator`](WebhookServer::register_validator),
//!    [`register_defaulter`](WebhookServer::register_defaulter) or
//!    [`register`](WebhookServer::register) one handler per path, and
//!    [`register_conversion`](WebhookServer::register_conversion) a CRD's conversion.
//! 2. [`bind`](WebhookServer::bind) loads the certificate (a missing or bad one is an
//!    error now, not at the first request) and binds the port (a busy port too).
//! 3. [`BoundWebhookServer::serve`] answers until its [`CancellationToken`] is cancelled,
//!    reloading the certificate as its files change ([`CertWatcher`]). Readiness
//!    ([`Readiness`]) turns true when it starts accepting and false when it stops.
//!    On cancel it stops accepting, lets requests in flight finish (idle keep-alive
//!    connections are closed) and returns, waiting at most [`SHUTDOWN_GRACE`].
//!
//! # Slow clients
//!
//! Every connection is served under [`ConnectionLimits`] ([`serving::limits`],
//! shared with the metrics server;
//! [`with_limits`](WebhookServer::with_limits) to change them):
//!
//! | limit | default | then |
//! |---|---|---|
//! | TLS handshake | 10 s | the connection is closed |
//! | a request's headers, from its first byte | 10 s (the API server's default `timeoutSeconds`) | the connection is closed |
//! | the whole request, headers and body | 30 s (the largest `timeoutSeconds`: the API server has given up by then) | `408`, and the connection is closed |
//! | idle keep-alive | 120 s (the API server's transport closes its idle connections after 90 s, so it always closes first) | the connection is closed |
//! | concurrent connections | 256 (above the 200 mutating requests an API server serves at once) | the next connection is accepted once one closes |
//!
//! So a client that sends headers and part of a [`DEFAULT_MAX_REQUEST_BYTES`] body
//! holds its connection, and the buffer its bytes fill, for 30 s at most, and at most
//! 256 such clients are served at once: the memory they can pin is bounded by what
//! they send, and the server keeps answering the API server meanwhile (the test
//! `tests/slow_clients.rs` shows all three).
//!
//! HTTP/1.1 only (ALPN `http/1.1`): the API server speaks it to webhooks as well as
//! HTTP/2, and it avoids HTTP/2's rapid-reset class of attacks, for which kubebuilder
//! scaffolds disable HTTP/2 on the webhook server too. No client certificates are
//! requested (controller-runtime's optional `ClientCAName` is not implemented).

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serving::limits::{self, ConnectionLimits, ConnectionSlots};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use metrics::BindAddress;

use crate::admission::{Defaulter, Validator};
use crate::certs::{CertWatcher, DEFAULT_CERT_POLL_INTERVAL};
use crate::conversion::Conversion;
use crate::error::{Error, Result};
use crate::handler::{DefaultingHandler, Handler, ValidatingHandler};
use crate::http::{Route, Routes};
use crate::metrics::WebhookMetrics;
use crate::path::{mutate_path, validate_path};

/// controller-runtime's default port.
pub const DEFAULT_PORT: u16 = 9443;
/// kubebuilder's path of the conversion webhook, in its CRD patches
/// (`config/crd/patches/webhook_in_<kind>.yaml`).
pub const CONVERSION_PATH: &str = "/convert";
/// The certificate file in the certificate directory (cert-manager's Secret key).
pub const DEFAULT_CERT_NAME: &str = "tls.crt";
/// The key file in the certificate directory.
pub const DEFAULT_KEY_NAME: &str = "tls.key";
/// The largest request body read: 7 MiB, controller-runtime's `maxRequestSize` (an
/// AdmissionReview holds at most two objects of at most 3 MiB each, plus the request).
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 7 * 1024 * 1024;
/// How long [`BoundWebhookServer::serve`] waits for requests in flight after
/// cancellation: the API server's default webhook timeout.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Whether the webhook server is serving: true from the moment it accepts connections
/// (bound, with a certificate loaded) until it shuts down; true as well once
/// [`WebhookServer::bind`] has found the server disabled (as controller-runtime's
/// `StartedChecker`). Clones watch the same server.
///
/// Register it as a readiness check, so that no traffic is routed to a replica whose
/// webhook server is not up yet:
///
/// ```
/// let server = webhook::WebhookServer::new("127.0.0.1:0".parse().unwrap(), "/certs");
/// let health = metrics::Health::new();
/// health.add_readyz_check("webhook", server.readiness().check()).unwrap();
/// assert_eq!(health.readyz(None, false).status, 503);
/// ```
#[derive(Clone, Debug)]
pub struct Readiness {
    rx: watch::Receiver<bool>,
}

impl Readiness {
    /// Serving now?
    pub fn is_ready(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until the server serves; `false` if it was dropped without ever serving.
    pub async fn wait(&self) -> bool {
        self.rx.clone().wait_for(|ready| *ready).await.is_ok()
    }

    /// [`is_ready`](Self::is_ready) as a closure for `metrics::Health::add_readyz_check`.
    pub fn check(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let rx = self.rx.clone();
        move || *rx.borrow()
    }
}

/// A webhook server being configured: where to listen, where the certificate is, and
/// which handler answers which path. See the [module docs](self).
pub struct WebhookServer {
    bind_address: BindAddress,
    cert_dir: PathBuf,
    cert_name: String,
    key_name: String,
    max_request_bytes: usize,
    cert_poll_interval: Duration,
    limits: ConnectionLimits,
    handlers: HashMap<String, Route>,
    metrics: Option<WebhookMetrics>,
    ready: watch::Sender<bool>,
}

impl fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookServer")
            .field("bind_address", &self.bind_address)
            .field("cert_dir", &self.cert_dir)
            .field("paths", &self.paths())
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A server for `bind_address` (`"0"` disables it) with `tls.crt` and `tls.key` in
    /// `cert_dir`, a 7 MiB body limit, the certificate re-read every second, the
    /// default [`ConnectionLimits`], no metrics and no handlers yet.
    pub fn new(bind_address: BindAddress, cert_dir: impl Into<PathBuf>) -> Self {
        Self {
            bind_address,
            cert_dir: cert_dir.into(),
            cert_name: DEFAULT_CERT_NAME.to_string(),
            key_name: DEFAULT_KEY_NAME.to_string(),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            cert_poll_interval: DEFAULT_CERT_POLL_INTERVAL,
            limits: ConnectionLimits::default(),
            handlers: HashMap::new(),
            metrics: None,
            ready: watch::Sender::new(false),
        }
    }

    /// The certificate's file name in the certificate directory.
    pub fn with_cert_name(mut self, name: impl Into<String>) -> Self {
        self.cert_name = name.into();
        self
    }

    /// The key's file name in the certificate directory.
    pub fn with_key_name(mut self, name: impl Into<String>) -> Self {
        self.key_name = name.into();
        self
    }

    /// The largest request body accepted; larger ones are answered 413.
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// How often the certificate files are re-read.
    pub fn with_cert_poll_interval(mut self, interval: Duration) -> Self {
        self.cert_poll_interval = interval;
        self
    }

    /// What a client may cost the server: deadlines, idle timeout, connection cap (see
    /// the [module docs](self#slow-clients)).
    pub fn with_limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits connections are served under.
    pub fn limits(&self) -> &ConnectionLimits {
        &self.limits
    }

    /// Records requests in `metrics` (see [`WebhookMetrics`]).
    pub fn with_metrics(mut self, metrics: WebhookMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The certificate file: `cert_dir/cert_name`.
    pub fn cert_path(&self) -> PathBuf {
        self.cert_dir.join(&self.cert_name)
    }

    /// The key file: `cert_dir/key_name`.
    pub fn key_path(&self) -> PathBuf {
        self.cert_dir.join(&self.key_name)
    }

    /// The registered paths, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.handlers.keys().cloned().collect();
        paths.sort();
        paths
    }

    /// The readiness of this server (and of the [`BoundWebhookServer`] it becomes).
    pub fn readiness(&self) -> Readiness {
        Readiness {
            rx: self.ready.subscribe(),
        }
    }

    /// Serves `handler` at `path`. A path can be registered once.
    pub fn register(&mut self, path: impl Into<String>, handler: impl Handler) -> Result<()> {
        self.add_route(path.into(), Route::Admission(Arc::new(handler)))
    }

    /// Serves `conversion` at `path` (kubebuilder's is [`CONVERSION_PATH`], `/convert`):
    /// the `ConversionReview`s of the CRDs whose `spec.conversion.webhook.clientConfig`
    /// names this path (see [`conversion`](crate::conversion)). A path can be registered
    /// once.
    pub fn register_conversion(
        &mut self,
        path: impl Into<String>,
        conversion: impl Conversion,
    ) -> Result<()> {
        self.add_route(path.into(), Route::Conversion(Arc::new(conversion)))
    }

    fn add_route(&mut self, path: String, route: Route) -> Result<()> {
        if !path.starts_with('/') || path.contains(['?', '#']) {
            return Err(Error::InvalidPath { path });
        }
        if self.handlers.contains_key(&path) {
            return Err(Error::DuplicatePath { path });
        }
        tracing::info!(path = %path, "registering webhook");
        self.handlers.insert(path, route);
        Ok(())
    }

    /// Serves `validator` at kubebuilder's path for `K`
    /// ([`validate_path::<K>()`](crate::validate_path)), which it returns.
    pub fn register_validator<K, V>(&mut self, validator: V) -> Result<String>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned + 'static,
        V: Validator<K> + 'static,
    {
        let path = validate_path::<K>();
        self.register(path.clone(), ValidatingHandler::new(validator))?;
        Ok(path)
    }

    /// Serves `defaulter` at kubebuilder's path for `K`
    /// ([`mutate_path::<K>()`](crate::mutate_path)), which it returns.
    pub fn register_defaulter<K, D>(&mut self, defaulter: D) -> Result<String>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned + Serialize + 'static,
        D: Defaulter<K> + 'static,
    {
        let path = mutate_path::<K>();
        self.register(path.clone(), DefaultingHandler::new(defaulter))?;
        Ok(path)
    }

    /// Loads the certificate and binds the address; `None` when the server is disabled
    /// (its readiness is then true).
    pub async fn bind(self) -> Result<Option<BoundWebhookServer>> {
        let Some((host, port)) = self.bind_address.host_port() else {
            tracing::info!("webhook server disabled");
            self.ready.send_replace(true);
            return Ok(None);
        };
        let certs = Arc::new(CertWatcher::new(self.cert_path(), self.key_path())?);
        let mut config = rustls::ServerConfig::builder_with_provider(certs.provider().clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(certs.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let bind_error = |source| Error::Bind {
            address: self.bind_address.to_string(),
            source,
        };
        let listener = TcpListener::bind((host, port)).await.map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        if let Some(metrics) = &self.metrics {
            for path in self.handlers.keys() {
                metrics.init_webhook(path);
            }
        }
        Ok(Some(BoundWebhookServer {
            listener,
            local_addr,
            acceptor: TlsAcceptor::from(Arc::new(config)),
            paths: self.paths(),
            certs,
            cert_poll_interval: self.cert_poll_interval,
            slots: ConnectionSlots::new(self.limits.max_connections),
            limits: Arc::new(self.limits),
            routes: Arc::new(Routes {
                handlers: self.handlers,
                max_request_bytes: self.max_request_bytes,
                metrics: self.metrics,
            }),
            ready: self.ready,
        }))
    }

    /// [`bind`](Self::bind), then [`BoundWebhookServer::serve`] until `cancel`. Returns at
    /// once when the server is disabled.
    pub async fn serve(self, cancel: CancellationToken) -> Result<()> {
        if let Some(server) = self.bind().await? {
            server.serve(cancel).await;
        }
        Ok(())
    }
}

/// A webhook server with its port bound and certificate loaded, ready to
/// [`serve`](Self::serve).
pub struct BoundWebhookServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    acceptor: TlsAcceptor,
    paths: Vec<String>,
    certs: Arc<CertWatcher>,
    cert_poll_interval: Duration,
    limits: Arc<ConnectionLimits>,
    slots: ConnectionSlots,
    routes: Arc<Routes>,
    ready: watch::Sender<bool>,
}

impl fmt::Debug for BoundWebhookServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundWebhookServer")
            .field("local_addr", &self.local_addr)
            .field("paths", &self.paths)
            .finish_non_exhaustive()
    }
}

impl BoundWebhookServer {
    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The certificate files' watcher (e.g. to [`reload`](CertWatcher::reload) now).
    pub fn cert_watcher(&self) -> &Arc<CertWatcher> {
        &self.certs
    }

    /// The readiness of this server.
    pub fn readiness(&self) -> Readiness {
        Readiness {
            rx: self.ready.subscribe(),
        }
    }

    /// Answers requests until `cancel` is cancelled, then shuts down gracefully (see the
    /// [module docs](self)).
    pub async fn serve(self, cancel: CancellationToken) {
        let watcher = tokio::spawn(
            self.certs
                .clone()
                .watch(self.cert_poll_interval, cancel.clone()),
        );
        tracing::info!(address = %self.local_addr, paths = ?self.paths, "serving webhooks");
        self.ready.send_replace(true);
        let connections = TaskTracker::new();
        // Waits for a free slot before accepting (serving::limits: the cap).
        while let Some((stream, peer, slot)) =
            limits::accept(&self.listener, &self.slots, &cancel).await
        {
            let connection = connection(
                stream,
                peer,
                self.acceptor.clone(),
                self.routes.clone(),
                self.limits.clone(),
                cancel.clone(),
            );
            connections.spawn(async move {
                connection.await;
                drop(slot);
            });
        }
        self.ready.send_replace(false);
        drop(self.listener);
        connections.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("webhook connections still open after the grace period; dropping them");
        }
        let _ = watcher.await;
        tracing::info!("webhook server stopped");
    }
}

/// One client connection: TLS handshake, then HTTP/1.1 requests until the client closes,
/// a limit closes it, or the server shuts down.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    routes: Arc<Routes>,
    limits: Arc<ConnectionLimits>,
    cancel: CancellationToken,
) {
    let handshake = tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream));
    let tls = tokio::select! {
        _ = cancel.cancelled() => return,
        result = handshake => match result {
            Ok(Ok(tls)) => tls,
            // A TCP probe or a scanner: connected and left.
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                tracing::debug!(%peer, error = %e, "connection closed during the TLS handshake");
                return;
            }
            // Typically a client that does not trust the certificate (a wrong caBundle).
            Ok(Err(e)) => {
                tracing::warn!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
    };
    let service = hyper::service::service_fn(move |request| {
        let routes = routes.clone();
        async move { Ok::<_, Infallible>(routes.serve(request).await) }
    });
    if let Err(e) = limits::serve_connection(tls, service, &limits, &cancel).await {
        tracing::debug!(%peer, error = %e, "connection closed");
    }
}
