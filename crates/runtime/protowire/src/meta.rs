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

/// Decodes a `Status` message (its details are skipped).
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
            6 => {
                r.expect("code", WireType::Varint, wire_type)?;
                status.code = r.int32()?;
            }
            _ => r.skip(wire_type)?,
        }
    }
    Ok(status)
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
            }
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
