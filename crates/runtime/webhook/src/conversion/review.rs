//! One `ConversionReview`, answered: the part of the conversion webhook that is
//! not HTTP, so it is tested with bytes in and a review out.
//!
//! ```
//! use serde_json::{json, Value};
//!
//! // A conversion that only renames the version (enough to show the review).
//! let rename = |object: &Value, desired: &str| -> Result<Value, String> {
//!     let mut object = object.clone();
//!     object["apiVersion"] = desired.into();
//!     Ok(object)
//! };
//! let body = json!({
//!     "apiVersion": "apiextensions.k8s.io/v1",
//!     "kind": "ConversionReview",
//!     "request": {
//!         "uid": "705ab4f5",
//!         "desiredAPIVersion": "example.com/v2",
//!         "objects": [{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}],
//!     },
//! });
//! let (status, review) = webhook::conversion::review::answer(&rename, &serde_json::to_vec(&body).unwrap());
//! assert_eq!(status, 200);
//! let response = review.response.unwrap();
//! assert_eq!(response.uid, "705ab4f5");
//! assert!(response.result.is_success());
//! assert_eq!(response.converted_objects[0]["apiVersion"], "example.com/v2");
//!
//! let (status, review) = webhook::conversion::review::answer(&rename, b"{not json");
//! assert_eq!(status, 400);
//! assert!(review.response.unwrap().result.message.starts_with("unable to decode the ConversionReview"));
//! ```

use std::panic::AssertUnwindSafe;

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use super::Conversion;

/// The only review version served: the API server's `conversionReviewVersions`
/// must list it (the generated CRDs say `[v1]`).
pub const REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The `kind` of a review.
pub const REVIEW_KIND: &str = "ConversionReview";

/// The HTTP status and the review answering `body`: `200` with every object
/// converted (`result` Success), `200` with `result` Failure and no objects when
/// one of them cannot be converted (the message says which and why), `400` with a
/// Failure result when `body` is not a `ConversionReview` v1 with a request.
/// Never panics: a panicking `conversion` is a Failure too.
pub fn answer(conversion: &dyn Conversion, body: &[u8]) -> (u16, ConversionReview) {
    let request = match parse(body) {
        Ok(request) => request,
        Err(message) => {
            let status = Status::failure(&message, "BadRequest").with_code(400);
            return (400, ConversionResponse::invalid(status).into_review());
        }
    };
    let desired = request.desired_api_version.clone();
    let converted = std::panic::catch_unwind(AssertUnwindSafe(|| {
        convert_all(conversion, &request.objects, &desired)
    }))
    .unwrap_or_else(|panic| Err(format!("panic: {} [recovered]", panic_message(&*panic))));
    let response = ConversionResponse::for_request(request);
    let response = match converted {
        Ok(objects) => response.success(objects),
        Err(message) => response.failure(Status::failure(&message, "")),
    };
    (200, response.into_review())
}

/// The request of a `ConversionReview` v1, or why `body` is none.
fn parse(body: &[u8]) -> Result<ConversionRequest, String> {
    let review: ConversionReview = serde_json::from_slice(body)
        .map_err(|e| format!("unable to decode the ConversionReview: {e}"))?;
    if review.types.api_version != REVIEW_API_VERSION || review.types.kind != REVIEW_KIND {
        return Err(format!(
            "expected a {REVIEW_API_VERSION} {REVIEW_KIND}, got apiVersion {:?} kind {:?}",
            review.types.api_version, review.types.kind
        ));
    }
    let request = ConversionRequest::from_review(review)
        .map_err(|_| "the ConversionReview has no request".to_string())?;
    if request.desired_api_version.is_empty() {
        return Err("the ConversionReview's request has no desiredAPIVersion".to_string());
    }
    Ok(request)
}

/// Every object converted, in order; the first failure names its object.
fn convert_all(
    conversion: &dyn Conversion,
    objects: &[Value],
    desired: &str,
) -> Result<Vec<Value>, String> {
    objects
        .iter()
        .enumerate()
        .map(|(i, object)| {
            let converted = conversion
                .convert(object, desired)
                .map_err(|e| format!("converting {} to {desired}: {e}", describe(i, object)))?;
            let api_version = converted.get("apiVersion").and_then(Value::as_str);
            if api_version != Some(desired) {
                return Err(format!(
                    "converting {} to {desired}: the conversion returned apiVersion {api_version:?}",
                    describe(i, object)
                ));
            }
            Ok(converted)
        })
        .collect()
}

/// `object 2 (cloudnative.tw/v1alpha1 VirtualMachine ns/web)`, from what the object has.
fn describe(index: usize, object: &Value) -> String {
    let field = |path: &[&str]| {
        path.iter()
            .try_fold(object, |v, key| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let namespace = field(&["metadata", "namespace"]);
    let name = field(&["metadata", "name"]);
    let key = if namespace.is_empty() {
        name
    } else {
        format!("{namespace}/{name}")
    };
    format!(
        "object {index} ({} {} {key})",
        field(&["apiVersion"]),
        field(&["kind"])
    )
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
