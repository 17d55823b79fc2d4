//! The protobuf encoding, the part of it Kubernetes' messages use: varints, 64- and
//! 32-bit fixed values and length-delimited fields (strings, bytes, nested messages,
//! packed repeats). Groups (wire types 3 and 4) are obsolete and never written by the
//! API server; meeting one is an error, not something to skip.
//!
//! A [`Reader`] walks one message's fields in order and hands out borrowed slices: a
//! string or a nested message is never copied until a decoder turns it into an owned
//! value. Unknown fields are skipped by their wire type, so a newer server's fields do
//! not break an older client (protobuf's forward compatibility, which the JSON path
//! gets from serde ignoring unknown keys).
//!
//! ```
//! use protowire::{Reader, WireType};
//!
//! // field 1 (varint) = 150, field 2 (string) = "hi", field 9 (unknown, fixed32)
//! let mut r = Reader::new(b"\x08\x96\x01\x12\x02hi\x4d\x01\x02\x03\x04");
//! let mut seen = Vec::new();
//! while let Some((field, wire_type)) = r.key()? {
//!     match field {
//!         1 => seen.push(format!("{}", r.varint()?)),
//!         2 => seen.push(r.string("name")?.to_string()),
//!         _ => r.skip(wire_type)?,
//!     }
//! }
//! assert_eq!(seen, ["150", "hi"]);
//! # Ok::<(), protowire::DecodeError>(())
//! ```

/// How a field's value is laid out (the low 3 bits of its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    /// int32, int64, uint32, uint64, bool, enum: a varint.
    Varint,
    /// fixed64, sfixed64, double: 8 bytes, little-endian.
    I64,
    /// string, bytes, embedded messages, packed repeated fields: a varint length, then
    /// that many bytes.
    Len,
    /// fixed32, sfixed32, float: 4 bytes, little-endian.
    I32,
}

impl WireType {
    fn from_bits(bits: u64) -> Option<Self> {
        match bits {
            0 => Some(Self::Varint),
            1 => Some(Self::I64),
            2 => Some(Self::Len),
            5 => Some(Self::I32),
            _ => None,
        }
    }
}

/// Why bytes could not be decoded. Every variant says where (`offset`, from the start
/// of the message the reader was made for), so a fuzz finding or a server bug can be
/// located in a capture.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message ends in the middle of a value.
    #[error("truncated message: a value at offset {offset} runs past the end")]
    Truncated {
        /// Where the value starts.
        offset: usize,
    },
    /// A varint of more than 10 bytes (more than 64 bits).
    #[error("varint at offset {offset} is longer than 10 bytes")]
    VarintTooLong {
        /// Where the varint starts.
        offset: usize,
    },
    /// A key with wire type 3, 4, 6 or 7 (groups or undefined).
    #[error("unsupported wire type {wire_type} at offset {offset}")]
    UnsupportedWireType {
        /// The wire type's bits.
        wire_type: u8,
        /// Where the key starts.
        offset: usize,
    },
    /// A key with field number 0 or above 2^29 - 1.
    #[error("invalid field number {field} at offset {offset}")]
    InvalidField {
        /// The field number read.
        field: u64,
        /// Where the key starts.
        offset: usize,
    },
    /// A known field carried a wire type other than its declared one.
    #[error("field {name} at offset {offset} has wire type {found:?}, expected {expected:?}")]
    WrongWireType {
        /// The field's name in the .proto file.
        name: &'static str,
        /// The wire type the field is declared with.
        expected: WireType,
        /// The wire type found.
        found: WireType,
        /// Where the value starts.
        offset: usize,
    },
    /// A string field that is not UTF-8.
    #[error("field {name} at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The field's name in the .proto file.
        name: &'static str,
        /// Where the string starts.
        offset: usize,
    },
    /// Bytes that are not what Kubernetes sends (no `k8s\0` magic, an encoding we do
    /// not read, ...).
    #[error("not a Kubernetes protobuf message: {0}")]
    Envelope(String),
    /// A value that decodes but makes no sense for its field (an unknown enum
    /// number, a negative length, ...).
    #[error("field {name}: {message}")]
    InvalidValue {
        /// The field's name in the .proto file.
        name: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// Reads the fields of one message in order, borrowing from its bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf[0]` in the outermost message, for error messages.
    base: usize,
    /// Whether decoders skip `metadata.managedFields` (passed on to embedded messages).
    skip_managed_fields: bool,
}

/// The largest field number protobuf allows.
const MAX_FIELD: u64 = (1 << 29) - 1;

impl<'a> Reader<'a> {
    /// A reader over one whole message.
    pub fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            base: 0,
            skip_managed_fields: false,
        }
    }

    /// This reader, telling the object decoders to skip `metadata.managedFields`
    /// (without parsing it: the entries are length-delimited, so skipping costs one
    /// varint each), as the informers' `strip_managed_fields` asks. Embedded messages
    /// inherit it.
    pub fn skipping_managed_fields(mut self, skip: bool) -> Self {
        self.skip_managed_fields = skip;
        self
    }

    /// Whether [`skipping_managed_fields`](Self::skipping_managed_fields) is on.
    pub fn skips_managed_fields(&self) -> bool {
        self.skip_managed_fields
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// The offset of the next byte, from the start of the outermost message.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// The next field's number and wire type; `None` at the end of the message.
    pub fn key(&mut self) -> Result<Option<(u32, WireType)>, DecodeError> {
        if self.is_empty() {
            return Ok(None);
        }
        let offset = self.offset();
        let key = self.varint()?;
        let field = key >> 3;
        let bits = key & 7;
        let wire_type = WireType::from_bits(bits).ok_or(DecodeError::UnsupportedWireType {
            wire_type: bits as u8,
            offset,
        })?;
        if field == 0 || field > MAX_FIELD {
            return Err(DecodeError::InvalidField { field, offset });
        }
        Ok(Some((field as u32, wire_type)))
    }

    /// A varint (uint64, or the bits of any integer type).
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let offset = self.offset();
        let mut value = 0u64;
        for (i, &byte) in self.buf[self.pos..].iter().enumerate().take(10) {
            // The 10th byte may only carry the top bit of 64.
            if i == 9 && byte > 1 {
                return Err(DecodeError::VarintTooLong { offset });
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        if self.buf.len() - self.pos >= 10 {
            Err(DecodeError::VarintTooLong { offset })
        } else {
            Err(DecodeError::Truncated { offset })
        }
    }

    /// An `int64` (a varint, two's complement).
    pub fn int64(&mut self) -> Result<i64, DecodeError> {
        self.varint().map(|v| v as i64)
    }

    /// An `int32`: negative values are sign-extended to 10 bytes on the wire; the
    /// upper bits are dropped as protobuf's own decoders do.
    pub fn int32(&mut self) -> Result<i32, DecodeError> {
        self.varint().map(|v| v as i32)
    }

    /// A `bool`: any non-zero varint is true.
    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        self.varint().map(|v| v != 0)
    }

    /// A length-delimited value's bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let offset = self.offset();
        let len = self.varint()?;
        let start = self.pos;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= self.buf.len())
            .ok_or(DecodeError::Truncated { offset })?;
        self.pos = end;
        Ok(&self.buf[start..end])
    }

    /// A `string` field named `name` (for the error message).
    pub fn string(&mut self, name: &'static str) -> Result<&'a str, DecodeError> {
        let offset = self.offset();
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { name, offset })
    }

    /// An embedded message: a reader over its bytes.
    pub fn message(&mut self) -> Result<Reader<'a>, DecodeError> {
        let len_offset = self.offset();
        let bytes = self.bytes()?;
        let header = self.offset() - len_offset - bytes.len();
        Ok(Reader {
            buf: bytes,
            pos: 0,
            base: len_offset + header,
            skip_managed_fields: self.skip_managed_fields,
        })
    }

    /// A `fixed64` (also the bits of `sfixed64` and `double`).
    pub fn fixed64(&mut self) -> Result<u64, DecodeError> {
        let bytes = self.take(8)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(le))
    }

    /// A `fixed32` (also the bits of `sfixed32` and `float`).
    pub fn fixed32(&mut self) -> Result<u32, DecodeError> {
        let bytes = self.take(4)?;
        let mut le = [0u8; 4];
        le.copy_from_slice(bytes);
        Ok(u32::from_le_bytes(le))
    }

    /// Skips a value of `wire_type`: a field this decoder does not know (or does not
    /// want, such as `managedFields`).
    pub fn skip(&mut self, wire_type: WireType) -> Result<(), DecodeError> {
        match wire_type {
            WireType::Varint => self.varint().map(drop),
            WireType::I64 => self.take(8).map(drop),
            WireType::Len => self.bytes().map(drop),
            WireType::I32 => self.take(4).map(drop),
        }
    }

    /// Checks that a known field arrived with its declared wire type.
    pub fn expect(
        &self,
        name: &'static str,
        expected: WireType,
        found: WireType,
    ) -> Result<(), DecodeError> {
        if expected == found {
            Ok(())
        } else {
            Err(DecodeError::WrongWireType {
                name,
                expected,
                found,
                offset: self.offset(),
            })
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let offset = self.offset();
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(DecodeError::Truncated { offset })?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The varint encoding, for building test messages.
    pub(crate) fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    }

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [0, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX] {
            let bytes = varint(v);
            let mut r = Reader::new(&bytes);
            assert_eq!(r.varint(), Ok(v));
            assert!(r.is_empty());
        }
        assert_eq!(varint(u64::MAX).len(), 10);
    }

    #[test]
    fn a_negative_int32_is_ten_bytes_and_reads_back() {
        let bytes = varint(-5i64 as u64);
        assert_eq!(bytes.len(), 10);
        assert_eq!(Reader::new(&bytes).int32(), Ok(-5));
    }

    #[test]
    fn huge_and_truncated_varints_are_errors_not_panics() {
        assert_eq!(
            Reader::new(&[0xff; 11]).varint(),
            Err(DecodeError::VarintTooLong { offset: 0 })
        );
        // 10 bytes whose last carries more than the 64th bit.
        let mut too_big = vec![0xff; 9];
        too_big.push(0x02);
        assert_eq!(
            Reader::new(&too_big).varint(),
            Err(DecodeError::VarintTooLong { offset: 0 })
        );
        assert_eq!(
            Reader::new(&[0x80, 0x80]).varint(),
            Err(DecodeError::Truncated { offset: 0 })
        );
        assert_eq!(
            Reader::new(&[]).varint(),
            Err(DecodeError::Truncated { offset: 0 })
        );
    }

    #[test]
    fn a_length_past_the_end_is_truncated() {
        // field 1, Len, length 5, 2 bytes.
        let mut r = Reader::new(b"\x0a\x05ab");
        assert_eq!(r.key(), Ok(Some((1, WireType::Len))));
        assert_eq!(r.bytes(), Err(DecodeError::Truncated { offset: 1 }));
        // A length near u64::MAX must not overflow the arithmetic.
        let mut huge = vec![0x0a];
        huge.extend(varint(u64::MAX));
        let mut r = Reader::new(&huge);
        r.key().expect("a key");
        assert!(matches!(r.bytes(), Err(DecodeError::Truncated { .. })));
    }

    #[test]
    fn groups_and_field_zero_are_refused() {
        // field 1, wire type 3 (start group).
        assert_eq!(
            Reader::new(&[0x0b]).key(),
            Err(DecodeError::UnsupportedWireType {
                wire_type: 3,
                offset: 0
            })
        );
        assert_eq!(
            Reader::new(&[0x02, 0x00]).key(),
            Err(DecodeError::InvalidField {
                field: 0,
                offset: 0
            })
        );
    }

    #[test]
    fn unknown_fields_of_every_wire_type_are_skipped() {
        let mut msg = Vec::new();
        msg.extend([0x08, 0x01]); // 1: varint 1
        msg.extend([0x11]); // 2: fixed64
        msg.extend(7u64.to_le_bytes());
        msg.extend([0x1a, 0x03]); // 3: len 3
        msg.extend(b"abc");
        msg.extend([0x25]); // 4: fixed32
        msg.extend(9u32.to_le_bytes());
        msg.extend([0x28, 0x2a]); // 5: varint 42, the one we want
        let mut r = Reader::new(&msg);
        let mut found = None;
        while let Some((field, wire_type)) = r.key().expect("valid") {
            if field == 5 {
                found = Some(r.varint().expect("varint"));
            } else {
                r.skip(wire_type).expect("skippable");
            }
        }
        assert_eq!(found, Some(42));
    }

    #[test]
    fn nested_messages_report_offsets_in_the_outer_message() {
        // field 1, Len 4: { field 2, Len 2: 0xff 0xfe (not UTF-8) }
        let msg = [0x0a, 0x04, 0x12, 0x02, 0xff, 0xfe];
        let mut r = Reader::new(&msg);
        r.key().expect("key");
        let mut inner = r.message().expect("message");
        assert_eq!(inner.offset(), 2);
        inner.key().expect("key");
        assert_eq!(
            inner.string("name"),
            Err(DecodeError::InvalidUtf8 {
                name: "name",
                offset: 3
            })
        );
    }

    #[test]
    fn a_wrong_wire_type_names_the_field() {
        let r = Reader::new(b"");
        assert!(matches!(
            r.expect("metadata", WireType::Len, WireType::Varint),
            Err(DecodeError::WrongWireType {
                name: "metadata",
                ..
            })
        ));
    }
}
