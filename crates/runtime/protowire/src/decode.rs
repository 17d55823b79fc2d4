//! Decoding protobuf messages into k8s-openapi's structs: the [`Message`] trait the
//! generated decoders ([`crate::generated`]) implement, and the helpers they call, one
//! per kind of field.
//!
//! # The same struct as the JSON path
//!
//! A decoder here must give exactly what `serde_json` gives for the same object read as
//! JSON, so the rest of the project cannot tell which wire an object came over. Two rules
//! of the Go side decide it:
//!
//! * **Go writes non-pointer fields even when empty.** A `string`, integer or `bool`
//!   field that is not a pointer is always on the protobuf wire (`""`, `0`, `false`);
//!   with `omitempty` in its JSON tag, the same value is absent from JSON, so
//!   k8s-openapi has `None`. The generator reads the Go types and passes
//!   `drop_empty: true` for those fields: an empty value leaves the field as it is.
//! * **Some types marshal themselves.** `metav1.Time` is a `Timestamp{seconds, nanos}`
//!   message, empty for the zero time (JSON `null`), and Go keeps only its seconds (as
//!   JSON does); `MicroTime` keeps microseconds; `resource.Quantity` is its string;
//!   `IntOrString` is `{type, intVal, strVal}`; `FieldsV1` is the JSON document's bytes.
//!   Each has a helper here (apimachinery `pkg/apis/meta/v1/time_proto.go`,
//!   `micro_time_proto.go`, `pkg/api/resource/quantity_proto.go`,
//!   `pkg/util/intstr/generated.proto`).
//!
//! Whether k8s-openapi made a field an `Option` is left to the compiler: every helper
//! writes through a slot trait ([`Slot`], [`SeqSlot`], [`MapSlot`], [`MsgSlot`])
//! implemented both for `T` and for `Option<T>`.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! // ConfigMap{metadata{name: "web", namespace: "default"}, data{"k": "v"}}, as Go writes it.
//! let bytes = b"\x0a\x0e\x0a\x03web\x1a\x07default\x12\x06\x0a\x01k\x12\x01v";
//! let cm: ConfigMap = protowire::decode::decode(bytes)?;
//! assert_eq!(cm.metadata.name.as_deref(), Some("web"));
//! assert_eq!(cm.data.unwrap()["k"], "v");
//! # Ok::<(), protowire::DecodeError>(())
//! ```

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use crate::wire::{DecodeError, Reader, WireType};

/// A value before any field is applied: what an absent field leaves. Not `Default`,
/// because k8s-openapi leaves it out where a required field has no natural default
/// (`Condition.lastTransitionTime`, `EventSeries.lastObservedTime`): those get the zero
/// of their type, which any real object overwrites. Generated for every message type.
pub trait Empty {
    /// The empty value.
    fn empty() -> Self;
}

macro_rules! empty_by_default {
    ($($t:ty),*) => {$(
        impl Empty for $t {
            fn empty() -> Self {
                <$t>::default()
            }
        }
    )*};
}
empty_by_default!(String, bool, i32, i64, f64, ByteString, Quantity);

impl<T> Empty for Option<T> {
    fn empty() -> Self {
        None
    }
}

impl<T> Empty for Vec<T> {
    fn empty() -> Self {
        Vec::new()
    }
}

impl<K, V> Empty for BTreeMap<K, V> {
    fn empty() -> Self {
        BTreeMap::new()
    }
}

impl Empty for Time {
    fn empty() -> Self {
        Time(Timestamp::UNIX_EPOCH)
    }
}

impl Empty for MicroTime {
    fn empty() -> Self {
        MicroTime(Timestamp::UNIX_EPOCH)
    }
}

impl Empty for IntOrString {
    fn empty() -> Self {
        IntOrString::Int(0)
    }
}

impl Empty for FieldsV1 {
    fn empty() -> Self {
        FieldsV1(serde_json::Value::Null)
    }
}

/// A message type with a decoder: how to apply one field to the value decoded so far.
/// Fields are applied in wire order; a field seen twice is merged as protobuf says (the
/// last scalar wins, messages merge, repeated fields append).
pub trait Message: Empty {
    /// Applies field number `field`, whose value `r` is positioned at.
    fn merge_field(
        &mut self,
        field: u32,
        wire: WireType,
        r: &mut Reader<'_>,
    ) -> Result<(), DecodeError>;

    /// Applies every field of the message `r` reads.
    fn merge(&mut self, mut r: Reader<'_>) -> Result<(), DecodeError> {
        while let Some((field, wire)) = r.key()? {
            self.merge_field(field, wire, &mut r)?;
        }
        Ok(())
    }
}

/// Decodes one message (without an envelope: the `raw` of a
/// [`Unknown`](crate::Unknown), or an item of a list).
pub fn decode<T: Message>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut value = T::empty();
    value.merge(Reader::new(bytes))?;
    Ok(value)
}

/// A field that holds one `V`: `V` itself, or `Option<V>`.
pub trait Slot<V> {
    /// Stores `value`.
    fn put(&mut self, value: V);
}

impl<V> Slot<V> for V {
    fn put(&mut self, value: V) {
        *self = value;
    }
}

impl<V> Slot<V> for Option<V> {
    fn put(&mut self, value: V) {
        *self = Some(value);
    }
}

/// A field that holds a list of `V`: `Vec<V>` or `Option<Vec<V>>`.
pub trait SeqSlot<V> {
    /// Appends `value`.
    fn push(&mut self, value: V);
}

impl<V> SeqSlot<V> for Vec<V> {
    fn push(&mut self, value: V) {
        Vec::push(self, value);
    }
}

impl<V> SeqSlot<V> for Option<Vec<V>> {
    fn push(&mut self, value: V) {
        self.get_or_insert_with(Vec::new).push(value);
    }
}

/// A field that holds a map from strings to `V`.
pub trait MapSlot<V> {
    /// Inserts `key` -> `value` (a repeated key: the last wins, as in Go).
    fn insert(&mut self, key: String, value: V);
}

impl<V> MapSlot<V> for BTreeMap<String, V> {
    fn insert(&mut self, key: String, value: V) {
        BTreeMap::insert(self, key, value);
    }
}

impl<V> MapSlot<V> for Option<BTreeMap<String, V>> {
    fn insert(&mut self, key: String, value: V) {
        self.get_or_insert_with(BTreeMap::new).insert(key, value);
    }
}

/// A field that holds one message `T`: `T` or `Option<T>`.
pub trait MsgSlot<T> {
    /// The message to merge into (created empty if absent).
    fn message(&mut self) -> &mut T;
}

impl<T> MsgSlot<T> for T {
    fn message(&mut self) -> &mut T {
        self
    }
}

impl<T: Empty> MsgSlot<T> for Option<T> {
    fn message(&mut self) -> &mut T {
        self.get_or_insert_with(T::empty)
    }
}

/// The helper of one scalar field kind: the wire type is checked, the value read, and
/// with `drop_empty` its empty value (`""`, no bytes, `false`, `0`) leaves the field as
/// it is (see the module docs).
macro_rules! scalar {
    ($(#[$doc:meta])* $name:ident: $ty:ty, $wire:ident, |$r:ident, $n:ident| $read:expr, $empty:expr) => {
        $(#[$doc])*
        pub fn $name(
            slot: &mut impl Slot<$ty>,
            name: &'static str,
            wire: WireType,
            r: &mut Reader<'_>,
            drop_empty: bool,
        ) -> Result<(), DecodeError> {
            r.expect(name, WireType::$wire, wire)?;
            let ($r, $n) = (r, name);
            let value: $ty = $read;
            if !(drop_empty && value == $empty) {
                slot.put(value);
            }
            Ok(())
        }
    };
}

scalar!(
    /// A `string` field.
    string: String, Len, |r, name| r.string(name)?.to_owned(), ""
);
scalar!(
    /// A `bytes` field (`[]byte` in Go).
    bytes: ByteString, Len, |r, _name| ByteString(r.bytes()?.to_vec()), ByteString(Vec::new())
);
scalar!(
    /// A `bool` field.
    bool: bool, Varint, |r, _name| r.bool()?, false
);
scalar!(
    /// An `int32` field.
    int32: i32, Varint, |r, _name| r.int32()?, 0
);
scalar!(
    /// An `int64` field.
    int64: i64, Varint, |r, _name| r.int64()?, 0
);
scalar!(
    /// A `double` field.
    double: f64, I64, |r, _name| f64::from_bits(r.fixed64()?), 0.0
);

/// An embedded message `T`, merged into the field (created if absent).
pub fn message<T: Message, S: MsgSlot<T>>(
    slot: &mut S,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let body = r.message()?;
    slot.message().merge(body)
}

/// One element of a repeated message field.
pub fn repeated_message<T: Message, S: SeqSlot<T>>(
    slot: &mut S,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut value = T::empty();
    value.merge(r.message()?)?;
    slot.push(value);
    Ok(())
}

/// One element of a repeated `string` field.
pub fn repeated_string(
    slot: &mut impl SeqSlot<String>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    slot.push(r.string(name)?.to_owned());
    Ok(())
}

/// A repeated varint field: one element, or (packed, as proto3 and some proto2 encoders
/// write them) a length-delimited run of them.
fn repeated_varint<V>(
    slot: &mut impl SeqSlot<V>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
    convert: fn(u64) -> V,
) -> Result<(), DecodeError> {
    match wire {
        WireType::Varint => slot.push(convert(r.varint()?)),
        WireType::Len => {
            let mut packed = r.message()?;
            while !packed.is_empty() {
                slot.push(convert(packed.varint()?));
            }
        }
        found => r.expect(name, WireType::Varint, found)?,
    }
    Ok(())
}

/// A repeated `int32` field (packed or not).
pub fn repeated_int32(
    slot: &mut impl SeqSlot<i32>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    repeated_varint(slot, name, wire, r, |v| v as i32)
}

/// A repeated `int64` field (packed or not).
pub fn repeated_int64(
    slot: &mut impl SeqSlot<i64>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    repeated_varint(slot, name, wire, r, |v| v as i64)
}

/// One entry of a `map<string, V>` field: a message `{1: key, 2: value}`, either part
/// possibly absent (then empty).
fn map_entry<V: Empty>(
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
    mut value: impl FnMut(&mut V, WireType, &mut Reader<'_>) -> Result<(), DecodeError>,
) -> Result<(String, V), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut entry = r.message()?;
    let (mut key, mut val) = (String::new(), V::empty());
    while let Some((field, wire)) = entry.key()? {
        match field {
            1 => {
                entry.expect(name, WireType::Len, wire)?;
                key = entry.string(name)?.to_owned();
            }
            2 => value(&mut val, wire, &mut entry)?,
            _ => entry.skip(wire)?,
        }
    }
    Ok((key, val))
}

/// One entry of a `map<string, string>` field.
pub fn map_string(
    slot: &mut impl MapSlot<String>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let (key, value) = map_entry(name, wire, r, |v: &mut String, wire, r| {
        string(v, name, wire, r, false)
    })?;
    slot.insert(key, value);
    Ok(())
}

/// One entry of a `map<string, bytes>` field (`map[string][]byte` in Go).
pub fn map_bytes(
    slot: &mut impl MapSlot<ByteString>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let (key, value) = map_entry(name, wire, r, |v: &mut ByteString, wire, r| {
        bytes(v, name, wire, r, false)
    })?;
    slot.insert(key, value);
    Ok(())
}

/// One entry of a `map<string, Quantity>` field (a `ResourceList`).
pub fn map_quantity(
    slot: &mut impl MapSlot<Quantity>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    let (key, value) = map_entry(name, wire, r, |v: &mut Quantity, wire, r| {
        quantity(v, name, wire, r)
    })?;
    slot.insert(key, value);
    Ok(())
}

/// A `google.protobuf.Timestamp`-shaped message: `(seconds, nanos)`, `None` when empty.
fn timestamp(
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<Option<(i64, i32)>, DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut body = r.message()?;
    if body.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i32);
    while let Some((field, wire)) = body.key()? {
        match field {
            1 => {
                body.expect(name, WireType::Varint, wire)?;
                seconds = body.int64()?;
            }
            2 => {
                body.expect(name, WireType::Varint, wire)?;
                nanos = body.int32()?;
            }
            _ => body.skip(wire)?,
        }
    }
    Ok(Some((seconds, nanos)))
}

fn invalid_time(name: &'static str, e: impl std::fmt::Display) -> DecodeError {
    DecodeError::InvalidValue {
        name,
        message: format!("not a time: {e}"),
    }
}

/// A `metav1.Time`: seconds only (Go drops the nanoseconds, as its JSON does); an
/// empty message is the zero time, JSON `null`, and leaves the field as it is.
pub fn time(
    slot: &mut impl Slot<Time>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    if let Some((seconds, _)) = timestamp(name, wire, r)? {
        let at = Timestamp::from_second(seconds).map_err(|e| invalid_time(name, e))?;
        slot.put(Time(at));
    }
    Ok(())
}

/// A `metav1.MicroTime`: nanoseconds truncated to microseconds (as Go does); an empty
/// message leaves the field as it is.
pub fn micro_time(
    slot: &mut impl Slot<MicroTime>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    if let Some((seconds, nanos)) = timestamp(name, wire, r)? {
        let nanos = nanos - nanos % 1000;
        let at = Timestamp::new(seconds, nanos).map_err(|e| invalid_time(name, e))?;
        slot.put(MicroTime(at));
    }
    Ok(())
}

/// A `resource.Quantity`: a message whose field 1 is the quantity's string.
pub fn quantity(
    slot: &mut impl Slot<Quantity>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut body = r.message()?;
    let mut value = String::new();
    while let Some((field, wire)) = body.key()? {
        if field == 1 {
            string(&mut value, name, wire, &mut body, false)?;
        } else {
            body.skip(wire)?;
        }
    }
    slot.put(Quantity(value));
    Ok(())
}

/// An `intstr.IntOrString`: `{1: type (0 int, 1 string), 2: intVal, 3: strVal}`.
pub fn int_or_string(
    slot: &mut impl Slot<IntOrString>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut body = r.message()?;
    let (mut kind, mut int, mut text) = (0i64, 0i32, String::new());
    while let Some((field, wire)) = body.key()? {
        match field {
            1 => int64(&mut kind, name, wire, &mut body, false)?,
            2 => int32(&mut int, name, wire, &mut body, false)?,
            3 => string(&mut text, name, wire, &mut body, false)?,
            _ => body.skip(wire)?,
        }
    }
    slot.put(match kind {
        0 => IntOrString::Int(int),
        1 => IntOrString::String(text),
        other => {
            return Err(DecodeError::InvalidValue {
                name,
                message: format!("IntOrString type {other} (0 is int, 1 is string)"),
            });
        }
    });
    Ok(())
}

/// A `metav1.FieldsV1`: `{1: Raw}`, the JSON document of a managed-fields entry.
pub fn fields_v1(
    slot: &mut impl Slot<FieldsV1>,
    name: &'static str,
    wire: WireType,
    r: &mut Reader<'_>,
) -> Result<(), DecodeError> {
    r.expect(name, WireType::Len, wire)?;
    let mut body = r.message()?;
    let mut value = serde_json::Value::Null;
    while let Some((field, wire)) = body.key()? {
        if field == 1 {
            body.expect(name, WireType::Len, wire)?;
            let raw = body.bytes()?;
            value = serde_json::from_slice(raw).map_err(|e| DecodeError::InvalidValue {
                name,
                message: format!("FieldsV1 is not JSON: {e}"),
            })?;
        } else {
            body.skip(wire)?;
        }
    }
    slot.put(FieldsV1(value));
    Ok(())
}
