//! One event of a protobuf watch stream: a bare `metav1.WatchEvent{type = 1, object
//! = 2}` per frame, whose `object` is a `RawExtension{raw = 1}` holding the object in
//! its own envelope (`k8s\0` + `runtime.Unknown`, [`crate::envelope`]). The API server
//! writes it so in `serveWatchHandler` (apiserver `pkg/endpoints/handlers/watch.go`,
//! `response.go`): the event with the raw serializer, the object with the full one.
//!
//! Types are `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` (an object of the watched kind
//! carrying only `metadata.resourceVersion`, and on the last of the initial events of a
//! streaming list the annotation `k8s.io/initial-events-end`) and `ERROR` (a `Status`,
//! e.g. 410 Expired: relist).

use crate::envelope::{self, Unknown};
use crate::wire::{DecodeError, Reader, WireType};

/// A decoded watch event, borrowing from its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: &'a str,
    /// The object's envelope (its kind and its message).
    pub object: Unknown<'a>,
}

/// Decodes one frame's `WatchEvent`, the object's envelope included.
pub fn decode(frame: &[u8]) -> Result<WatchEvent<'_>, DecodeError> {
    let mut r = Reader::new(frame);
    let mut event_type = None;
    let mut raw = None;
    while let Some((field, wire_type)) = r.key()? {
        match field {
            1 => {
                r.expect("type", WireType::Len, wire_type)?;
                event_type = Some(r.string("type")?);
            }
            2 => {
                r.expect("object", WireType::Len, wire_type)?;
                let mut object = r.message()?;
                while let Some((field, wire_type)) = object.key()? {
                    if field == 1 {
                        object.expect("raw", WireType::Len, wire_type)?;
                        raw = Some(object.bytes()?);
                    } else {
                        object.skip(wire_type)?;
                    }
                }
            }
            _ => r.skip(wire_type)?,
        }
    }
    let event_type = event_type.ok_or_else(|| DecodeError::InvalidValue {
        name: "type",
        message: "a watch event without a type".into(),
    })?;
    let raw = raw.ok_or_else(|| DecodeError::InvalidValue {
        name: "object",
        message: format!("a {event_type} event without an object"),
    })?;
    Ok(WatchEvent {
        event_type,
        object: envelope::decode(raw)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 410 frame the API server sent in kubernetes/kubernetes#108071 (its length
    /// prefix removed), with the message shortened: the ERROR event of an expired watch.
    fn expired_frame() -> Vec<u8> {
        let message = b"too old resource version: 1 (2)";
        let mut status = b"\x0a\x06\x0a\x00\x12\x00\x1a\x00\x12\x07Failure".to_vec();
        status.push(0x1a);
        status.push(message.len() as u8);
        status.extend(message);
        status.extend(b"\x22\x07Expired\x30\x9a\x03");
        let mut unknown = b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status".to_vec();
        unknown.push(0x12);
        unknown.push(status.len() as u8);
        unknown.extend(&status);
        unknown.extend(b"\x1a\x00\x22\x00");
        let mut event = b"\x0a\x05ERROR\x12".to_vec();
        event.push(unknown.len() as u8 + 2);
        event.push(0x0a);
        event.push(unknown.len() as u8);
        event.extend(&unknown);
        event
    }

    #[test]
    fn an_error_event_carries_a_status() {
        let frame = expired_frame();
        let event = decode(&frame).expect("valid");
        assert_eq!(event.event_type, "ERROR");
        assert_eq!(event.object.type_meta.kind, "Status");
        assert_eq!(event.object.type_meta.api_version, "v1");
        // Status.code (field 6) = 410, at the end of the object's message.
        assert!(event.object.raw.ends_with(b"\x30\x9a\x03"));
    }

    #[test]
    fn an_event_without_type_or_object_is_an_error() {
        assert!(matches!(
            decode(b"\x0a\x05ADDED"),
            Err(DecodeError::InvalidValue { name: "object", .. })
        ));
        assert!(matches!(
            decode(b""),
            Err(DecodeError::InvalidValue { name: "type", .. })
        ));
    }

    #[test]
    fn every_truncation_of_an_event_fails_cleanly() {
        let frame = expired_frame();
        for len in 0..frame.len() {
            // A cut right after the type is a valid shorter message without an object:
            // still an error, never a panic.
            assert!(decode(&frame[..len]).is_err(), "{len} bytes");
        }
    }
}
