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
//! A client that opens a connection and sends nothing is dropped after
//! [`HEADER_READ_TIMEOUT`]; a failing `accept` (out of file descriptors) is retried
//! after a short pause rather than in a hot loop.

use std::convert::Infallible;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::bind_address::BindAddress;
use crate::error::{Error, Result};
use crate::health::Health;
use crate::registry::{self, Registry};

/// How long [`Server::serve`] waits for requests in flight after cancellation.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a connection may take to send a request's headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What a server answers.
#[derive(Clone)]
enum Routes {
    /// `/metrics`, and `/debug/pipeline` when the flag is set.
    Metrics(Registry, bool),
    Health(Health),
}

/// A bound server, ready to [`serve`](Self::serve).
pub struct Server {
    what: &'static str,
    listener: TcpListener,
    local_addr: SocketAddr,
    routes: Routes,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("what", &self.what)
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

/// Binds the metrics server (`GET /metrics`) to `addr`; `None` when `addr` is
/// disabled.
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
    bind("metrics", addr, Routes::Metrics(registry, pipeline)).await
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
    }))
}

impl Server {
    /// The address actually bound (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Answers requests until `cancel` is cancelled, then shuts down gracefully (see the
    /// [module docs](self)).
    pub async fn serve(self, cancel: CancellationToken) {
        tracing::info!(server = self.what, address = %self.local_addr, "serving");
        let connections = TaskTracker::new();
        loop {
            let accepted = tokio::select! {
                _ = cancel.cancelled() => break,
                accepted = self.listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(server = self.what, error = %e, "accept failed");
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_millis(100)) => continue,
                    }
                }
            };
            let routes = self.routes.clone();
            let cancel = cancel.clone();
            connections.spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let routes = routes.clone();
                    async move { Ok::<_, Infallible>(routes.handle(&req)) }
                });
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT);
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                tokio::pin!(connection);
                let result = tokio::select! {
                    result = connection.as_mut() => result,
                    _ = cancel.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        connection.await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
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
        tracing::info!(server = self.what, "stopped");
    }
}

impl Routes {
    fn handle(&self, req: &Request<Incoming>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into());
        }
        let path = req.uri().path();
        let verbose = req.uri().query().is_some_and(|q| {
            q.split('&')
                .any(|p| p == "verbose" || p.starts_with("verbose="))
        });
        match (self, path) {
            (Routes::Metrics(_, true), path) if path.starts_with("/debug/pipeline") => {
                crate::pipeline_view::handle(path, req.uri().query())
                    .unwrap_or_else(|| text(StatusCode::NOT_FOUND, "404 page not found\n".into()))
            }
            (Routes::Metrics(registry, _), "/metrics") => match registry.encode() {
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
