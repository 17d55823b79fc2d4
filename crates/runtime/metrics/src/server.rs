//! The two HTTP servers: `/metrics` (controller-runtime's metrics server) and
//! `/healthz` + `/readyz` (its health probe server), on hyper's HTTP/1.
//!
//! # Why two ports
//!
//! As in controller-runtime (`:8080` and `:8081`): a Prometheus scrape of a large
//! registry must never make a kubelet probe time out, and the two can be exposed
//! differently (the metrics port to the monitoring namespace, the probe port to the
//! kubelet only).
//!
//! # Lifecycle
//!
//! [`bind_metrics`] / [`bind_health`] bind first, so a wrong or busy address is a typed
//! error ([`Error::Bind`] naming the address) at start-up, not a log line later; then
//! [`Server::serve`] answers until its [`CancellationToken`] is cancelled. On cancel it
//! stops accepting, lets requests in flight finish (idle keep-alive connections are
//! closed), and returns - waiting at most [`SHUTDOWN_GRACE`] for slow clients.
//! [`serve_metrics`] and [`serve_health`] do both steps. A disabled address (`"0"`)
//! serves nothing: `bind_*` returns `None`, `serve_*` returns `Ok(())` at once.
//!
//! Every connection, on both servers, is held to [`serving::limits`]: its request
//! headers due within 10 s, the whole request within 30 s, an idle keep-alive
//! connection closed after 120 s, the TLS handshake (secure serving) within 10 s, and
//! at most 256 connections at once (more wait in the listen backlog). A scrape or a
//! probe is a header-only GET answered at once, so none of these bind a real client;
//! they bound what a slow or idle one can hold. A failing `accept` (out of file
//! descriptors) is retried after a short pause rather than in a hot loop.
//!
//! # Secure serving
//!
//! kubebuilder's default since v4.1, controller-runtime's `metricsserver.Options{
//! SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}`:
//! [`bind_metrics_serving`] with a [`MetricsServing`] that has a certificate serves
//! HTTPS (HTTP/1.1 over rustls; the certificate from a directory, reloaded as it
//! changes, or self-signed: [`serving::certs::ServingCert`]), and with a filter every
//! request, whatever its path, is first authenticated and authorized
//! ([`serving::auth::AuthFilter`]: 401 without a valid bearer token, 403 when the
//! SubjectAccessReview says no, 500 when the API server cannot be asked). That covers
//! `/metrics` and `/debug/pipeline` (which shows object keys) alike: a client
//! learns nothing, not even which paths exist, before it is authorized. The health
//! server never gets either: the kubelet probes it over plain HTTP without a token.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use serving::auth::AuthFilter;
use serving::certs::{DEFAULT_CERT_POLL_INTERVAL, ServingCert};
use serving::limits::{ConnectionLimits, ConnectionSlots};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsAcceptor;

use crate::bind_address::BindAddress;
use crate::error::{Error, Result};
use crate::health::Health;
use crate::registry::{self, Registry};

/// How long [`Server::serve`] waits for requests in flight after cancellation.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a connection may take to send a request's headers
/// ([`ConnectionLimits::header_read_timeout`]'s default).
pub const HEADER_READ_TIMEOUT: Duration = serving::limits::DEFAULT_HEADER_READ_TIMEOUT;
/// How long a client may take to complete the TLS handshake (secure serving;
/// [`ConnectionLimits::handshake_timeout`]'s default).
pub const HANDSHAKE_TIMEOUT: Duration = serving::limits::DEFAULT_HANDSHAKE_TIMEOUT;

/// How the metrics server serves: plain HTTP to anyone (`--metrics-secure=false`), or
/// HTTPS with a certificate, each request passing a filter when there is one.
/// [`ServingArgs::metrics_serving`](crate::ServingArgs::metrics_serving) builds it from
/// the flags.
#[derive(Debug, Clone, Default)]
pub struct MetricsServing {
    /// Also serve `/debug/pipeline` (`--debug-pipeline`).
    pub debug_pipeline: bool,
    /// HTTPS with this certificate; plain HTTP when `None`.
    pub cert: Option<ServingCert>,
    /// Authenticate and authorize every request with it; nobody is asked when `None`.
    pub filter: Option<AuthFilter>,
}

impl MetricsServing {
    /// Plain HTTP, no filter: today's mode for local runs.
    pub fn plain(debug_pipeline: bool) -> Self {
        Self {
            debug_pipeline,
            ..Self::default()
        }
    }

    /// HTTPS with `cert`, every request through `filter`.
    pub fn secure(debug_pipeline: bool, cert: ServingCert, filter: AuthFilter) -> Self {
        Self {
            debug_pipeline,
            cert: Some(cert),
            filter: Some(filter),
        }
    }

    /// What the log says: `"https, authenticated and authorized"`, `"http"`, ...
    pub fn describe(&self) -> &'static str {
        match (&self.cert, &self.filter) {
            (Some(_), Some(_)) => "https, authenticated and authorized",
            (Some(_), None) => "https, no authentication",
            (None, Some(_)) => "http, authenticated and authorized",
            (None, None) => "http, no authentication",
        }
    }
}

/// What a server answers.
#[derive(Clone)]
enum Routes {
    /// `/metrics`, and `/debug/pipeline` when the flag is set; each request through
    /// the filter first when there is one.
    Metrics {
        registry: Registry,
        pipeline: bool,
        filter: Option<AuthFilter>,
    },
    Health(Health),
}

/// A bound server, ready to [`serve`](Self::serve).
pub struct Server {
    what: &'static str,
    listener: TcpListener,
    local_addr: SocketAddr,
    routes: Routes,
    /// Secure serving: the certificate and the acceptor built on it.
    tls: Option<(ServingCert, TlsAcceptor)>,
    /// What each connection may cost.
    limits: ConnectionLimits,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("what", &self.what)
            .field("local_addr", &self.local_addr)
            .field("tls", &self.tls.as_ref().map(|(cert, _)| cert.describe()))
            .finish_non_exhaustive()
    }
}

/// Binds the metrics server (`GET /metrics`, plain HTTP, no filter) to `addr`; `None`
/// when `addr` is disabled.
pub async fn bind_metrics(addr: &BindAddress, registry: Registry) -> Result<Option<Server>> {
    bind_metrics_with_pipeline(addr, registry, false).await
}

/// [`bind_metrics`], also serving the live pipeline view (`/debug/pipeline`, see
/// [`crate::pipeline_view`]) when `pipeline` is true (`--debug-pipeline`).
pub async fn bind_metrics_with_pipeline(
    addr: &BindAddress,
    registry: Registry,
    pipeline: bool,
) -> Result<Option<Server>> {
    bind_metrics_serving(addr, registry, MetricsServing::plain(pipeline)).await
}

/// Binds the metrics server to `addr` as `serving` says: plain or HTTPS, with or
/// without the authentication and authorization filter (see the
/// [module docs](self#secure-serving)); `None` when `addr` is disabled.
pub async fn bind_metrics_serving(
    addr: &BindAddress,
    registry: Registry,
    serving: MetricsServing,
) -> Result<Option<Server>> {
    let tls = match serving.cert {
        Some(cert) => {
            let config = cert.server_config(&[b"http/1.1"])?;
            Some((cert, TlsAcceptor::from(std::sync::Arc::new(config))))
        }
        None => None,
    };
    let routes = Routes::Metrics {
        registry,
        pipeline: serving.debug_pipeline,
        filter: serving.filter,
    };
    let server = bind("metrics", addr, routes).await?;
    Ok(server.map(|server| Server { tls, ..server }))
}

/// Binds the health probe server (`GET /healthz`, `/readyz`, `/readyz/<check>`) to
/// `addr`; `None` when `addr` is disabled.
pub async fn bind_health(addr: &BindAddress, health: Health) -> Result<Option<Server>> {
    bind("health probes", addr, Routes::Health(health)).await
}

/// Serves `/metrics` from `registry` on `addr` until `cancel`: [`bind_metrics`] then
/// [`Server::serve`]. Returns at once when `addr` is disabled.
pub async fn serve_metrics(
    addr: &BindAddress,
    registry: Registry,
    cancel: CancellationToken,
) -> Result<()> {
    match bind_metrics(addr, registry).await? {
        Some(server) => {
            server.serve(cancel).await;
            Ok(())
        }
        None => {
            tracing::info!("metrics server disabled");
            Ok(())
        }
    }
}

/// Serves `/healthz` and `/readyz` from `health` on `addr` until `cancel`:
/// [`bind_health`] then [`Server::serve`]. Returns at once when `addr` is disabled.
pub async fn serve_health(
    addr: &BindAddress,
    health: Health,
    cancel: CancellationToken,
) -> Result<()> {
    match bind_health(addr, health).await? {
        Some(server) => {
            server.serve(cancel).await;
            Ok(())
        }
        None => {
            tracing::info!("health probe server disabled");
            Ok(())
        }
    }
}

async fn bind(what: &'static str, addr: &BindAddress, routes: Routes) -> Result<Option<Server>> {
    let Some((host, port)) = addr.host_port() else {
        return Ok(None);
    };
    let err = |source| Error::Bind {
        server: what,
        address: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind((host, port)).await.map_err(err)?;
    let local_addr = listener.local_addr().map_err(err)?;
    Ok(Some(Server {
        what,
        listener,
        local_addr,
        routes,
        tls: None,
        limits: ConnectionLimits::default(),
    }))
}

impl Server {
    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The same server with other connection limits (tests shorten them).
    pub fn with_limits(self, limits: ConnectionLimits) -> Self {
        Self { limits, ..self }
    }

    /// `"https"` with a certificate, else `"http"`.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() { "https" } else { "http" }
    }

    /// Answers requests until `cancel` is cancelled, then shuts down gracefully (see the
    /// [module docs](self)).
    pub async fn serve(self, cancel: CancellationToken) {
        tracing::info!(server = self.what, address = %self.local_addr, scheme = self.scheme(), "serving");
        let watcher = self.tls.as_ref().map(|(cert, _)| {
            tokio::spawn(
                cert.clone()
                    .watch(DEFAULT_CERT_POLL_INTERVAL, cancel.clone()),
            )
        });
        let connections = TaskTracker::new();
        let slots = ConnectionSlots::new(self.limits.max_connections);
        let limits = std::sync::Arc::new(self.limits.clone());
        while let Some((stream, peer, slot)) =
            serving::limits::accept(&self.listener, &slots, &cancel).await
        {
            let routes = self.routes.clone();
            let cancel = cancel.clone();
            let limits = limits.clone();
            let acceptor = self.tls.as_ref().map(|(_, acceptor)| acceptor.clone());
            connections.spawn(async move {
                // The slot is held until the connection ends.
                let _slot = slot;
                match acceptor {
                    None => serve_connection(stream, peer, routes, &limits, &cancel).await,
                    Some(acceptor) => {
                        let handshake = tokio::time::timeout(
                            limits.handshake_timeout,
                            handshake(acceptor, stream, &cancel),
                        );
                        match handshake.await {
                            Ok(Some(tls)) => {
                                serve_connection(tls, peer, routes, &limits, &cancel).await
                            }
                            Ok(None) => {}
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                        }
                    }
                }
            });
        }
        connections.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, connections.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                server = self.what,
                "connections still open after the grace period; dropping them"
            );
        }
        if let Some(watcher) = watcher {
            let _ = watcher.await;
        }
        tracing::info!(server = self.what, "stopped");
    }
}

/// The TLS handshake of a new connection; `None` when it fails (logged at debug:
/// scanners and TCP probes are no news) or the server stops. The caller bounds its
/// time.
async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    acceptor: TlsAcceptor,
    stream: S,
    cancel: &CancellationToken,
) -> Option<tokio_rustls::server::TlsStream<S>> {
    tokio::select! {
        _ = cancel.cancelled() => None,
        result = acceptor.accept(stream) => match result {
            Ok(tls) => Some(tls),
            Err(e) => {
                tracing::debug!(error = %e, "TLS handshake failed");
                None
            }
        },
    }
}

/// HTTP/1.1 requests on one connection, under `limits`, until the client closes it, a
/// limit closes it, or the server stops.
async fn serve_connection<I>(
    io: I,
    peer: SocketAddr,
    routes: Routes,
    limits: &ConnectionLimits,
    cancel: &CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let routes = routes.clone();
        async move { Ok::<_, Infallible>(routes.handle(req).await) }
    });
    if let Err(e) = serving::limits::serve_connection(io, service, limits, cancel).await {
        tracing::debug!(%peer, error = %e, "connection closed");
    }
}

impl Routes {
    /// The filter first, if any (on every path, as controller-runtime wraps its whole
    /// mux), then the route.
    async fn handle<B>(&self, req: Request<B>) -> Response<Full<Bytes>> {
        if let Routes::Metrics {
            filter: Some(filter),
            ..
        } = self
        {
            let path = req.uri().path();
            match filter.check(req.method(), path, req.headers()).await {
                Ok(user) => {
                    tracing::trace!(user = %user.name, path, "authorized");
                }
                Err(e) => {
                    if e.status() == 500 {
                        tracing::error!(error = %e, path, "cannot authenticate or authorize a metrics request");
                    } else {
                        tracing::debug!(error = %e, path, "metrics request refused");
                    }
                    let status = StatusCode::from_u16(e.status())
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                    return text(status, e.body());
                }
            }
        }
        self.route(&req)
    }

    fn route<B>(&self, req: &Request<B>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        }
        let path = req.uri().path();
        let verbose = req.uri().query().is_some_and(|q| {
            q.split('&')
                .any(|p| p == "verbose" || p.starts_with("verbose="))
        });
        match (self, path) {
            (Routes::Metrics { pipeline: true, .. }, path)
                if path.starts_with("/debug/pipeline") =>
            {
                let accept_language = req
                    .headers()
                    .get(hyper::header::ACCEPT_LANGUAGE)
                    .and_then(|v| v.to_str().ok());
                crate::pipeline_view::handle(path, req.uri().query(), accept_language)
                    .unwrap_or_else(|| text(StatusCode::NOT_FOUND, "404 page not found\n".into()))
            }
            (Routes::Metrics { registry, .. }, "/metrics") => match registry.encode() {
                Ok(body) => {
                    let mut response = text(StatusCode::OK, body);
                    response.headers_mut().insert(
                        CONTENT_TYPE,
                        HeaderValue::from_static(registry::CONTENT_TYPE),
                    );
                    response
                }
                Err(e) => {
                    tracing::error!(error = %e, "encoding metrics failed");
                    text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n"))
                }
            },
            (Routes::Health(health), "/healthz" | "/healthz/" | "/healthz/ping") => {
                probe(health.healthz(verbose))
            }
            (Routes::Health(health), "/readyz" | "/readyz/") => probe(health.readyz(None, verbose)),
            (Routes::Health(health), path) if path.starts_with("/readyz/") => {
                probe(health.readyz(Some(&path["/readyz/".len()..]), verbose))
            }
            _ => text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
        }
    }
}

fn probe(answer: crate::health::ProbeResponse) -> Response<Full<Bytes>> {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    text(status, answer.body)
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response.headers_mut().insert(
        "X-Content-Type-Options",
        HeaderValue::from_static("nosniff"),
    );
    response
}
