//! Response bodies: the proxy's own answers, and a body that hands its whole content to
//! a callback once it has been sent.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http::{Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

/// Why a body could not be read (the API server's connection failed mid-body).
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// A response body the proxy sends: the API server's (forwarded frame by frame), the
/// proxy's own, or either wrapped by an [`Interceptor`](crate::Interceptor).
pub type ProxyBody = UnsyncBoxBody<Bytes, BodyError>;

/// A body of these bytes.
pub fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The `reason` of a Kubernetes `Status` with this code, as the API server names it.
fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "BadGateway",
    }
}

/// A Kubernetes `Status` response (`application/json`) with `code` and `message`, as
/// the API server answers a failure; 429 and 503 carry `Retry-After: 1`.
pub fn status_response(code: u16, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason(code), "code": code,
    });
    let mut response = Response::new(full(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    if code == 429 || code == 503 {
        headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}

/// `body`, forwarded frame by frame as it is, and `done` called with all of its data
/// once the connection has taken its last frame (when it drops the body: the frames
/// are written or queued to be). Not called if the body fails or the client goes away
/// first. For answers the proxy must read whole (a write's object, a list's
/// resourceVersion) without holding them back.
pub fn on_complete<F>(body: ProxyBody, done: F) -> ProxyBody
where
    F: FnOnce(Bytes) + Send + 'static,
{
    OnComplete {
        // An empty body of known length may never be polled.
        complete: body.is_end_stream(),
        body,
        seen: BytesMut::new(),
        done: Some(Box::new(done)),
    }
    .boxed_unsync()
}

type Done = Box<dyn FnOnce(Bytes) + Send>;

struct OnComplete {
    body: ProxyBody,
    seen: BytesMut,
    complete: bool,
    done: Option<Done>,
}

impl Drop for OnComplete {
    fn drop(&mut self) {
        if self.complete
            && let Some(done) = self.done.take()
        {
            done(std::mem::take(&mut self.seen).freeze());
        }
    }
}

impl Body for OnComplete {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
        match &frame {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.seen.extend_from_slice(data);
                }
                // A body of known length ends with its last data frame: the connection
                // does not poll again once `is_end_stream` says so.
                this.complete = this.body.is_end_stream();
            }
            None => this.complete = true,
            Some(Err(_)) => this.done = None,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
