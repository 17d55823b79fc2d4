//! Encoding k8s-openapi's structs as protobuf: the [`Encode`] trait the generated
//! encoders ([`crate::generated_encode`]) implement, the helpers they call, one per kind
//! of field, and [`object`], a whole request body.
//!
//! # Why
//!
//! client-go's typed clients send built-in objects as protobuf (`Content-Type:
//! application/vnd.kubernetes.protobuf`) when they create or update them, not only read
//! them that way; the controllers' typed client (the `gentype` crate) does the same, so
//! what crosses the wire is what a Go controller sends. (On a single write the saving
//! is small: admission, validation and etcd dominate the server's cost; see
//! docs/benchmarks.md.) This module is the mirror of [`decode`](mod@crate::decode): the
//! same field numbers and the same special types, read from the same Go types by
//! `hack/tools/protogen`.
//!
//! # What is written
//!
//! * **What the struct holds.** An `Option` that is `None` is not written; a value that
//!   is present is written, even empty (`""`, `0`, `false`, an empty message). The server
//!   decodes an absent field and an empty one to the same Go value, as it decodes an
//!   absent JSON field and an empty one, so the object stored is the one a JSON create
//!   stores. A field k8s-openapi does not make an `Option` is always written, as Go
//!   writes its non-pointer fields.
//! * **Go's field order and layout**: fields in field-number order; nested messages
//!   length-prefixed; map entries as `{1: key, 2: value}` messages in key order (a
//!   `BTreeMap`'s); repeated scalars unpacked, one key per element (Go writes them so,
//!   and its decoders accept both); negative `int32`s sign-extended to ten bytes.
//! * **The types that marshal themselves** (apimachinery `time_proto.go`,
//!   `micro_time_proto.go`, `quantity_proto.go`, `intstr/generated.pb.go`):
//!   `metav1.Time` is `Timestamp{1: seconds, 2: 0}` (Go keeps only the seconds, as its
//!   JSON does), `MicroTime` is `Timestamp{1: seconds, 2: nanos}` with the nanoseconds
//!   truncated to microseconds, `Quantity` is `{1: its string}`, `IntOrString` is
//!   `{1: type (0 int, 1 string), 2: intVal, 3: strVal}` with all three written, and
//!   `FieldsV1` is `{1: the JSON document's bytes}`.
//! * An embedded Go struct that JSON inlines into its owner (`EphemeralContainerCommon`
//!   in `EphemeralContainer`, `LocalObjectReference` in the key selectors) is one
//!   message field written from the owner's fields ([`embedded`]), as the decoder
//!   reads it.
//!
//! Whether k8s-openapi made a field an `Option` is left to the compiler, as in the
//! decoder: every helper reads through [`Field`], implemented both for `V` and for
//! `Option<V>`.
//!
//! Nested messages are written in place: one byte is kept for the length, which almost
//! every small message needs, and the body is moved only when its length needs more
//! (messages of 128 bytes and more). No scratch buffer is allocated per message.
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use protowire::encode::Encode;
//!
//! let cm = ConfigMap {
//!     metadata: ObjectMeta {
//!         name: Some("web".into()),
//!         namespace: Some("default".into()),
//!         ..ObjectMeta::default()
//!     },
//!     data: Some(BTreeMap::from([("k".into(), "v".into())])),
//!     ..ConfigMap::default()
//! };
//! let mut bytes = Vec::new();
//! cm.encode(&mut bytes);
//! // The same bytes as decode.rs's example: what Go writes.
//! assert_eq!(bytes, b"\x0a\x0e\x0a\x03web\x1a\x07default\x12\x06\x0a\x01k\x12\x01v");
//! assert_eq!(protowire::decode::decode::<ConfigMap>(&bytes)?, cm);
//!
//! // A request body: the envelope names the kind.
//! let body = protowire::encode::object(&cm);
//! let unknown = protowire::envelope::decode(&body)?;
//! assert_eq!((unknown.type_meta.api_version, unknown.type_meta.kind), ("v1", "ConfigMap"));
//! assert_eq!(unknown.raw, bytes);
//! # Ok::<(), protowire::DecodeError>(())
//! ```

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use crate::wire::WireType;

/// A message type with an encoder: writes its fields (no envelope, no length) to `out`.
/// Generated for every message type the decoders know ([`crate::generated_encode`]).
pub trait Encode {
    /// Appends the message's fields to `out`.
    fn encode(&self, out: &mut Vec<u8>);
}

/// The whole request body of `obj` for a create or an update: the envelope
/// ([`crate::envelope::encode`]) naming `K`'s apiVersion and kind, around `obj`'s
/// message.
pub fn object<K: Encode + k8s_openapi::Resource>(obj: &K) -> Vec<u8> {
    crate::envelope::encode_with(K::API_VERSION, K::KIND, |out| obj.encode(out))
}

/// A field that may hold one `V`: `V` itself (always there) or `Option<V>`.
pub trait Field<V> {
    /// The value, if the field has one.
    fn value(&self) -> Option<&V>;
}

impl<V> Field<V> for V {
    fn value(&self) -> Option<&V> {
        Some(self)
    }
}

impl<V> Field<V> for Option<V> {
    fn value(&self) -> Option<&V> {
        self.as_ref()
    }
}

/// Appends `value` as a varint (low seven bits first, the top bit marking more).
pub fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a field's key: its number and wire type.
pub fn key(out: &mut Vec<u8>, number: u32, wire: WireType) {
    let bits = match wire {
        WireType::Varint => 0,
        WireType::I64 => 1,
        WireType::Len => 2,
        WireType::I32 => 5,
    };
    varint(out, (u64::from(number) << 3) | bits);
}

/// Appends a length-delimited field whose body `write` appends, written in place: one
/// byte is kept for the length, and the body moved only if its length needs more.
pub fn len_delimited(out: &mut Vec<u8>, number: u32, write: impl FnOnce(&mut Vec<u8>)) {
    key(out, number, WireType::Len);
    let at = out.len();
    out.push(0);
    write(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let (mut prefix, mut n, mut rest) = ([0u8; 10], 0, len as u64);
        while rest >= 0x80 {
            prefix[n] = (rest as u8 & 0x7f) | 0x80;
            rest >>= 7;
            n += 1;
        }
        prefix[n] = rest as u8;
        out.splice(at..=at, prefix[..=n].iter().copied());
    }
}

/// Appends a length-delimited field holding `bytes`.
pub(crate) fn write_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    key(out, number, WireType::Len);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Appends a varint field.
fn write_varint(out: &mut Vec<u8>, number: u32, value: u64) {
    key(out, number, WireType::Varint);
    varint(out, value);
}

/// The bits Go writes for an `int32`: sign-extended to 64 (ten bytes when negative).
fn int32_bits(value: i32) -> u64 {
    i64::from(value) as u64
}

/// A `string` field.
pub fn string(out: &mut Vec<u8>, number: u32, field: &impl Field<String>) {
    if let Some(value) = field.value() {
        write_bytes(out, number, value.as_bytes());
    }
}

/// A `bytes` field (`[]byte` in Go).
pub fn bytes(out: &mut Vec<u8>, number: u32, field: &impl Field<ByteString>) {
    if let Some(value) = field.value() {
        write_bytes(out, number, &value.0);
    }
}

/// A `bool` field.
pub fn bool(out: &mut Vec<u8>, number: u32, field: &impl Field<bool>) {
    if let Some(&value) = field.value() {
        write_varint(out, number, u64::from(value));
    }
}

/// An `int32` field.
pub fn int32(out: &mut Vec<u8>, number: u32, field: &impl Field<i32>) {
    if let Some(&value) = field.value() {
        write_varint(out, number, int32_bits(value));
    }
}

/// An `int64` field.
pub fn int64(out: &mut Vec<u8>, number: u32, field: &impl Field<i64>) {
    if let Some(&value) = field.value() {
        write_varint(out, number, value as u64);
    }
}

/// A `double` field.
pub fn double(out: &mut Vec<u8>, number: u32, field: &impl Field<f64>) {
    if let Some(&value) = field.value() {
        key(out, number, WireType::I64);
        out.extend_from_slice(&value.to_bits().to_le_bytes());
    }
}

/// An embedded message `T` (the type is named: `Option<T>` could be either).
pub fn message<T: Encode>(out: &mut Vec<u8>, number: u32, field: &impl Field<T>) {
    if let Some(value) = field.value() {
        len_delimited(out, number, |out| value.encode(out));
    }
}

/// An embedded Go struct that JSON inlines into its owner: one message field, whose
/// fields `write` appends from the owner's.
pub fn embedded(out: &mut Vec<u8>, number: u32, write: impl FnOnce(&mut Vec<u8>)) {
    len_delimited(out, number, write);
}

/// A repeated message field: one field per element.
pub fn repeated_message<T: Encode>(out: &mut Vec<u8>, number: u32, field: &impl Field<Vec<T>>) {
    for value in field.value().into_iter().flatten() {
        len_delimited(out, number, |out| value.encode(out));
    }
}

/// A repeated `string` field.
pub fn repeated_string(out: &mut Vec<u8>, number: u32, field: &impl Field<Vec<String>>) {
    for value in field.value().into_iter().flatten() {
        write_bytes(out, number, value.as_bytes());
    }
}

/// A repeated `int32` field, unpacked.
pub fn repeated_int32(out: &mut Vec<u8>, number: u32, field: &impl Field<Vec<i32>>) {
    for &value in field.value().into_iter().flatten() {
        write_varint(out, number, int32_bits(value));
    }
}

/// A repeated `int64` field, unpacked.
pub fn repeated_int64(out: &mut Vec<u8>, number: u32, field: &impl Field<Vec<i64>>) {
    for &value in field.value().into_iter().flatten() {
        write_varint(out, number, value as u64);
    }
}

/// A `map<string, V>` field: one entry message `{1: key, 2: value}` per key, in key
/// order; `value` writes field 2.
fn map<V>(
    out: &mut Vec<u8>,
    number: u32,
    field: &impl Field<BTreeMap<String, V>>,
    value: impl Fn(&mut Vec<u8>, &V),
) {
    for (k, v) in field.value().into_iter().flatten() {
        len_delimited(out, number, |out| {
            write_bytes(out, 1, k.as_bytes());
            value(out, v);
        });
    }
}

/// A `map<string, string>` field.
pub fn map_string(out: &mut Vec<u8>, number: u32, field: &impl Field<BTreeMap<String, String>>) {
    map(out, number, field, |out, v| {
        write_bytes(out, 2, v.as_bytes())
    });
}

/// A `map<string, bytes>` field (`map[string][]byte` in Go).
pub fn map_bytes(out: &mut Vec<u8>, number: u32, field: &impl Field<BTreeMap<String, ByteString>>) {
    map(out, number, field, |out, v| write_bytes(out, 2, &v.0));
}

/// A `map<string, Quantity>` field (a `ResourceList`).
pub fn map_quantity(
    out: &mut Vec<u8>,
    number: u32,
    field: &impl Field<BTreeMap<String, Quantity>>,
) {
    map(out, number, field, |out, v| quantity(out, 2, v));
}

/// A `google.protobuf.Timestamp`-shaped message: `{1: seconds, 2: nanos}`, both always
/// written, the seconds rounded down (Go's `Unix()`) and the nanoseconds counting
/// forward from them.
fn timestamp(out: &mut Vec<u8>, number: u32, at: Timestamp, keep_nanos: impl Fn(i32) -> i32) {
    let (mut seconds, mut nanos) = (at.as_second(), at.subsec_nanosecond());
    if nanos < 0 {
        seconds -= 1;
        nanos += 1_000_000_000;
    }
    len_delimited(out, number, |out| {
        write_varint(out, 1, seconds as u64);
        write_varint(out, 2, int32_bits(keep_nanos(nanos)));
    });
}

/// A `metav1.Time`: its seconds (Go writes no nanoseconds, as its JSON has none).
pub fn time(out: &mut Vec<u8>, number: u32, field: &impl Field<Time>) {
    if let Some(value) = field.value() {
        timestamp(out, number, value.0, |_| 0);
    }
}

/// A `metav1.MicroTime`: seconds and nanoseconds truncated to microseconds.
pub fn micro_time(out: &mut Vec<u8>, number: u32, field: &impl Field<MicroTime>) {
    if let Some(value) = field.value() {
        timestamp(out, number, value.0, |nanos| nanos - nanos % 1000);
    }
}

/// A `resource.Quantity`: a message whose field 1 is the quantity's string.
pub fn quantity(out: &mut Vec<u8>, number: u32, field: &impl Field<Quantity>) {
    if let Some(value) = field.value() {
        len_delimited(out, number, |out| write_bytes(out, 1, value.0.as_bytes()));
    }
}

/// An `intstr.IntOrString`: `{1: type (0 int, 1 string), 2: intVal, 3: strVal}`, all
/// three written as Go does.
pub fn int_or_string(out: &mut Vec<u8>, number: u32, field: &impl Field<IntOrString>) {
    if let Some(value) = field.value() {
        let (kind, int, text) = match value {
            IntOrString::Int(i) => (0, *i, ""),
            IntOrString::String(s) => (1, 0, s.as_str()),
        };
        len_delimited(out, number, |out| {
            write_varint(out, 1, kind);
            write_varint(out, 2, int32_bits(int));
            write_bytes(out, 3, text.as_bytes());
        });
    }
}

/// A `metav1.FieldsV1`: `{1: Raw}`, the JSON document of a managed-fields entry.
pub fn fields_v1(out: &mut Vec<u8>, number: u32, field: &impl Field<FieldsV1>) {
    if let Some(value) = field.value() {
        len_delimited(out, number, |out| {
            len_delimited(out, 1, |out| {
                // A JSON value always serializes (its map keys are strings); should it
                // ever fail, `null` is written rather than half a document.
                let start = out.len();
                if serde_json::to_writer(&mut *out, &value.0).is_err() {
                    out.truncate(start);
                    out.extend_from_slice(b"null");
                }
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Reader;

    fn encoded(write: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut out = Vec::new();
        write(&mut out);
        out
    }

    #[test]
    fn varints_are_written_as_protobuf_reads_them() {
        for value in [
            0,
            1,
            127,
            128,
            150,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let bytes = encoded(|out| varint(out, value));
            let mut r = Reader::new(&bytes);
            assert_eq!(r.varint(), Ok(value), "{value}");
            assert!(r.is_empty());
        }
        assert_eq!(encoded(|out| varint(out, 150)), [0x96, 0x01]);
    }

    #[test]
    fn none_is_not_written_and_an_empty_value_is() {
        assert!(encoded(|out| string(out, 1, &None::<String>)).is_empty());
        assert_eq!(
            encoded(|out| string(out, 1, &Some(String::new()))),
            [0x0a, 0]
        );
        assert_eq!(encoded(|out| string(out, 1, &String::new())), [0x0a, 0]);
        assert_eq!(encoded(|out| bool(out, 2, &false)), [0x10, 0]);
        assert_eq!(encoded(|out| int64(out, 3, &Some(0i64))), [0x18, 0]);
        assert!(encoded(|out| repeated_string(out, 1, &Some(Vec::new()))).is_empty());
    }

    #[test]
    fn a_negative_int32_is_ten_bytes_as_go_writes_it() {
        let bytes = encoded(|out| int32(out, 1, &-1));
        assert_eq!(bytes.len(), 11);
        let mut r = Reader::new(&bytes[1..]);
        assert_eq!(r.int32(), Ok(-1));
    }

    #[test]
    fn long_messages_get_a_longer_length() {
        for len in [0, 1, 127, 128, 300, 20_000] {
            let text = "x".repeat(len);
            let bytes = encoded(|out| {
                len_delimited(out, 4, |out| out.extend_from_slice(text.as_bytes()));
                out.push(0x08); // the next field is left where it belongs
            });
            let mut r = Reader::new(&bytes);
            assert_eq!(r.key(), Ok(Some((4, WireType::Len))));
            assert_eq!(r.bytes(), Ok(text.as_bytes()), "{len}");
            assert_eq!(bytes.last(), Some(&0x08));
        }
    }

    #[test]
    fn special_types_are_written_as_go_writes_them() {
        let at = Timestamp::new(1_700_000_000, 123_456_789).expect("valid");
        // Time: seconds and a zero nanos; MicroTime: microseconds.
        let mut expected = vec![0x0a, 0x08, 0x08];
        varint(&mut expected, 1_700_000_000);
        expected.extend([0x10, 0x00]);
        assert_eq!(encoded(|out| time(out, 1, &Time(at))), expected);
        let bytes = encoded(|out| micro_time(out, 1, &MicroTime(at)));
        let mut r = Reader::new(&bytes[2..]);
        assert_eq!(r.key(), Ok(Some((1, WireType::Varint))));
        assert_eq!(r.int64(), Ok(1_700_000_000));
        assert_eq!(r.key(), Ok(Some((2, WireType::Varint))));
        assert_eq!(r.int32(), Ok(123_456_000));

        // Before 1970: seconds rounded down, nanoseconds forward (as Go's Unix()).
        let before = Timestamp::new(-2, 500_000_000).expect("valid");
        let bytes = encoded(|out| micro_time(out, 1, &MicroTime(before)));
        let mut r = Reader::new(&bytes[2..]);
        assert_eq!(r.key(), Ok(Some((1, WireType::Varint))));
        assert_eq!(r.int64(), Ok(-2));
        assert_eq!(r.key(), Ok(Some((2, WireType::Varint))));
        assert_eq!(r.int32(), Ok(500_000_000));

        assert_eq!(
            encoded(|out| int_or_string(out, 1, &IntOrString::Int(80))),
            b"\x0a\x06\x08\x00\x10\x50\x1a\x00"
        );
        assert_eq!(
            encoded(|out| int_or_string(out, 1, &IntOrString::String("http".into()))),
            b"\x0a\x0a\x08\x01\x10\x00\x1a\x04http"
        );
        assert_eq!(
            encoded(|out| quantity(out, 1, &Quantity("100m".into()))),
            b"\x0a\x06\x0a\x04100m"
        );
        assert_eq!(
            encoded(|out| fields_v1(out, 1, &FieldsV1(serde_json::json!({"f:a": {}})))),
            b"\x0a\x0c\x0a\x0a{\"f:a\":{}}"
        );
        assert_eq!(
            encoded(|out| map_quantity(
                out,
                5,
                &BTreeMap::from([("cpu".to_owned(), Quantity("1".into()))])
            )),
            b"\x2a\x0a\x0a\x03cpu\x12\x03\x0a\x011"
        );
    }
}
