//! The HTTP side of one admission or conversion request (controller-runtime's
//! `Webhook.ServeHTTP` plus its mux and instrumentation): route, check, read, decode,
//! handle, answer. A conversion path answers the same way, with a `ConversionReview`
//! whose `result` says why instead of an `AdmissionReview` ([`crate::conversion`]).
//!
//! | request | answer |
//! |---|---|
//! | path not registered | `404`, plain text, not counted in the metrics |
//! | not `POST` | `405` with `Allow: POST` |
//! | `Content-Type` not `application/json` (parameters such as `charset` allowed) | `415` |
//! | body over the limit ([`DEFAULT_MAX_REQUEST_BYTES`](crate::DEFAULT_MAX_REQUEST_BYTES), 7 MiB) | `413` |
//! | body not arrived by the request deadline ([`ConnectionLimits::request_read_timeout`](serving::limits::ConnectionLimits::request_read_timeout), 30 s) | `408`, then the connection is closed |
//! | empty, not JSON, not an `admission.k8s.io/v1` `AdmissionReview`, no `request` | `400` |
//! | an admission request | `200` and the `AdmissionReview` response, allowed or not |
//!
//! The 4xx answers to bad bodies carry an `AdmissionReview` whose response says why
//! (`allowed: false`, `status.code` and `status.message`), as controller-runtime writes
//! them. controller-runtime sends that body with HTTP **200**; we send it with the
//! matching 4xx status. Only a broken or hostile client ever gets one (the API server
//! always sends well-formed reviews), and for those a real status is what shows up in
//! `controller_runtime_webhook_requests_total{code}`, proxies and client logs. A
//! *refused admission* is still a 200, as the API server requires.
//!
//! Every admission is logged at INFO with its uid, kind, operation, namespace/name and
//! the decision (the uid is the one in the API server's audit log); rejected requests at
//! WARN.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Body;
use hyper::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request as HttpRequest, Response, StatusCode};
use kube::core::admission::AdmissionResponse;
use kube::core::conversion::ConversionResponse;
use serde::Serialize;

use crate::conversion::{self, Conversion};
use crate::handler::Handler;
use crate::metrics::WebhookMetrics;
use crate::request::{Request, errored, into_review};

/// What answers a path: an admission handler or a conversion.
#[derive(Clone)]
pub(crate) enum Route {
    /// An `AdmissionReview` handler.
    Admission(Arc<dyn Handler>),
    /// A `ConversionReview` handler.
    Conversion(Arc<dyn Conversion>),
}

/// The registered handlers and how requests to them are read.
pub(crate) struct Routes {
    pub(crate) handlers: HashMap<String, Route>,
    pub(crate) max_request_bytes: usize,
    pub(crate) metrics: Option<WebhookMetrics>,
}

/// A request refused before its review was decoded: the HTTP status and why.
type Refusal = (StatusCode, String);

impl Routes {
    /// Answers one HTTP request.
    pub(crate) async fn serve<B>(&self, request: HttpRequest<B>) -> Response<Full<Bytes>>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let Some((path, route)) = self.handlers.get_key_value(request.uri().path()) else {
            tracing::debug!(path = request.uri().path(), "no webhook at this path");
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        let timer = self.metrics.as_ref().map(|m| m.start(path));
        let response = match route {
            Route::Admission(handler) => self.admit(path, handler.as_ref(), request).await,
            Route::Conversion(conversion) => self.convert(path, conversion.as_ref(), request).await,
        };
        if let Some(timer) = timer {
            timer.finish(response.status().as_u16());
        }
        response
    }

    /// The checks every review request passes (method, content type, size, arrival
    /// in time), then its body.
    async fn read_body<B>(&self, request: HttpRequest<B>) -> Result<Bytes, Refusal>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        if request.method() != Method::POST {
            return Err((StatusCode::METHOD_NOT_ALLOWED, "only POST".to_string()));
        }
        let content_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !is_json(content_type) {
            let message = format!("contentType={content_type}, expected application/json");
            return Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, message));
        }
        let too_large = || {
            let message = format!(
                "request entity is too large; limit is {} bytes",
                self.max_request_bytes
            );
            (StatusCode::PAYLOAD_TOO_LARGE, message)
        };
        let declared = request
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_request_bytes as u64) {
            return Err(too_large());
        }
        match Limited::new(request.into_body(), self.max_request_bytes)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
            // A slow (or stalled) client: the API server has given up on this call.
            Err(e) if serving::limits::is_body_timeout(e.as_ref()) => {
                Err((StatusCode::REQUEST_TIMEOUT, e.to_string()))
            }
            Err(e) => {
                let message = format!("unable to read the body from the incoming request: {e}");
                Err((StatusCode::BAD_REQUEST, message))
            }
        }
    }

    async fn admit<B>(
        &self,
        path: &str,
        handler: &dyn Handler,
        request: HttpRequest<B>,
    ) -> Response<Full<Bytes>>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let body = match self.read_body(request).await {
            Ok(body) => body,
            Err((status, _)) if status == StatusCode::METHOD_NOT_ALLOWED => {
                return method_not_allowed(path);
            }
            Err((status, message)) => return rejected(path, status, message),
        };
        let review = match Request::from_review_slice(&body) {
            Ok(review) => review,
            Err(e) => return rejected(path, StatusCode::BAD_REQUEST, e.to_string()),
        };

        let mut response = match std::panic::catch_unwind(AssertUnwindSafe(|| {
            handler.handle(&review)
        })) {
            Ok(response) => response,
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(webhook = path, uid = review.uid(), panic = %message, "webhook handler panicked");
                if let Some(metrics) = &self.metrics {
                    metrics.panicked();
                }
                review.errored(500, format!("panic: {message} [recovered]"))
            }
        };
        response.uid = review.uid().to_string();
        log_decision(path, &review, &response);
        if !response.allowed
            && let Some(metrics) = &self.metrics
        {
            metrics.denied(path, response.result.code);
        }
        json(StatusCode::OK, &into_review(response))
    }

    /// A `ConversionReview` (see [`conversion`](crate::conversion)): the same checks as
    /// an admission request, then [`review::answer`](crate::conversion::review::answer).
    async fn convert<B>(
        &self,
        path: &str,
        conversion: &dyn Conversion,
        request: HttpRequest<B>,
    ) -> Response<Full<Bytes>>
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn StdError + Send + Sync>>,
    {
        let body = match self.read_body(request).await {
            Ok(body) => body,
            Err((status, _)) if status == StatusCode::METHOD_NOT_ALLOWED => {
                return method_not_allowed(path);
            }
            Err((status, message)) => {
                tracing::warn!(webhook = path, status = status.as_u16(), error = %message, "rejected a request");
                let failure = kube::core::Status::failure(&message, "").with_code(status.as_u16());
                return json(status, &ConversionResponse::invalid(failure).into_review());
            }
        };
        let (status, review) = conversion::review::answer(conversion, &body);
        if let Some(response) = &review.response {
            if response.result.is_success() {
                tracing::debug!(webhook = path, uid = %response.uid, objects = response.converted_objects.len(), "converted");
            } else {
                tracing::warn!(webhook = path, uid = %response.uid, status, error = %response.result.message, "conversion failed");
            }
        }
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        json(status, &review)
    }
}

fn method_not_allowed(path: &str) -> Response<Full<Bytes>> {
    tracing::warn!(webhook = path, "rejected: only POST");
    let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "only POST\n");
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `application/json`, with or without parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

fn log_decision(path: &str, review: &Request, response: &AdmissionResponse) {
    let namespace = review.namespace().unwrap_or("");
    let warnings = response.warnings.as_ref().map_or(0, Vec::len);
    if response.allowed {
        tracing::info!(
            webhook = path,
            uid = review.uid(),
            kind = %review.kind_string(),
            operation = review.operation_str(),
            namespace,
            name = review.name(),
            allowed = true,
            patched = response.patch.is_some(),
            warnings,
            "admission request allowed"
        );
    } else {
        tracing::info!(
            webhook = path,
            uid = review.uid(),
            kind = %review.kind_string(),
            operation = review.operation_str(),
            namespace,
            name = review.name(),
            allowed = false,
            code = response.result.code,
            reason = %response.result.reason,
            message = %response.result.message,
            warnings,
            "admission request denied"
        );
    }
}

/// A request that is not an admission request: an `AdmissionReview` saying why, with
/// `status` as the HTTP status.
fn rejected(path: &str, status: StatusCode, message: String) -> Response<Full<Bytes>> {
    tracing::warn!(webhook = path, status = status.as_u16(), error = %message, "rejected a request");
    json(status, &into_review(errored(status.as_u16(), message)))
}

fn json(status: StatusCode, review: &impl Serialize) -> Response<Full<Bytes>> {
    match serde_json::to_vec(review) {
        Ok(body) => {
            let mut http = Response::new(Full::new(Bytes::from(body)));
            *http.status_mut() = status;
            http.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            http
        }
        Err(e) => {
            tracing::error!(error = %e, "unable to encode the response");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "unable to encode the response\n",
            )
        }
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
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

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("Application/JSON"));
        assert!(!is_json("application/yaml"));
        assert!(!is_json("application/jsonx"));
        assert!(!is_json(""));
    }
}
