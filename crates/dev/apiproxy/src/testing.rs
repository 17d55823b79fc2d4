//! Test support (the `testing` feature): a throw-away PKI, a scripted fake API server
//! over HTTPS to put behind a [`Proxy`](crate::Proxy), and an HTTPS client of the
//! proxy. No cluster needed. Failures to set these up panic: they are for tests.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::Upstream;

/// A CA and a serving certificate for `127.0.0.1` it signed (testenv's webhook
/// certificates), served by both the fake API server and the proxy.
#[derive(Clone)]
pub struct Pki {
    cert: Vec<u8>,
    key: Vec<u8>,
    ca: Vec<u8>,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

impl Pki {
    /// A fresh CA and serving certificate.
    pub fn new() -> Self {
        let certs = testenv::webhook::WebhookCerts::temporary().expect("test certificates");
        let read = |path: std::path::PathBuf| std::fs::read(path).expect("a certificate file");
        Self {
            cert: read(certs.cert_path()),
            key: read(certs.key_path()),
            ca: certs.ca_pem().into_bytes(),
        }
    }

    /// The serving certificate (PEM).
    pub fn cert(&self) -> &[u8] {
        &self.cert
    }

    /// Its key (PEM).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// TLS client settings that trust the CA (the connectors offer HTTP/2 and
    /// HTTP/1.1 by ALPN themselves).
    pub fn client_tls(&self) -> rustls::ClientConfig {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&self.ca) {
            roots.add(cert.expect("the CA")).expect("the CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth()
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

/// A request the fake API server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The method.
    pub method: Method,
    /// The path and query.
    pub uri: String,
    /// The headers.
    pub headers: HeaderMap,
}

/// The fake API server's answer to one request.
#[derive(Debug)]
pub enum Reply {
    /// This status and JSON body, with a `Content-Length`.
    Json(u16, String),
    /// A 200 JSON stream: each chunk received is sent as one body frame, and the body
    /// ends when the sender is dropped.
    Stream(mpsc::UnboundedReceiver<Bytes>),
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A scripted API server over HTTPS on 127.0.0.1; stopped on drop.
pub struct FakeApiServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeApiServer {
    /// Serves `pki`'s certificate and answers every request with `handler`'s reply.
    pub async fn start(
        pki: &Pki,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let acceptor = crate::server::acceptor(pki.cert(), pki.key()).expect("TLS settings");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let handler: Arc<Handler> = Arc::new(handler);
        let (log, cancel) = (Arc::clone(&seen), stop.clone());
        tokio::spawn(async move {
            loop {
                let tcp = tokio::select! {
                    _ = cancel.cancelled() => return,
                    accepted = listener.accept() => match accepted {
                        Ok((tcp, _)) => tcp,
                        Err(_) => continue,
                    },
                };
                let (acceptor, handler, log) =
                    (acceptor.clone(), Arc::clone(&handler), Arc::clone(&log));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: Request<Incoming>| {
                        let seen = Seen {
                            method: req.method().clone(),
                            uri: req
                                .uri()
                                .path_and_query()
                                .map_or("/", |pq| pq.as_str())
                                .to_string(),
                            headers: req.headers().clone(),
                        };
                        log.lock().expect("the log").push(seen.clone());
                        let reply = handler(&seen);
                        async move { Ok::<_, Infallible>(respond(reply)) }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { addr, seen, stop }
    }

    /// A server that answers its first request with a stream (a watch) of what is sent
    /// on the returned sender, one body frame a send; it ends when the sender is dropped.
    /// Any later request fails.
    pub async fn one_stream(pki: &Pki) -> (Self, mpsc::UnboundedSender<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let rx = Mutex::new(Some(rx));
        let server = Self::start(pki, move |_| {
            Reply::Stream(rx.lock().expect("the stream").take().expect("one request"))
        })
        .await;
        (server, tx)
    }

    /// The [`Upstream`] of a proxy in front of this server.
    pub fn upstream(&self, pki: &Pki) -> Upstream {
        Upstream::new(format!("https://{}", self.addr), pki.client_tls())
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("the log").clone()
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn respond(reply: Reply) -> Response<Stream> {
    let (status, body) = match reply {
        Reply::Json(status, text) => (status, Stream::Full(Full::new(Bytes::from(text)))),
        Reply::Stream(rx) => (200, Stream::Channel(rx)),
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).expect("a status code");
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// The fake server's response body.
enum Stream {
    Full(Full<Bytes>),
    Channel(mpsc::UnboundedReceiver<Bytes>),
}

impl Body for Stream {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Stream::Full(full) => Pin::new(full).poll_frame(cx),
            Stream::Channel(rx) => rx
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok(Frame::data(c)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Stream::Full(full) => full.is_end_stream(),
            Stream::Channel(_) => false,
        }
    }
}

/// An HTTPS client of a proxy (HTTP/2 by ALPN), as a controller would be.
pub struct TestClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    base: String,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("base", &self.base)
            .finish()
    }
}

impl TestClient {
    /// A client of `https://addr` trusting `pki`'s CA.
    pub fn new(pki: &Pki, addr: SocketAddr) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(pki.client_tls())
            .https_only()
            .enable_all_versions()
            .wrap_connector(http);
        Self {
            client: Client::builder(TokioExecutor::new()).build(https),
            base: format!("https://{addr}"),
        }
    }

    /// Sends `method path` with `headers` and `body`; the response, its body unread.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Response<Incoming> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a request");
        self.client.request(request).await.expect("a response")
    }

    /// Sends `method path` with `body`; the status and the whole body.
    pub async fn call(&self, method: Method, path: &str, body: &str) -> (u16, String) {
        let response = self.send(method, path, &[], body).await;
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// The next data frame of `body` (`None` at its end), within 5 s.
pub async fn next_data(body: &mut Incoming) -> Option<Bytes> {
    let next = async {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("a body frame").into_data() {
                return Some(data);
            }
        }
        None
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), next)
        .await
        .expect("a frame within 5 s")
}
