//! The binaries' API client: kube's request stack over HTTP/2 when the server offers
//! it, as client-go's is.
//!
//! `kube::Client::try_from(config)` speaks HTTP/1.1 only (its TLS connector offers
//! just `http/1.1` in ALPN). That costs a controller in two ways client-go does not
//! pay:
//!
//! * **One connection per concurrent request.** Every informer's watch holds a
//!   connection for as long as it runs; client-go multiplexes all of them, and every
//!   list and write, as streams of one HTTP/2 connection per API server.
//! * **A hand-off per event.** hyper's HTTP/1 connection task passes a watch body to
//!   its reader one chunk at a time and waits for the reader to ask for the next; the
//!   API server flushes a chunk per event, so on a multi-threaded runtime each event
//!   crosses between two worker threads and back. HTTP/2 buffers a stream's frames up
//!   to its flow-control window and the reader drains them in bursts. Measured on a
//!   streaming list of 20k ConfigMaps (docs/benchmarks.md): about a third less client
//!   CPU, about a quarter less API server CPU, and a fifth of the context switches.
//!
//! Everything else is kube's: its TLS settings (`rustls_client_config`, the optional
//! TLS server name), the base URI, authentication (tokens, client certificates, exec
//! plugins, with refresh), extra headers and the connect/read/write timeouts. Dead
//! connections are found with HTTP/2 pings, as client-go's transport does (a ping after
//! 30 s without a frame, the connection dropped if no answer comes within 15 s).
//! `--disable-http2` (or client-go's `DISABLE_HTTP2` variable) and a kubeconfig with
//! a proxy fall back to kube's own HTTP/1.1 client.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{ClientBuilder, ConfigExt};
use tower::{BoxError, ServiceBuilder};

/// How long a connection may stay silent before it is pinged: client-go's
/// `ReadIdleTimeout` for HTTP/2 (k8s.io/apimachinery/pkg/util/net).
pub const PING_AFTER: Duration = Duration::from_secs(30);

/// How long a ping may go unanswered before the connection is dropped: client-go's
/// `PingTimeout`.
pub const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// A [`ClientBuilder`] for `config` whose connections speak HTTP/2 when the server
/// agrees (ALPN), with kube's authentication, headers and timeouts. See the module
/// docs.
pub fn http2_client_builder(
    config: &kube::Config,
) -> Result<ClientBuilder<impl HttpService>, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    // An HTTP/2 request is several frames (HEADERS, DATA), often written separately;
    // with Nagle's algorithm on, the second waits for the server's delayed ACK of the
    // first (up to 40 ms on Linux). Go sets TCP_NODELAY on every connection.
    http.set_nodelay(true);
    let tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    let tls = match &config.tls_server_name {
        Some(name) => {
            let name = name
                .clone()
                .try_into()
                .map_err(|e| kube::Error::Service(Box::new(e)))?;
            tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => tls,
    };
    let mut connector =
        hyper_timeout::TimeoutConnector::new(tls.enable_all_versions().wrap_connector(http));
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let client: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_keep_alive_interval(PING_AFTER)
            .http2_keep_alive_timeout(PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(client);
    Ok(ClientBuilder::new(
        service,
        config.default_namespace.clone(),
    ))
}

/// The request stack [`http2_client_builder`] returns, named so callers can add
/// layers to it.
pub trait HttpService:
    tower::Service<
        http::Request<kube::client::Body>,
        Response = http::Response<hyper::body::Incoming>,
        Error = BoxError,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> HttpService for S where
    S: tower::Service<
            http::Request<kube::client::Body>,
            Response = http::Response<hyper::body::Incoming>,
            Error = BoxError,
            Future: Send,
        > + Clone
        + Send
        + Sync
        + 'static
{
}
