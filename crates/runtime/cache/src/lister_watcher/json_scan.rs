//! Finding things in a raw JSON response without decoding it.
//!
//! Two jobs need a few bytes' position in a response before (or instead of) decoding
//! it into objects:
//!
//! * the [pager](super::pager) reads a list's `metadata.continue` token from the head
//!   of the body, so it can ask for the next page before decoding this one;
//! * `without_managed_fields` cuts `metadata.managedFields` out of a watch event or
//!   a list page, so objects are decoded without them (client-go's
//!   `TransformStripManagedFields`, done before decoding instead of after: those
//!   entries are about half of a typical object's decoded size and a third of its
//!   decoding time, see docs/benchmarks.md).
//!
//! Values are skipped with serde_json's [`IgnoredAny`], which checks their syntax as it
//! goes but allocates nothing. Every function here answers `None` for anything it does
//! not understand, and the caller then decodes the untouched bytes: a wrong guess can
//! cost speed, never correctness.
//!
//! What the cut removes is checked to be JSON (syntax and UTF-8: [`IgnoredAny`] does not
//! check that strings are UTF-8, so the removed bytes are checked for it separately), so
//! a body the decoder refuses is still refused after the cut. It is not checked to be
//! *managedFields entries*: entries the decoder would refuse (a malformed `time`, say)
//! are dropped unread, which is the point of cutting them out. The fuzz target
//! `managed_fields` checks these rules (docs/reliability.md).

use std::ops::Range;

use serde::de::{DeserializeOwned, IgnoredAny};

/// Decodes one JSON value at the start of `input`; returns it and what follows it.
pub(crate) fn next_value<T: DeserializeOwned>(input: &[u8]) -> Option<(T, &[u8])> {
    let mut stream = serde_json::Deserializer::from_slice(input).into_iter::<T>();
    let value = stream.next()?.ok()?;
    Some((value, &input[stream.byte_offset()..]))
}

/// `input` without its leading JSON whitespace.
pub(crate) fn skip_ws(input: &[u8]) -> &[u8] {
    &input[ws_end(input, 0)..]
}

/// The first position at or after `pos` that is not JSON whitespace.
fn ws_end(buf: &[u8], mut pos: usize) -> usize {
    while buf.get(pos).is_some_and(|b| b.is_ascii_whitespace()) {
        pos += 1;
    }
    pos
}

/// Where the JSON value starting at `pos` ends.
fn value_end(buf: &[u8], pos: usize) -> Option<usize> {
    let mut stream = serde_json::Deserializer::from_slice(&buf[pos..]).into_iter::<IgnoredAny>();
    stream.next()?.ok()?;
    Some(pos + stream.byte_offset())
}

/// Where the string starting at `pos` (on its opening quote) ends, just after its
/// closing quote.
fn string_end(buf: &[u8], pos: usize) -> Option<usize> {
    if buf.get(pos) != Some(&b'"') {
        return None;
    }
    let mut i = pos + 1;
    while i < buf.len() {
        match buf[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// One member of a JSON object.
struct Member {
    /// The value's bytes.
    value: Range<usize>,
    /// The bytes to remove to drop the member and keep the object valid: the member
    /// and the comma before it, or (for the first member) the comma after it.
    removal: Range<usize>,
}

/// The member `key` of the JSON object starting at `pos`. `key` is compared with the
/// raw bytes between the quotes, so a key written with escapes is not found.
fn find_member(buf: &[u8], pos: usize, key: &[u8]) -> Option<Member> {
    if buf.get(pos) != Some(&b'{') {
        return None;
    }
    let mut pos = pos + 1;
    let mut comma_before: Option<usize> = None;
    loop {
        pos = ws_end(buf, pos);
        if buf.get(pos) == Some(&b'}') {
            return None;
        }
        let key_start = pos;
        let key_end = string_end(buf, pos)?;
        pos = ws_end(buf, key_end);
        if buf.get(pos) != Some(&b':') {
            return None;
        }
        let value_start = ws_end(buf, pos + 1);
        let end = value_end(buf, value_start)?;
        let after = ws_end(buf, end);
        if &buf[key_start + 1..key_end - 1] == key {
            let removal = match comma_before {
                Some(comma) => comma..end,
                // The first member: take the comma after it, if any.
                None if buf.get(after) == Some(&b',') => key_start..ws_end(buf, after + 1),
                None => key_start..end,
            };
            return Some(Member {
                value: value_start..end,
                removal,
            });
        }
        match buf.get(after) {
            Some(b',') => {
                comma_before = Some(after);
                pos = after + 1;
            }
            _ => return None,
        }
    }
}

/// What to cut out of the object starting at `pos` to drop `metadata.managedFields`.
fn managed_fields_in_object(buf: &[u8], pos: usize) -> Option<Range<usize>> {
    let metadata = find_member(buf, pos, b"metadata")?;
    Some(find_member(buf, metadata.value.start, b"managedFields")?.removal)
}

/// Writes `input` without the ranges in `cuts` (sorted, not overlapping) to `out`.
fn cut(input: &[u8], cuts: &[Range<usize>], out: &mut Vec<u8>) {
    out.clear();
    let mut from = 0;
    for c in cuts {
        out.extend_from_slice(&input[from..c.start]);
        from = c.end;
    }
    out.extend_from_slice(&input[from..]);
}

/// Writes to `out` a watch event (`{"type":..,"object":{..}}`) or a list page
/// (`{..,"items":[..]}`) with `metadata.managedFields` removed from its object(s), and
/// returns true; returns false (and leaves `out` alone) when there is nothing to
/// remove or the input is not shaped like either. `out` is the caller's, so a
/// stream of events reuses one buffer.
///
/// Public only for the fuzz targets (`fuzz/`, docs/reliability.md); not part of the
/// crate's API.
#[doc(hidden)]
pub fn without_managed_fields(input: &[u8], out: &mut Vec<u8>) -> bool {
    let start = ws_end(input, 0);
    if let Some(object) = find_member(input, start, b"object") {
        let Some(removal) = managed_fields_in_object(input, object.value.start) else {
            return false;
        };
        if !is_utf8(input, std::slice::from_ref(&removal)) {
            return false;
        }
        cut(input, &[removal], out);
        return true;
    }
    let Some(items) = find_member(input, start, b"items") else {
        return false;
    };
    let mut cuts = Vec::new();
    let mut pos = items.value.start + 1;
    loop {
        pos = ws_end(input, pos);
        match input.get(pos) {
            Some(b']') | None => break,
            Some(b',') => pos += 1,
            Some(_) => {
                cuts.extend(managed_fields_in_object(input, pos));
                let Some(end) = value_end(input, pos) else {
                    return false;
                };
                pos = end;
            }
        }
    }
    if cuts.is_empty() || !is_utf8(input, &cuts) {
        return false;
    }
    cut(input, &cuts, out);
    true
}

/// Whether the bytes in `ranges` are UTF-8, as the decoder requires of every string.
fn is_utf8(input: &[u8], ranges: &[Range<usize>]) -> bool {
    ranges
        .iter()
        .all(|r| std::str::from_utf8(&input[r.clone()]).is_ok())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::without_managed_fields;

    fn strip(input: &str) -> Option<Value> {
        // A used buffer, as a stream reuses it.
        let mut out = b"left over".to_vec();
        without_managed_fields(input.as_bytes(), &mut out)
            .then(|| serde_json::from_slice(&out).expect("the result is valid JSON"))
    }

    #[test]
    fn cuts_managed_fields_out_of_a_watch_event_wherever_it_is_in_metadata() {
        let middle = r#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}],"uid":"u"},"data":{"k":"v"}}}"#;
        assert_eq!(
            strip(middle),
            Some(
                json!({"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","uid":"u"},"data":{"k":"v"}}})
            )
        );
        let first =
            r#"{"type":"MODIFIED","object":{"metadata": { "managedFields" : [] , "name":"a"}}}"#;
        assert_eq!(
            strip(first),
            Some(json!({"type":"MODIFIED","object":{"metadata":{"name":"a"}}}))
        );
        let only = r#"{"object":{"metadata":{"managedFields":[{"a":1}]}},"type":"DELETED"}"#;
        assert_eq!(
            strip(only),
            Some(json!({"object":{"metadata":{}},"type":"DELETED"}))
        );
    }

    #[test]
    fn cuts_managed_fields_out_of_every_item_of_a_list_page() {
        let page = r#"{"kind":"List","metadata":{"continue":"x"},"items":[
            {"metadata":{"name":"a","managedFields":[{"m":1}]}},
            {"metadata":{"name":"b"}},
            {"metadata":{"managedFields":[],"name":"c"},"spec":{"managedFields":"kept: not metadata"}}]}"#;
        assert_eq!(
            strip(page),
            Some(json!({"kind":"List","metadata":{"continue":"x"},"items":[
                {"metadata":{"name":"a"}},
                {"metadata":{"name":"b"}},
                {"metadata":{"name":"c"},"spec":{"managedFields":"kept: not metadata"}}]}))
        );
    }

    #[test]
    fn leaves_alone_what_it_does_not_understand() {
        // Nothing to cut.
        assert_eq!(
            strip(r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#),
            None
        );
        assert_eq!(strip(r#"{"items":[{"metadata":{"name":"a"}}]}"#), None);
        // Look-alikes that are not metadata.managedFields: inside a string, at another
        // depth, and a key that only ends with the name.
        let lookalikes = r#"{"type":"ADDED","object":{"data":{"x":"\"managedFields\":[]"},"metadata":{"a\"managedFields":1,"labels":{"managedFields":"v"}}}}"#;
        assert_eq!(strip(lookalikes), None);
        // Truncated or not JSON.
        assert_eq!(
            strip(r#"{"type":"ADDED","object":{"metadata":{"managedFields":[{"#),
            None
        );
        assert_eq!(strip("not json"), None);
        assert_eq!(strip(""), None);
        assert_eq!(strip("[1,2]"), None);
    }

    /// Found by the `managed_fields` fuzz target: serde_json's `IgnoredAny` skips
    /// strings without checking that they are UTF-8, so a managedFields entry with an
    /// invalid byte was cut out and the line, which the decoder refuses as it is, came
    /// out valid. The cut must never make acceptable what the decoder refuses.
    #[test]
    fn declines_a_cut_of_bytes_that_are_not_utf8() {
        let mut out = b"left over".to_vec();
        let event = b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"k\x8d\"}]}}}";
        assert!(serde_json::from_slice::<Value>(event).is_err());
        assert!(!without_managed_fields(event, &mut out));
        assert_eq!(out, b"left over");
        let page = b"{\"items\":[{\"metadata\":{\"managedFields\":[]}},{\"metadata\":{\"managedFields\":[\"\xff\"]}}]}";
        assert!(!without_managed_fields(page, &mut out));
        // The same bytes as valid UTF-8 are cut.
        assert_eq!(
            strip(
                "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"k\u{8d}\"}]}}}"
            ),
            Some(json!({"type":"ADDED","object":{"metadata":{"name":"a"}}}))
        );
    }
}
