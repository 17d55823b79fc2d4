//! The JSON Patch (RFC 6902) a defaulting webhook returns.
//!
//! The API server applies the patch to the object *it* sent, so the patch is computed
//! from that JSON (the raw object), not from our decoded copy of it. But decoding into a
//! Rust type and serializing back is not lossless: fields the type does not know (a CRD
//! newer than the binary) disappear, `"creationTimestamp": null` becomes nothing, ... A
//! plain diff from the raw object to the defaulted one would therefore *remove* those
//! fields, silently deleting data the webhook never meant to touch. So, like
//! controller-runtime (`dropSchemeRemovals`), the removals that the round trip alone
//! produces are dropped; removals the defaulter made on purpose are kept.
//!
//! ```
//! use serde_json::json;
//!
//! // As sent: a field our type does not know, and a null timestamp.
//! let raw = json!({"metadata": {"name": "a", "creationTimestamp": null}, "spec": {"future": 1}});
//! // Decoded and re-encoded (both unknowns lost), then defaulted (a label added).
//! let decoded = json!({"metadata": {"name": "a"}, "spec": {}});
//! let defaulted = json!({"metadata": {"name": "a", "labels": {"app": "a"}}, "spec": {}});
//!
//! let patch = webhook::defaulting_patch(&raw, &decoded, &defaulted);
//! let mut applied = raw.clone();
//! json_patch::patch(&mut applied, &patch).unwrap();
//! // The label is added; the unknown field and the null survive.
//! assert_eq!(applied, json!({
//!     "metadata": {"name": "a", "creationTimestamp": null, "labels": {"app": "a"}},
//!     "spec": {"future": 1},
//! }));
//! ```

use std::collections::HashSet;

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

/// The patch that turns `raw` (the object as the API server sent it) into `defaulted`,
/// minus the removals that turning `raw` into `decoded` (the same object decoded and
/// re-encoded, before defaulting) would also make. Empty when the defaulter changed
/// nothing (`decoded == defaulted`).
pub fn defaulting_patch(raw: &Value, decoded: &Value, defaulted: &Value) -> Patch {
    if decoded == defaulted {
        return Patch::default();
    }
    let mut patch = json_patch::diff(raw, defaulted);
    let removes = |op: &PatchOperation| matches!(op, PatchOperation::Remove(_));
    if !patch.0.iter().any(removes) {
        return patch;
    }
    let lost_in_round_trip: HashSet<String> = json_patch::diff(raw, decoded)
        .0
        .iter()
        .filter(|op| removes(op))
        .map(|op| op.path().to_string())
        .collect();
    patch
        .0
        .retain(|op| !(removes(op) && lost_in_round_trip.contains(&op.path().to_string())));
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(raw: &Value, patch: &Patch) -> Value {
        let mut doc = raw.clone();
        json_patch::patch(&mut doc, patch).unwrap();
        doc
    }

    #[test]
    fn unchanged_object_gives_no_patch_even_if_the_round_trip_lost_fields() {
        let raw = json!({"a": 1, "unknown": true});
        let decoded = json!({"a": 1});
        assert!(defaulting_patch(&raw, &decoded, &decoded).0.is_empty());
    }

    #[test]
    fn deliberate_removals_are_kept_round_trip_ones_dropped() {
        let raw = json!({"keep": {"unknown": 1}, "drop_me": "x", "n": 1});
        let decoded = json!({"keep": {}, "drop_me": "x", "n": 1});
        // The defaulter removes drop_me and changes n.
        let defaulted = json!({"keep": {}, "n": 2});
        let patch = defaulting_patch(&raw, &decoded, &defaulted);
        assert_eq!(
            apply(&raw, &patch),
            json!({"keep": {"unknown": 1}, "n": 2}),
            "{patch:?}"
        );
    }

    #[test]
    fn additions_and_replacements_apply_to_the_raw_object() {
        let raw = json!({"spec": {"list": [1, 2], "s": "a"}});
        let defaulted = json!({"spec": {"list": [1, 2, 3], "s": "b", "new": {"x": null}}});
        let patch = defaulting_patch(&raw, &raw, &defaulted);
        assert_eq!(apply(&raw, &patch), defaulted);
    }
}
