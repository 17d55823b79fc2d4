//! The few `meta/v1` messages every answer can carry whatever its kind: `ListMeta` (the
//! top of a list: its resourceVersion, the continue token of a paged list, KEP-5866's
//! `shardInfo`) and `Status` (an error, or a watch's ERROR event). Field numbers from
//! apimachinery `pkg/apis/meta/v1/generated.proto` at v0.37.
//!
//! They are decoded into plain structs here (no Kubernetes types): the lister-watcher
//! only needs these few values to page, to resume a watch and to recognise a 410.

use crate::wire::{DecodeError, Reader, WireType};

/// `metav1.ListMeta`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListMeta {
    /// `resourceVersion = 2`: the list's, to watch from.
    pub resource_version: String,
    /// `continue = 3`: the token of the next page ("" on the last).
    pub continue_token: String,
    /// `remainingItemCount = 4`, when the server counted.
    pub remaining_item_count: Option<i64>,
    /// `shardInfo = 5` (`ShardInfo{selector = 1}`): the canonical shard selector the
    /// server applied (KEP-5866, 1.36+ with the ShardedListAndWatch gate).
    pub shard_selector: Option<String>,
}

/// `metav1.Status`: what an error (or a watch's ERROR event) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// `status = 2`: "Success" or "Failure".
    pub status: String,
    /// `message = 3`: for people.
    pub message: String,
    /// `reason = 4`: for programs ("Expired", "NotFound", "Conflict", ...).
    pub reason: String,
    /// `code = 6`: the HTTP status (410 for an expired resourceVersion).
    pub code: i32,
    /// `details = 5` -> `causes = 4`: the machine-readable causes. Decoded because a
    /// controller branches on them as on the code: the API server's NamespaceLifecycle
    /// admission answers a create in a terminating namespace with a plain 403 that only
    /// its `NamespaceTerminating` cause tells apart from an RBAC refusal (apimachinery's
    /// `errors.HasStatusCause`). The rest of `details` is skipped.
    pub causes: Vec<StatusCause>,
}

/// `metav1.StatusCause`: one machine-readable cause of an error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusCause {
    /// `reason = 1`: the cause's type (Go's `StatusCause.Type`, `CauseType`), e.g.
    /// "NamespaceTerminating" or "FieldValueInvalid".
    pub reason: String,
    /// `message = 2`: for people.
    pub message: String,
    /// `field = 3`: the field at fault, e.g. "metadata.namespace".
    pub field: String,
}

/// Decodes a `ListMeta` message.
pub fn list_meta(mut r: Reader<'_>) -> Result<ListMeta, DecodeError> {
    let mut meta = ListMeta::default();
    while let Some((field, wire_type)) = r.key()? {
        match field {
            2 => {
                r.expect("resourceVersion", WireType::Len, wire_type)?;
                meta.resource_version = r.string("resourceVersion")?.to_owned();
            }
            3 => {
                r.expect("continue", WireType::Len, wire_type)?;
                meta.continue_token = r.string("continue")?.to_owned();
            }
            4 => {
                r.expect("remainingItemCount", WireType::Varint, wire_type)?;
                meta.remaining_item_count = Some(r.int64()?);
            }
            5 => {
                r.expect("shardInfo", WireType::Len, wire_type)?;
                let mut info = r.message()?;
                while let Some((field, wire_type)) = info.key()? {
                    if field == 1 {
                        info.expect("selector", WireType::Len, wire_type)?;
                        meta.shard_selector = Some(info.string("selector")?.to_owned());
                    } else {
                        info.skip(wire_type)?;
                    }
                }
            }
            _ => r.skip(wire_type)?,
        }
    }
    Ok(meta)
}

/// Decodes a `Status` message (of its details, only the causes).
pub fn status(mut r: Reader<'_>) -> Result<Status, DecodeError> {
    let mut status = Status::default();
    while let Some((field, wire_type)) = r.key()? {
        match field {
            2 => {
                r.expect("status", WireType::Len, wire_type)?;
                status.status = r.string("status")?.to_owned();
            }
            3 => {
                r.expect("message", WireType::Len, wire_type)?;
                status.message = r.string("message")?.to_owned();
            }
            4 => {
                r.expect("reason", WireType::Len, wire_type)?;
                status.reason = r.string("reason")?.to_owned();
            }
            5 => {
                r.expect("details", WireType::Len, wire_type)?;
                let mut details = r.message()?;
                while let Some((field, wire_type)) = details.key()? {
                    if field == 4 {
                        details.expect("causes", WireType::Len, wire_type)?;
                        status.causes.push(status_cause(details.message()?)?);
                    } else {
                        details.skip(wire_type)?;
                    }
                }
            }
            6 => {
                r.expect("code", WireType::Varint, wire_type)?;
                status.code = r.int32()?;
            }
            _ => r.skip(wire_type)?,
        }
    }
    Ok(status)
}

/// Decodes a `StatusCause` message.
fn status_cause(mut r: Reader<'_>) -> Result<StatusCause, DecodeError> {
    let mut cause = StatusCause::default();
    while let Some((field, wire_type)) = r.key()? {
        let (name, slot) = match field {
            1 => ("reason", &mut cause.reason),
            2 => ("message", &mut cause.message),
            3 => ("field", &mut cause.field),
            _ => {
                r.skip(wire_type)?;
                continue;
            }
        };
        r.expect(name, WireType::Len, wire_type)?;
        *slot = r.string(name)?.to_owned();
    }
    Ok(cause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expired_status_of_a_watch_decodes() {
        // Status{metadata{"", "", ""}, "Failure", message, "Expired", code 410}, as in
        // the ERROR frame of kubernetes/kubernetes#108071.
        let mut msg = b"\x0a\x06\x0a\x00\x12\x00\x1a\x00\x12\x07Failure\x1a\x05gone!".to_vec();
        msg.extend(b"\x22\x07Expired\x30\x9a\x03");
        let status = status(Reader::new(&msg)).expect("valid");
        assert_eq!(
            status,
            Status {
                status: "Failure".into(),
                message: "gone!".into(),
                reason: "Expired".into(),
                code: 410,
                causes: Vec::new(),
            }
        );
    }

    #[test]
    fn the_causes_of_a_namespace_terminating_refusal_decode() {
        // What NamespaceLifecycle admission answers a create in a terminating namespace
        // with: 403 Forbidden, details{name, kind, causes[{NamespaceTerminating, ...,
        // metadata.namespace}]}.
        let mut cause = b"\x0a\x14NamespaceTerminating\x12\x04gone".to_vec();
        cause.extend(b"\x1a\x12metadata.namespace");
        let mut details = b"\x0a\x03web\x1a\x0bdeployments\x22".to_vec();
        details.push(cause.len() as u8);
        details.extend(&cause);
        let mut msg = b"\x12\x07Failure\x22\x09Forbidden\x2a".to_vec();
        msg.push(details.len() as u8);
        msg.extend(&details);
        msg.extend(b"\x30\x93\x03");
        let status = status(Reader::new(&msg)).expect("valid");
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            status.causes,
            vec![StatusCause {
                reason: "NamespaceTerminating".into(),
                message: "gone".into(),
                field: "metadata.namespace".into(),
            }]
        );
    }

    #[test]
    fn a_paged_and_sharded_list_meta_decodes() {
        let selector =
            b"shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let mut msg = b"\x12\x03123\x1a\x04next\x20\x05\x2a".to_vec();
        msg.push(selector.len() as u8 + 2);
        msg.push(0x0a);
        msg.push(selector.len() as u8);
        msg.extend(selector);
        let meta = list_meta(Reader::new(&msg)).expect("valid");
        assert_eq!(meta.resource_version, "123");
        assert_eq!(meta.continue_token, "next");
        assert_eq!(meta.remaining_item_count, Some(5));
        assert_eq!(
            meta.shard_selector.as_deref(),
            Some(std::str::from_utf8(selector).expect("ascii"))
        );
    }

    #[test]
    fn a_code_sent_as_a_string_is_an_error_not_a_guess() {
        let msg = b"\x32\x03410";
        assert!(matches!(
            status(Reader::new(msg)),
            Err(DecodeError::WrongWireType { name: "code", .. })
        ));
    }
}
