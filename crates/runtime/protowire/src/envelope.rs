//! The envelope around every protobuf answer of the API server (and every protobuf
//! request body a client sends, [`encode`]): the four bytes
//! `k8s\0`, then a `runtime.Unknown` message whose `typeMeta` names the kind and whose
//! `raw` holds the object (apimachinery `pkg/runtime/serializer/protobuf/protobuf.go`).
//! A list has one envelope for the whole list; its items are bare messages. An error
//! comes back the same way, as kind `Status`.
//!
//! Careful: `runtime.TypeMeta` numbers its fields `apiVersion = 1, kind = 2`, the
//! reverse of `metav1.TypeMeta`, and built-in objects carry no TypeMeta of their own
//! in protobuf: the envelope is the only place the kind is written.

use crate::wire::{DecodeError, Reader, WireType};

/// The four bytes every protobuf object starts with: "k8s" and the encoding style 0
/// (the rest is a `runtime.Unknown`).
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// The protobuf media type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The `Accept` header client-go's typed clients send for built-in types (client-go
/// `gentype.PrefersProtobuf`): protobuf, or JSON where the server has no protobuf
/// for the type (custom resources).
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf,application/json";

/// What an answer's `Content-Type` says its body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaType {
    /// `application/json`: a JSON object, or a watch's JSON lines.
    Json,
    /// `application/vnd.kubernetes.protobuf`: one envelope.
    Protobuf,
    /// `application/vnd.kubernetes.protobuf;stream=watch`: length-delimited frames
    /// ([`crate::frame`]) of watch events ([`crate::watch`]).
    ProtobufWatch,
    /// Anything else (CBOR, text from a proxy, ...).
    Other,
}

/// Reads a `Content-Type` header value: the media type without its parameters, case
/// insensitive, except `stream=watch`, which marks protobuf watch frames. A missing
/// header is JSON (what the API server always sets; a proxy's error page without one
/// then fails as JSON, with its text in the error).
pub fn media_type(content_type: Option<&str>) -> MediaType {
    let Some(value) = content_type else {
        return MediaType::Json;
    };
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    let watch = parts.any(|p| {
        p.split_once('=')
            .is_some_and(|(k, v)| k.trim().eq_ignore_ascii_case("stream") && v.trim() == "watch")
    });
    if essence.eq_ignore_ascii_case(PROTOBUF) {
        if watch {
            MediaType::ProtobufWatch
        } else {
            MediaType::Protobuf
        }
    } else if essence.eq_ignore_ascii_case("application/json") {
        MediaType::Json
    } else {
        MediaType::Other
    }
}

/// `runtime.TypeMeta` of the envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeMeta<'a> {
    /// e.g. `apps/v1`, or `v1` for the core group and for `Status`.
    pub api_version: &'a str,
    /// e.g. `Deployment`, `DeploymentList`, `Status`.
    pub kind: &'a str,
}

/// `runtime.Unknown`: the decoded envelope, borrowing from the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unknown<'a> {
    /// What `raw` is.
    pub type_meta: TypeMeta<'a>,
    /// The object's (or list's) own message.
    pub raw: &'a [u8],
}

/// Decodes an envelope: checks the magic, reads `runtime.Unknown`. The server always
/// writes `contentEncoding` and `contentType` as empty strings; a non-empty
/// `contentEncoding` (a compressed raw) is refused rather than misread.
pub fn decode(body: &[u8]) -> Result<Unknown<'_>, DecodeError> {
    let Some(message) = body.strip_prefix(&MAGIC) else {
        let start = &body[..body.len().min(4)];
        return Err(DecodeError::Envelope(format!(
            "the body starts with {start:02x?}, not k8s\\0"
        )));
    };
    let mut r = Reader::new(message);
    let mut unknown = Unknown {
        type_meta: TypeMeta::default(),
        raw: &[],
    };
    while let Some((field, wire_type)) = r.key()? {
        match field {
            1 => {
                r.expect("typeMeta", WireType::Len, wire_type)?;
                unknown.type_meta = type_meta(r.message()?)?;
            }
            2 => {
                r.expect("raw", WireType::Len, wire_type)?;
                unknown.raw = r.bytes()?;
            }
            3 => {
                r.expect("contentEncoding", WireType::Len, wire_type)?;
                let encoding = r.string("contentEncoding")?;
                if !encoding.is_empty() {
                    return Err(DecodeError::Envelope(format!(
                        "contentEncoding {encoding:?} is not supported"
                    )));
                }
            }
            _ => r.skip(wire_type)?,
        }
    }
    if unknown.type_meta.kind.is_empty() {
        return Err(DecodeError::Envelope("the envelope names no kind".into()));
    }
    Ok(unknown)
}

/// Encodes an envelope, as apimachinery's protobuf serializer writes a request or an
/// answer: `k8s\0`, then `runtime.Unknown{1: typeMeta{1: apiVersion, 2: kind}, 2: raw,
/// 3: contentEncoding "", 4: contentType ""}` (`runtime.Unknown.NestedMarshalTo`
/// writes the two empty strings too). `raw` is the object's message
/// ([`crate::encode::Encode`]); [`crate::encode::object`] writes both at once.
pub fn encode(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    encode_with(api_version, kind, |out| out.extend_from_slice(raw))
}

/// [`encode`] with `raw` appended in place by `write_raw`: no copy of the object.
pub(crate) fn encode_with(
    api_version: &str,
    kind: &str,
    write_raw: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    use crate::encode::{len_delimited, write_bytes};
    let mut out = MAGIC.to_vec();
    len_delimited(&mut out, 1, |out| {
        write_bytes(out, 1, api_version.as_bytes());
        write_bytes(out, 2, kind.as_bytes());
    });
    len_delimited(&mut out, 2, write_raw);
    write_bytes(&mut out, 3, b"");
    write_bytes(&mut out, 4, b"");
    out
}

fn type_meta(mut r: Reader<'_>) -> Result<TypeMeta<'_>, DecodeError> {
    let mut meta = TypeMeta::default();
    while let Some((field, wire_type)) = r.key()? {
        match field {
            1 => {
                r.expect("apiVersion", WireType::Len, wire_type)?;
                meta.api_version = r.string("apiVersion")?;
            }
            2 => {
                r.expect("kind", WireType::Len, wire_type)?;
                meta.kind = r.string("kind")?;
            }
            _ => r.skip(wire_type)?,
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k8s\0` + Unknown{typeMeta{v1, Status}, raw, "", ""}, as the server writes it.
    fn status_envelope(raw: &[u8]) -> Vec<u8> {
        let mut body = MAGIC.to_vec();
        body.extend(b"\x0a\x0c\x0a\x02v1\x12\x06Status");
        body.push(0x12);
        body.push(raw.len() as u8);
        body.extend(raw);
        body.extend(b"\x1a\x00\x22\x00");
        body
    }

    #[test]
    fn the_servers_envelope_decodes() {
        let body = status_envelope(b"\x30\x9a\x03");
        let unknown = decode(&body).expect("valid");
        assert_eq!(
            unknown.type_meta,
            TypeMeta {
                api_version: "v1",
                kind: "Status"
            }
        );
        assert_eq!(unknown.raw, b"\x30\x9a\x03");
    }

    #[test]
    fn an_encoded_envelope_is_the_servers_and_decodes() {
        assert_eq!(
            encode("v1", "Status", b"\x30\x9a\x03"),
            status_envelope(b"\x30\x9a\x03")
        );
        let raw = vec![7u8; 300];
        let body = encode("coordination.k8s.io/v1", "Lease", &raw);
        let unknown = decode(&body).expect("valid");
        assert_eq!(
            unknown.type_meta,
            TypeMeta {
                api_version: "coordination.k8s.io/v1",
                kind: "Lease"
            }
        );
        assert_eq!(unknown.raw, raw);
        assert_eq!(decode(&encode("v1", "Pod", b"")).expect("valid").raw, b"");
    }

    #[test]
    fn json_or_garbage_is_not_an_envelope() {
        for body in [
            &b"{\"kind\":\"Status\"}"[..],
            b"k8s",
            b"",
            b"k8s\x01\x0a\x00",
        ] {
            assert!(
                matches!(decode(body), Err(DecodeError::Envelope(_))),
                "{body:?}"
            );
        }
    }

    #[test]
    fn an_envelope_without_a_kind_or_with_an_encoding_is_refused() {
        assert!(matches!(
            decode(b"k8s\0\x12\x00"),
            Err(DecodeError::Envelope(_))
        ));
        let mut gzipped = status_envelope(b"");
        gzipped.truncate(gzipped.len() - 4);
        gzipped.extend(b"\x1a\x04gzip");
        assert!(matches!(decode(&gzipped), Err(DecodeError::Envelope(_))));
    }

    #[test]
    fn a_truncated_envelope_is_an_error() {
        // magic (0..4), typeMeta's key and length (4, 5) and 12 bytes (6..18), raw's
        // key and length (18, 19) and 3 bytes (20..23): every cut inside a value fails.
        let body = status_envelope(b"\x30\x9a\x03");
        for len in (5..18).chain(19..23) {
            assert!(decode(&body[..len]).is_err(), "{len} bytes");
        }
        assert!(
            decode(&body[..23]).is_ok(),
            "a cut between fields is a shorter message"
        );
    }

    #[test]
    fn content_types_are_read_as_the_server_writes_them() {
        use MediaType::*;
        for (header, expected) in [
            (Some("application/vnd.kubernetes.protobuf"), Protobuf),
            (
                Some("application/vnd.kubernetes.protobuf;stream=watch"),
                ProtobufWatch,
            ),
            (
                Some("Application/Vnd.Kubernetes.Protobuf; stream=watch"),
                ProtobufWatch,
            ),
            (Some("application/json"), Json),
            (Some("application/json;charset=utf-8"), Json),
            (Some("application/cbor"), Other),
            (Some("text/plain"), Other),
            (None, Json),
        ] {
            assert_eq!(media_type(header), expected, "{header:?}");
        }
    }
}
