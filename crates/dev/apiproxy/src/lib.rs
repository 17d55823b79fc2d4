//! An HTTPS proxy between controllers and kube-apiserver, for the test tools: the chaos
//! soak (`crates/tools/chaos`) injects its faults through it, sieve
//! (`crates/tools/sieve`) records what a controller writes and sees and perturbs it. A
//! dev/test crate: only tools and tests depend on it.
//!
//! The proxy terminates TLS (HTTP/2 and HTTP/1.1 by ALPN, like kube-apiserver) with a
//! serving certificate the caller gives it (the cluster CA's, so the controllers'
//! kubeconfig differs from the admin one only in its `server:`, see
//! [`kubeconfig_for`]). Every request is forwarded to the API server with the
//! [`Upstream`]'s TLS settings and credentials (the admin's) over one pooled (HTTP/2)
//! client. Watches and other streaming bodies are forwarded frame by frame.
//!
//! What a user does with the traffic goes through an [`Interceptor`]:
//!
//! - [`Interceptor::accept`]: refuse a new connection (close it at once);
//! - [`Interceptor::on_request`]: see a request, rewrite its URI, query or headers
//!   before it is forwarded, wait, or answer it itself ([`status_response`]);
//! - [`Interceptor::on_response`]: see the API server's response head and replace its
//!   body: observe the whole body once it has been sent ([`body::on_complete`]),
//!   transform a watch stream event by event ([`watch::transform`]), or wrap it in a
//!   body of its own (delays, stalls).
//!
//! [`Proxy::cut_all`] closes every open client connection at once.
//!
//! One proxy may listen on several ports ([`Proxy::start_listeners`]): every request
//! carries the [`Listener`] it came in on, so several clients given one port each (the
//! replicas of a shard group, say) are told apart.

#![forbid(unsafe_code)]

pub mod body;
mod kubeconfig;
pub mod path;
mod server;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod watch;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::{Method, Response, Uri, request, response};
use tokio_util::sync::CancellationToken;

pub use body::{ProxyBody, status_response};
pub use kubeconfig::kubeconfig_for;

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The serving certificate or the upstream TLS settings could not be used.
    #[error("proxy TLS: {0}")]
    Tls(String),
    /// Binding the listening socket failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The listener a request came in on (its index among [`Proxy::addrs`]), in the
/// request's extensions from before [`Interceptor::on_request`] on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Listener(pub usize);

/// What a request was, as forwarded: handed to [`Interceptor::on_response`].
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The method.
    pub method: Method,
    /// The path and query as forwarded (after [`Interceptor::on_request`] rewrote them).
    pub uri: Uri,
    /// The request's extensions as [`Interceptor::on_request`] left them: what it
    /// noted about the request for [`Interceptor::on_response`] (e.g. when it was seen).
    pub extensions: http::Extensions,
}

/// What a proxy does with the traffic, besides forwarding it. Every method has a
/// default that changes nothing.
pub trait Interceptor: Send + Sync + 'static {
    /// A new client connection: `false` closes it at once (before the TLS handshake).
    fn accept(&self) -> bool {
        true
    }

    /// A request from a client, before it is forwarded. `request.uri` is the path and
    /// query the client sent (no scheme or authority); rewrite it, or the headers, to
    /// change what is forwarded. Answering `Some(response)` sends that to the client
    /// and forwards nothing. The proxy awaits the future: waiting here holds the
    /// request.
    fn on_request(
        &self,
        request: &mut request::Parts,
    ) -> impl Future<Output = Option<Response<ProxyBody>>> + Send {
        let _ = request;
        std::future::ready(None)
    }

    /// The API server's response to `exchange` (hop-by-hop headers removed): returns
    /// the body to send to the client in place of `body`. Not called for answers of
    /// [`on_request`](Self::on_request) or of the proxy itself (a 502 when the API
    /// server cannot be reached).
    fn on_response(
        &self,
        exchange: &Exchange,
        response: &mut response::Parts,
        body: ProxyBody,
    ) -> ProxyBody {
        let _ = (exchange, response);
        body
    }
}

/// The [`Interceptor`] that only forwards.
#[derive(Debug, Default, Clone, Copy)]
pub struct Forward;

impl Interceptor for Forward {}

/// Where the proxy forwards to, and how it authenticates there.
#[derive(Clone)]
pub struct Upstream {
    url: String,
    tls: rustls::ClientConfig,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream").field("url", &self.url).finish()
    }
}

impl Upstream {
    /// `url` (`https://host:port`) with these TLS settings (the trusted CA, and the
    /// client certificate that authenticates the proxy).
    pub fn new(url: impl Into<String>, tls: rustls::ClientConfig) -> Self {
        Self {
            url: url.into().trim_end_matches('/').to_string(),
            tls,
        }
    }

    /// The server and the TLS settings of a client configuration (the admin
    /// kubeconfig's: its CA and client certificate).
    pub fn from_kube_config(config: &kube::Config) -> Result<Self, Error> {
        use kube::client::ConfigExt;
        let tls = config
            .rustls_client_config()
            .map_err(|e| Error::Tls(e.to_string()))?;
        Ok(Self::new(config.cluster_url.to_string(), tls))
    }

    /// The server's URL, without a trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Counters of what the proxy did.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: AtomicU64,
    pub(crate) connections_cut: AtomicU64,
    pub(crate) connections_refused: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) upstream_errors: AtomicU64,
}

/// A copy of the proxy's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// TLS connections accepted and served.
    pub connections: u64,
    /// Connections closed by [`Proxy::cut_all`].
    pub connections_cut: u64,
    /// Connections closed at once because [`Interceptor::accept`] refused them.
    pub connections_refused: u64,
    /// Requests received.
    pub requests: u64,
    /// Requests the API server could not be reached for (answered 502).
    pub upstream_errors: u64,
}

/// The running proxy; stopped (every connection closed) on drop.
pub struct Proxy<I: Interceptor> {
    shared: Arc<server::Shared<I>>,
    addrs: Vec<SocketAddr>,
    stop: CancellationToken,
}

impl<I: Interceptor> std::fmt::Debug for Proxy<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addrs", &self.addrs)
            .field("upstream", &self.shared.upstream)
            .finish()
    }
}

impl<I: Interceptor> Proxy<I> {
    /// Listens on 127.0.0.1 (a free port) with the PEM `cert_chain` and `key`, and
    /// forwards to `upstream` through `interceptor`.
    pub async fn start(
        cert_chain: &[u8],
        key: &[u8],
        upstream: Upstream,
        interceptor: I,
    ) -> Result<Self, Error> {
        Self::start_listeners(cert_chain, key, upstream, interceptor, 1).await
    }

    /// [`start`](Self::start) with `listeners` ports (at least one), each request
    /// tagged with the [`Listener`] it came in on.
    pub async fn start_listeners(
        cert_chain: &[u8],
        key: &[u8],
        upstream: Upstream,
        interceptor: I,
        listeners: usize,
    ) -> Result<Self, Error> {
        let acceptor = server::acceptor(cert_chain, key)?;
        let shared = Arc::new(server::Shared::new(upstream, Arc::new(interceptor)));
        let stop = CancellationToken::new();
        let mut addrs = Vec::new();
        for index in 0..listeners.max(1) {
            let listener =
                tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(|source| Error::Io {
                        action: "binding the proxy",
                        source,
                    })?;
            addrs.push(listener.local_addr().map_err(|source| Error::Io {
                action: "the proxy's address",
                source,
            })?);
            tokio::spawn(server::accept_loop(
                listener,
                Listener(index),
                acceptor.clone(),
                Arc::clone(&shared),
                stop.clone(),
            ));
        }
        Ok(Self {
            shared,
            addrs,
            stop,
        })
    }

    /// Where the proxy listens (its first listener).
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Every listener's address, in [`Listener`] order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The interceptor, shared with the connections.
    pub fn interceptor(&self) -> &Arc<I> {
        &self.shared.interceptor
    }

    /// Closes every open client connection now (each watch, each request in flight);
    /// returns how many were open.
    pub fn cut_all(&self) -> usize {
        let open = self.shared.cut.receiver_count();
        self.shared.cut.send_modify(|generation| *generation += 1);
        open
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.counters;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            connections: get(&c.connections),
            connections_cut: get(&c.connections_cut),
            connections_refused: get(&c.connections_refused),
            requests: get(&c.requests),
            upstream_errors: get(&c.upstream_errors),
        }
    }
}

impl<I: Interceptor> Drop for Proxy<I> {
    fn drop(&mut self) {
        self.stop.cancel();
        self.cut_all();
    }
}

#[cfg(test)]
mod tests;
