//! Reading the API server's answer on either wire: the body of a success, and an error
//! `Status` in JSON or protobuf turned into `kube::Error::Api`, so a 409 is a 409 and a
//! 404 a 404 whatever the wire (the controllers branch on those codes).

use http_body_util::BodyExt;
use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};
use protowire::Reader;

use crate::Wire;

/// The body of a successful response; a non-2xx answer becomes `kube::Error::Api`
/// with the server's `Status` (or one made from a body that is not a `Status`, as a
/// proxy may send), as `kube::Api` reports it.
pub async fn check_status(
    response: http::Response<kube::client::Body>,
) -> Result<kube::client::Body, kube::Error> {
    let code = response.status();
    if !code.is_client_error() && !code.is_server_error() {
        return Ok(response.into_body());
    }
    let wire = Wire::of_response(response.headers());
    let body = response.into_body().collect().await?.to_bytes();
    let decoded = match wire {
        Wire::Protobuf => protobuf_status(&body),
        Wire::Json => serde_json::from_slice::<Status>(&body).ok(),
    };
    let status = decoded.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        Status::failure(text.trim(), "Failed to parse error data").with_code(code.as_u16())
    });
    Err(kube::Error::Api(status.boxed()))
}

/// A protobuf error body (`k8s\0` + `Status`) as kube's `Status`; `None` if it is not
/// one.
pub fn protobuf_status(body: &[u8]) -> Option<Status> {
    let unknown = protowire::envelope::decode(body).ok()?;
    if unknown.type_meta.kind != "Status" {
        return None;
    }
    let status = protowire::meta::status(Reader::new(unknown.raw)).ok()?;
    Some(kube_status(status))
}

/// A decoded protobuf `Status` (an error answer, a watch's ERROR event) as kube's,
/// with its causes (`details.causes`: what tells a 403 from a terminating namespace,
/// apimachinery's `HasStatusCause(err, NamespaceTerminatingCause)`, from any other
/// 403), so a classifier of `kube::Error::Api` answers the same on both wires.
pub fn kube_status(status: protowire::meta::Status) -> Status {
    let mut out = if status.status == "Success" {
        Status::success()
    } else {
        Status::failure(&status.message, &status.reason)
    };
    out.message = status.message;
    out.reason = status.reason;
    out.code = u16::try_from(status.code).unwrap_or(0);
    if !status.causes.is_empty() {
        out.details = Some(StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: status
                .causes
                .into_iter()
                .map(|cause| StatusCause {
                    reason: cause.reason,
                    message: cause.message,
                    field: cause.field,
                })
                .collect(),
            retry_after_seconds: 0,
        });
    }
    out
}

/// The `details.causes[].reason` the API server gives a create refused because the
/// namespace is terminating (core/v1's `NamespaceTerminatingCause`).
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Whether the API server answered with a Status carrying a cause of type `cause`
/// (apimachinery's `errors.HasStatusCause`). `false` for errors that are not an
/// answer (a connection refused, a timeout).
///
/// ```
/// use gentype::response::has_status_cause;
/// use kube::core::Status;
/// use kube::core::response::{StatusCause, StatusDetails};
///
/// let cause = StatusCause { reason: "FieldValueInvalid".into(), message: String::new(), field: "spec".into() };
/// let details = StatusDetails {
///     name: String::new(), group: String::new(), kind: String::new(), uid: String::new(),
///     causes: vec![cause], retry_after_seconds: 0,
/// };
/// let err = kube::Error::Api(Status::failure("bad", "Invalid").with_code(422).with_details(details).boxed());
/// assert!(has_status_cause(&err, "FieldValueInvalid"));
/// assert!(!has_status_cause(&err, "NamespaceTerminating"));
/// ```
pub fn has_status_cause(err: &kube::Error, cause: &str) -> bool {
    match err {
        kube::Error::Api(status) => status
            .details
            .as_ref()
            .is_some_and(|details| details.causes.iter().any(|c| c.reason == cause)),
        _ => false,
    }
}

/// Whether `err` is the API server refusing a create because the namespace is being
/// deleted: NamespaceLifecycle admission's 403 with the `NamespaceTerminating` cause
/// (controller's `expected` module says what the controllers do with it).
pub fn is_namespace_terminating(err: &kube::Error) -> bool {
    has_status_cause(err, NAMESPACE_TERMINATING_CAUSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_causes_of_a_protobuf_status_are_kept() {
        let status = kube_status(protowire::meta::Status {
            status: "Failure".into(),
            message: "forbidden".into(),
            reason: "Forbidden".into(),
            code: 403,
            causes: vec![protowire::meta::StatusCause {
                reason: "NamespaceTerminating".into(),
                message: "namespace ns is being terminated".into(),
                field: "metadata.namespace".into(),
            }],
        });
        assert_eq!(status.code, 403);
        let causes = status.details.expect("details").causes;
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].reason, "NamespaceTerminating");
        assert_eq!(causes[0].field, "metadata.namespace");

        let plain = kube_status(protowire::meta::Status {
            code: 404,
            ..Default::default()
        });
        assert!(plain.details.is_none());
    }
}
