//! The managedFields cutter (`cache::lister_watcher::json_scan::without_managed_fields`):
//! a hand-written JSON scanner that runs over every watch event line and list page
//! the API server sends when an informer strips managedFields.
//!
//! Checks:
//! * when it declines (returns false), the output buffer is untouched;
//! * what it writes parses as JSON only if the input did (it never turns a broken
//!   body into a valid one);
//! * on valid JSON (without duplicate or escaped keys, the two spellings the scanner
//!   documents it does not follow), it cuts exactly what serde_json's own reading
//!   says: the input with `object.metadata.managedFields` (a watch event) or every
//!   `items[*].metadata.managedFields` (a list page) removed, and it declines only
//!   when there is nothing to remove.

#![no_main]

use std::fmt;

use cache::lister_watcher::json_scan::without_managed_fields;
use libfuzzer_sys::fuzz_target;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Reads a JSON value like `serde_json::Value` does, noting whether any object has a
/// duplicate key or a key written with escapes.
struct Strict<'a> {
    odd: &'a mut bool,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A key, and whether serde_json had to unescape it (then it is not borrowed).
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = (String, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = (String, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok((v.to_string(), false))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((v.to_string(), true))
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Strict {
            odd: &mut *self.odd,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((key, escaped)) = map.next_key_seed(Key)? {
            let value = map.next_value_seed(Strict {
                odd: &mut *self.odd,
            })?;
            *self.odd |= escaped;
            *self.odd |= out.insert(key, value).is_some();
        }
        Ok(Value::Object(out))
    }
}

/// `input` parsed, and whether it has duplicate or escaped keys.
fn parse(input: &[u8]) -> Option<(Value, bool)> {
    let mut odd = false;
    let mut de = serde_json::Deserializer::from_slice(input);
    let value = Strict { odd: &mut odd }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some((value, odd))
}

fn drop_managed_fields(object: &mut Value) {
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        metadata.remove("managedFields");
    }
}

/// What the cut must produce: a watch event's object, or a list's items, without
/// `metadata.managedFields`.
fn expected(mut value: Value) -> Value {
    if let Value::Object(top) = &mut value {
        if let Some(object) = top.get_mut("object") {
            drop_managed_fields(object);
        } else if let Some(Value::Array(items)) = top.get_mut("items") {
            items.iter_mut().for_each(drop_managed_fields);
        }
    }
    value
}

const UNTOUCHED: &[u8] = b"left over from the last line";

fuzz_target!(|data: &[u8]| {
    let mut out = UNTOUCHED.to_vec();
    let cut = without_managed_fields(data, &mut out);
    if !cut {
        assert_eq!(out, UNTOUCHED, "declined but wrote");
    }
    let input = serde_json::from_slice::<Value>(data).is_ok();
    if cut && serde_json::from_slice::<Value>(&out).is_ok() {
        assert!(
            input,
            "made valid JSON of invalid input:\n{}\n->\n{}",
            String::from_utf8_lossy(data),
            String::from_utf8_lossy(&out)
        );
    }
    let Some((value, false)) = parse(data) else {
        return;
    };
    let want = expected(value.clone());
    if cut {
        let got: Value = serde_json::from_slice(&out).unwrap_or_else(|e| {
            panic!(
                "cut valid JSON into invalid JSON ({e}):\n{}\n->\n{}",
                String::from_utf8_lossy(data),
                String::from_utf8_lossy(&out)
            )
        });
        assert_eq!(got, want, "input:\n{}", String::from_utf8_lossy(data));
        assert_ne!(value, want, "cut although there was nothing to remove");
    } else {
        assert_eq!(
            value, want,
            "declined although there was something to remove"
        );
    }
});
