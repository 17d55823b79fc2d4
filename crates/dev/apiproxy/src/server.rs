//! The proxy's connections: TLS termination, the accept loop, and forwarding each
//! request through the [`Interceptor`] to the API server.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{HeaderMap, Request, Response, Uri, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{
    Counters, Error, Exchange, Interceptor, Listener, ProxyBody, Upstream, status_response,
};

/// What every connection of one proxy shares.
pub(crate) struct Shared<I> {
    pub(crate) upstream: String,
    client: Client<HttpsConnector<HttpConnector>, Incoming>,
    pub(crate) interceptor: Arc<I>,
    /// Bumped by `cut_all`: every connection watching it closes.
    pub(crate) cut: watch::Sender<u64>,
    pub(crate) counters: Counters,
}

impl<I> Shared<I> {
    pub(crate) fn new(upstream: Upstream, interceptor: Arc<I>) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let mut tls = upstream.tls;
        // The connector sets the ALPN protocols (HTTP/2 and HTTP/1.1) itself.
        tls.alpn_protocols.clear();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_all_versions()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .build(https);
        Self {
            upstream: upstream.url,
            client,
            interceptor,
            cut: watch::channel(0).0,
            counters: Counters::default(),
        }
    }
}

/// A TLS acceptor for the PEM `cert_chain` and `key`, offering HTTP/2 and HTTP/1.1.
pub(crate) fn acceptor(cert_chain: &[u8], key: &[u8]) -> Result<tokio_rustls::TlsAcceptor, Error> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};

    let tls_err = |e: &dyn std::fmt::Display| Error::Tls(e.to_string());
    let chain = CertificateDer::pem_slice_iter(cert_chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_err(&e))?;
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| tls_err(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls_err(&e))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| tls_err(&e))?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(server)))
}

pub(crate) async fn accept_loop<I: Interceptor>(
    listener: TcpListener,
    tag: Listener,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared<I>>,
    stop: CancellationToken,
) {
    loop {
        let tcp = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (shared, acceptor) = (Arc::clone(&shared), acceptor.clone());
        tokio::spawn(async move {
            if !shared.interceptor.accept() {
                shared
                    .counters
                    .connections_refused
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut cut = shared.cut.subscribe();
            let _ = tcp.set_nodelay(true);
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            shared.counters.connections.fetch_add(1, Ordering::Relaxed);
            let service_shared = Arc::clone(&shared);
            let service = service_fn(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(tag);
                handle(Arc::clone(&service_shared), req)
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = conn => {}
                _ = cut.changed() => {
                    shared.counters.connections_cut.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

/// Headers that belong to one hop, never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

async fn handle<I: Interceptor>(
    shared: Arc<Shared<I>>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let (mut parts, body) = req.into_parts();
    if let Some(answer) = shared.interceptor.on_request(&mut parts).await {
        return Ok(answer);
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_string();
    let Ok(relative) = path.parse::<Uri>() else {
        return Ok(status_response(400, "apiproxy: bad request path"));
    };
    let Ok(uri) = format!("{}{path}", shared.upstream).parse::<Uri>() else {
        return Ok(status_response(400, "apiproxy: bad request path"));
    };
    let exchange = Exchange {
        method: parts.method.clone(),
        uri: relative,
        extensions: parts.extensions.clone(),
    };
    parts.uri = uri;
    // The pooled client picks HTTP/2 by ALPN whatever the client spoke to us.
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    match shared
        .client
        .request(Request::from_parts(parts, body))
        .await
    {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            let body = body.map_err(Into::into).boxed_unsync();
            let body = shared.interceptor.on_response(&exchange, &mut parts, body);
            Ok(Response::from_parts(parts, body))
        }
        Err(e) => {
            shared
                .counters
                .upstream_errors
                .fetch_add(1, Ordering::Relaxed);
            Ok(status_response(502, &format!("apiproxy: upstream: {e}")))
        }
    }
}
