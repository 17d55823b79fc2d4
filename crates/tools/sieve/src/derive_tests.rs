//! Tests of [`super`]: each value class on a small hand-written schema, the spec kept
//! valid at every step, the repository's CRDs, the patterns, the final specs.

use serde_json::{Value as Json, json};

use super::pattern::Pattern as Expr;
use super::*;
use crate::workload::Step;

/// A CRD of `Widget` in `example.com`, serving `v1` (and `v2`, not served), whose spec
/// schema is `spec`.
fn crd(spec: Json) -> Json {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}},
                {"name": "v2", "served": false, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}},
            ],
        },
    })
}

/// A spec schema of one field `f`.
fn one_field(field: Json, required: bool) -> Json {
    let mut schema = json!({"type": "object", "properties": {"f": field}});
    if required {
        schema["required"] = json!(["f"]);
    }
    schema
}

fn sample(spec: Json) -> Json {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

/// Derives, checks the workload parses from its text, that every step keeps the spec
/// valid, and that the steps are create, updates, delete, recreate.
fn derived(spec_schema: Json, spec: Json, depth: Depth) -> Derived {
    let options = DeriveOptions {
        depth,
        max_steps: None,
    };
    let derived = derive(&crd(spec_schema.clone()), &sample(spec.clone()), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let reparsed =
        Workload::parse(&derived.text).unwrap_or_else(|e| panic!("{e}\n{}", derived.text));
    assert_eq!(reparsed, derived.workload);
    assert_eq!(derived.steps.len(), derived.workload.steps.len());
    let n = derived.workload.steps.len();
    let mut state = spec.clone();
    for (i, step) in derived.workload.steps.iter().enumerate() {
        match (i, &step.action) {
            (0, Action::Create { spec: created }) => assert_eq!(created, &spec),
            (i, Action::Delete) if i == n - 2 => {}
            (i, Action::Recreate { spec: again, .. }) if i == n - 1 => assert_eq!(again, &spec),
            (_, Action::Update { patch }) => {
                state = merge_patch(&state, patch);
                schema::validate(&state, &spec_schema, "spec")
                    .unwrap_or_else(|e| panic!("step {}: {e}\n{}", step.number, derived.text));
            }
            (_, action) => panic!("step {}: unexpected {action:?}", step.number),
        }
    }
    derived
}

/// `(field, class, value)` of each update.
pub(super) fn updates(derived: &Derived) -> Vec<(String, ValueClass, Json)> {
    derived
        .steps
        .iter()
        .filter_map(|s| Some((s.field.clone()?, s.class, s.value.clone()?)))
        .collect()
}

fn values(derived: &Derived) -> Vec<(ValueClass, Json)> {
    updates(derived)
        .into_iter()
        .map(|(_, c, v)| (c, v))
        .collect()
}

#[test]
fn each_enum_member_other_than_the_current_one() {
    let schema = one_field(json!({"type": "string", "enum": ["a", "b", "c"]}), true);
    let full = derived(schema.clone(), json!({"f": "b"}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (ValueClass::EnumMember, json!("a")),
            (ValueClass::EnumMember, json!("c"))
        ]
    );
    let short = derived(schema, json!({"f": "b"}), Depth::Short);
    assert_eq!(values(&short), [(ValueClass::EnumMember, json!("a"))]);
    assert_eq!(
        step_notes(&short.text),
        [
            (1, "create the sample w".to_string()),
            (2, "spec.f: enum member -> \"a\"".into()),
            (3, "delete w".into()),
            (4, "recreate w with the sample's spec".into()),
        ]
    );
    assert!(
        short
            .text
            .contains("  # step 2: spec.f: enum member -> \"a\"\n  - update:"),
        "{}",
        short.text
    );
}

#[test]
fn integer_bounds_and_just_inside_them_exclusive_ones_honoured() {
    let schema = one_field(
        json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": true}),
        true,
    );
    use ValueClass::*;
    let full = derived(schema.clone(), json!({"f": 5}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Minimum, json!(1)),
            (Maximum, json!(9)),
            (AboveMinimum, json!(2)),
            (BelowMaximum, json!(8))
        ]
    );
    // The newer form: the exclusive bound is the number itself.
    let schema = one_field(
        json!({"type": "integer", "exclusiveMinimum": 3, "maximum": 7}),
        true,
    );
    let full = derived(schema, json!({"f": 7}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Minimum, json!(4)),
            (AboveMinimum, json!(5)),
            (BelowMaximum, json!(6))
        ]
    );
    // Short: a bound other than the current value.
    let schema = one_field(
        json!({"type": "integer", "minimum": 1, "maximum": 10}),
        true,
    );
    let short = derived(schema, json!({"f": 1}), Depth::Short);
    assert_eq!(values(&short), [(Maximum, json!(10))]);
}

#[test]
fn unbounded_integers_go_negative_and_grow_numbers_grow_and_booleans_flip() {
    use ValueClass::*;
    let schema = one_field(json!({"type": "integer", "format": "int32"}), true);
    let full = derived(schema.clone(), json!({"f": 4}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Negative, json!(-1)),
            (Incremented, json!(5)),
            (Larger, json!(14))
        ]
    );
    // Short: the value the schema forgot to refuse, first (the complaints oracle's).
    let short = derived(schema, json!({"f": 4}), Depth::Short);
    assert_eq!(values(&short), [(Negative, json!(-1))]);
    // With a minimum, no negative value: the bounds.
    let schema = one_field(json!({"type": "integer", "minimum": 0}), true);
    let full = derived(schema, json!({"f": 4}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Minimum, json!(0)),
            (AboveMinimum, json!(1)),
            (Incremented, json!(5)),
            (Larger, json!(14))
        ]
    );
    let schema = one_field(
        json!({"type": "number", "minimum": 0.5, "maximum": 1.5}),
        true,
    );
    let full = derived(schema, json!({"f": 1.0}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Minimum, json!(0.5)),
            (Maximum, json!(1.5)),
            (AboveMinimum, json!(0.75)),
            (BelowMaximum, json!(1.25))
        ]
    );
    let schema = one_field(json!({"type": "boolean"}), true);
    assert_eq!(
        values(&derived(schema, json!({"f": true}), Depth::Full)),
        [(Flipped, json!(false))]
    );
}

#[test]
fn strings_match_their_pattern_and_lengths_or_are_skipped_with_a_reason() {
    let source = "^[a-z][a-z0-9-]{2,5}$";
    let schema = one_field(
        json!({"type": "string", "pattern": source, "minLength": 5}),
        true,
    );
    let full = derived(schema, json!({"f": "abcde"}), Depth::Full);
    let [(ValueClass::Pattern, Json::String(value))] = &values(&full)[..] else {
        panic!("{}", full.text);
    };
    assert!(
        Expr::parse(source).unwrap().is_match(value) && value.len() >= 5,
        "{value}"
    );
    assert_ne!(value, "abcde");

    let schema = one_field(json!({"type": "string", "pattern": "^(?=a)b$"}), false);
    let full = derived(schema, json!({"f": "x"}), Depth::Full);
    assert_eq!(values(&full), [(ValueClass::Removed, Json::Null)]);
    assert!(
        full.text
            .contains("# Not exercised:\n#   spec.f: the pattern \"^(?=a)b$\" is not supported"),
        "{}",
        full.text
    );

    let schema = one_field(
        json!({"type": "string", "minLength": 2, "maxLength": 4}),
        true,
    );
    let full = derived(schema, json!({"f": "ab"}), Depth::Full);
    use ValueClass::*;
    assert_eq!(
        values(&full),
        [
            (Changed, json!("ab-2")),
            (Shortest, json!("xx")),
            (Longest, json!("abxx"))
        ]
    );

    let schema = one_field(json!({"type": "string", "format": "date-time"}), true);
    let full = derived(schema, json!({"f": "2026-01-01T00:00:00Z"}), Depth::Full);
    assert_eq!(values(&full), [(Format, json!("2026-06-30T12:30:00Z"))]);
    let schema = one_field(json!({"type": "string", "format": "isbn"}), true);
    let full = derived(schema, json!({"f": "x"}), Depth::Full);
    assert!(values(&full).is_empty() && full.text.contains("format \"isbn\" is not known"));
}

#[test]
fn arrays_grow_and_shrink_within_min_and_max_items() {
    use ValueClass::*;
    let array = json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3,
                       "x-kubernetes-list-type": "set"});
    let schema = one_field(array.clone(), true);
    let full = derived(schema.clone(), json!({"f": ["a", "b"]}), Depth::Full);
    assert_eq!(
        values(&full),
        [
            (Grown, json!(["a", "b", "sieve-2"])),
            (Shrunk, json!(["a", "b"]))
        ]
    );
    // At maxItems: only shrunk; at minItems: only grown.
    let full = derived(schema.clone(), json!({"f": ["a", "b", "c"]}), Depth::Full);
    assert_eq!(values(&full), [(Shrunk, json!(["a", "b"]))]);
    let full = derived(schema, json!({"f": ["a"]}), Depth::Full);
    assert_eq!(
        values(&full),
        [(Grown, json!(["a", "sieve-1"])), (Shrunk, json!(["a"]))]
    );
    // A map list gets an item with another key.
    let items = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "port": {"type": "integer"}}});
    let schema = one_field(
        json!({"type": "array", "items": items,
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
        true,
    );
    let full = derived(
        schema,
        json!({"f": [{"name": "sieve-1", "port": 1}]}),
        Depth::Full,
    );
    assert_eq!(
        values(&full)[0],
        (
            Grown,
            json!([{"name": "sieve-1", "port": 1}, {"name": "sieve-2"}])
        )
    );
}

#[test]
fn optional_fields_are_set_and_removed_required_ones_never_removed() {
    use ValueClass::*;
    let schema = json!({"type": "object", "required": ["r"], "properties": {
        "absent": {"type": "integer", "minimum": 3},
        "present": {"type": "boolean"},
        "r": {"type": "boolean"},
    }});
    let full = derived(
        schema.clone(),
        json!({"present": true, "r": true}),
        Depth::Full,
    );
    let updates = updates(&full);
    assert_eq!(updates[0], ("spec.absent".into(), Set, json!(3)));
    assert!(updates.contains(&("spec.absent".into(), Removed, Json::Null)));
    assert!(updates.contains(&("spec.present".into(), Removed, Json::Null)));
    assert!(
        updates
            .iter()
            .all(|(f, c, _)| f != "spec.r" || *c != Removed),
        "{updates:?}"
    );
    assert!(
        full.text
            .contains("# step 2: spec.absent: set (absent before) -> 3"),
        "{}",
        full.text
    );
    // Short: one change per field, the removal only when nothing else changes it.
    let short = derived(schema, json!({"present": true, "r": true}), Depth::Short);
    assert_eq!(
        super::tests::updates(&short),
        [
            ("spec.absent".to_string(), Set, json!(3)),
            ("spec.present".into(), Flipped, json!(false)),
            ("spec.r".into(), Flipped, json!(false)),
        ]
    );
}

#[test]
fn nested_objects_are_walked_with_nested_patches_and_opaque_fields_skipped() {
    let schema = json!({"type": "object", "properties": {
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "untyped": {"description": "no type"},
        "server": {"type": "object", "required": ["port"], "properties": {
            "port": {"type": "integer", "minimum": 1, "maximum": 2},
        }},
    }});
    let spec = json!({"free": {"x": 1}, "untyped": 3, "server": {"port": 1}});
    let full = derived(schema, spec, Depth::Full);
    let patches: Vec<_> = full
        .workload
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Update { patch } => Some(patch.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        patches,
        [json!({"server": {"port": 2}}), json!({"server": null})]
    );
    assert_eq!(full.steps[1].field.as_deref(), Some("spec.server.port"));
    assert!(
        full.skipped
            .iter()
            .any(|(f, why)| f == "spec.free" && why.contains("preserve-unknown"))
    );
    assert!(
        full.skipped
            .iter()
            .any(|(f, why)| f == "spec.untyped" && why == "no type")
    );
    assert!(
        full.text
            .contains("#   spec.free: x-kubernetes-preserve-unknown-fields"),
        "{}",
        full.text
    );
}

#[test]
fn an_unserved_version_or_another_kind_or_an_invalid_sample_is_refused() {
    let schema = one_field(json!({"type": "integer", "maximum": 3}), true);
    let mut unserved = sample(json!({"f": 1}));
    unserved["apiVersion"] = json!("example.com/v2");
    let error = derive(&crd(schema.clone()), &unserved, &DeriveOptions::default()).unwrap_err();
    assert!(
        matches!(&error, DeriveError::VersionNotServed { version, served, .. }
        if version == "v2" && served == &["v1"]),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the CRD widgets.example.com does not serve version v2 (the sample's apiVersion); it serves: v1"
    );
    let mut other = sample(json!({"f": 1}));
    other["kind"] = json!("Gadget");
    let error = derive(&crd(schema.clone()), &other, &DeriveOptions::default()).unwrap_err();
    assert!(matches!(error, DeriveError::KindMismatch { .. }), "{error}");
    let error = derive(
        &crd(schema),
        &sample(json!({"f": 4})),
        &DeriveOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&error, DeriveError::InvalidSample(why) if why.contains("spec.f")),
        "{error}"
    );
    let error = derive(
        &json!({"kind": "Deployment"}),
        &sample(json!({})),
        &DeriveOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(error, DeriveError::NotACrd(_)), "{error}");
}

#[test]
fn the_budget_caps_the_updates_and_the_header_says_what_is_left_out() {
    let properties: serde_json::Map<String, Json> = (0..12)
        .map(|i| (format!("f{i:02}"), json!({"type": "boolean"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let short = derived(schema.clone(), json!({}), Depth::Short);
    assert_eq!(updates(&short).len(), SHORT_MAX_UPDATES);
    assert_eq!(short.left_out, 12 - SHORT_MAX_UPDATES);
    assert_eq!(updates(&short)[0].0, "spec.f00", "schema order");
    assert!(
        short
            .text
            .contains("# 4 more fields not reached within the budget of 8 updates"),
        "{}",
        short.text
    );
    let options = DeriveOptions {
        depth: Depth::Full,
        max_steps: Some(3),
    };
    let capped = derive(&crd(schema), &sample(json!({})), &options).unwrap();
    assert_eq!(capped.workload.steps.len(), 3 + 3);
}

#[test]
fn final_specs_merge_updates_and_follow_deletes_and_recreates() {
    let workload = Workload::parse(
        "steps:
  - create: {apiVersion: example.com/v1, kind: Widget, name: a, spec: {x: 1, y: {z: 2, w: 3}}}
  - create: {apiVersion: example.com/v1, kind: Widget, name: b, spec: {x: 1}}
  - update: {name: a, patch: {x: null, y: {z: 5}}}
  - delete: {name: b}
  - create: {apiVersion: example.com/v1, kind: Widget, name: c, spec: {x: 1}}
  - delete: {name: c}
  - recreate: {name: c, spec: {x: 9}}
",
    )
    .unwrap();
    let finals: Vec<(String, Json)> = final_specs(&workload)
        .into_iter()
        .map(|(t, s)| (t.name, s))
        .collect();
    assert_eq!(
        finals,
        [
            ("a".into(), json!({"y": {"z": 5, "w": 3}})),
            ("c".into(), json!({"x": 9}))
        ]
    );
    let _: fn(&Step) -> crate::workload::Op = Step::op;
}

#[test]
fn cel_rules_are_listed_as_not_checked() {
    let mut schema = one_field(
        json!({"type": "integer", "minimum": 0,
        "x-kubernetes-validations": [{"rule": "self % 2 == 0", "message": "even"}]}),
        true,
    );
    schema["x-kubernetes-validations"] = json!([{"rule": "has(self.f)"}]);
    let full = derived(schema, json!({"f": 2}), Depth::Full);
    assert_eq!(
        full.unchecked_rules,
        [
            ("spec".to_string(), "has(self.f)".to_string()),
            ("spec.f".into(), "self % 2 == 0".into())
        ]
    );
    assert!(
        full.text.contains("#   spec.f: self % 2 == 0\n"),
        "{}",
        full.text
    );
    // The odd value just above the minimum is derived all the same: the API server judges.
    assert!(values(&full).contains(&(ValueClass::AboveMinimum, json!(1))));
}
