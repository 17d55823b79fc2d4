//! The structural schema of a CRD version, read as the API server validates with it: the
//! checks every derived update must pass before it is written into a workload.
//!
//! What is checked: `type` (and `nullable`), `enum`, `minimum`/`maximum` (with
//! `exclusiveMinimum`/`exclusiveMaximum`, as booleans or numbers), `multipleOf`,
//! `minLength`/`maxLength`, `pattern` (the subset [`Pattern`] knows), `minItems`/
//! `maxItems`, `uniqueItems` and `x-kubernetes-list-type` `set`/`map`, `required`,
//! `minProperties`/`maxProperties`, the `int32`/`int64` formats. Not checked: string
//! `format`s (the values generated for them are valid by construction), CEL rules
//! (`x-kubernetes-validations`), admission webhooks: the API server may still refuse a
//! derived step.

use serde_json::Value as Json;

use super::pattern::Pattern;

/// The schema's `type`, if any.
pub(crate) fn type_of(schema: &Json) -> Option<&str> {
    schema.get("type").and_then(Json::as_str)
}

/// Whether `schema.<key>` is `true`.
pub(crate) fn flag(schema: &Json, key: &str) -> bool {
    schema.get(key).and_then(Json::as_bool) == Some(true)
}

/// Why the field is not explored at all, if it is not: its contents are free or untyped.
pub(crate) fn opaque(schema: &Json) -> Option<&'static str> {
    if flag(schema, "x-kubernetes-preserve-unknown-fields") {
        Some("x-kubernetes-preserve-unknown-fields: any content is accepted")
    } else if flag(schema, "x-kubernetes-embedded-resource") {
        Some("x-kubernetes-embedded-resource: an embedded object")
    } else if flag(schema, "x-kubernetes-int-or-string") {
        Some("x-kubernetes-int-or-string: no single type")
    } else if type_of(schema).is_none() {
        Some("no type")
    } else {
        None
    }
}

/// The names of the `required` properties.
pub(crate) fn required(schema: &Json) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Json::as_array)
        .map(|names| names.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default()
}

/// A numeric keyword.
pub(crate) fn number(schema: &Json, key: &str) -> Option<f64> {
    schema.get(key).and_then(Json::as_f64)
}

/// A count keyword (`minLength`, `maxItems`...).
pub(crate) fn count(schema: &Json, key: &str) -> Option<usize> {
    schema
        .get(key)
        .and_then(Json::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// The schema's lower and upper bounds, each as `(value, exclusive)`
/// (`exclusiveMinimum` as a boolean beside `minimum`, or as the bound itself).
pub(crate) fn bounds(schema: &Json) -> [Option<(f64, bool)>; 2] {
    ["minimum", "maximum"].map(|key| {
        let exclusive = format!("exclusive{}{}", key[..1].to_uppercase(), &key[1..]);
        match schema.get(&exclusive) {
            Some(Json::Number(n)) => n.as_f64().map(|v| (v, true)),
            Some(Json::Bool(true)) => number(schema, key).map(|v| (v, true)),
            _ => number(schema, key).map(|v| (v, false)),
        }
    })
}

/// The inclusive range of valid integers as `(low, high)`: the bounds with their
/// exclusivity applied, and an integer format's.
pub(crate) fn int_range(schema: &Json) -> (Option<f64>, Option<f64>) {
    let [low, high] = bounds(schema);
    let (mut low, mut high) = (
        low.map(|(v, excl)| if excl { v.floor() + 1.0 } else { v.ceil() }),
        high.map(|(v, excl)| if excl { v.ceil() - 1.0 } else { v.floor() }),
    );
    let format_range = match schema.get("format").and_then(Json::as_str) {
        Some("int32") => Some((f64::from(i32::MIN), f64::from(i32::MAX))),
        Some("int64") => Some((-9.007_199_254_740_991e15, 9.007_199_254_740_991e15)),
        _ => None,
    };
    if let Some((lo, hi)) = format_range {
        low = Some(low.map_or(lo, |l| l.max(lo)));
        high = Some(high.map_or(hi, |h| h.min(hi)));
    }
    (low, high)
}

/// The CEL rules (`x-kubernetes-validations`) of `schema` and everything under it, as
/// `(path, rule)`: what [`validate`] cannot check.
pub(crate) fn cel_rules(schema: &Json, path: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = schema
        .get("x-kubernetes-validations")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| rule.get("rule").and_then(Json::as_str))
        .map(|rule| (path.to_string(), rule.to_string()))
        .collect();
    if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
        for (name, field) in properties {
            out.extend(cel_rules(field, &format!("{path}.{name}")));
        }
    }
    if let Some(items) = schema.get("items") {
        out.extend(cel_rules(items, &format!("{path}[*]")));
    }
    if let Some(values) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        out.extend(cel_rules(values, &format!("{path}[*]")));
    }
    out
}

/// Checks `value` at `path` against `schema`; the error names the path and the rule.
pub(crate) fn validate(value: &Json, schema: &Json, path: &str) -> Result<(), String> {
    let fail = |rule: String| Err(format!("{path}: {rule}"));
    if opaque(schema).is_some() {
        return Ok(());
    }
    if value.is_null() {
        return if flag(schema, "nullable") {
            Ok(())
        } else {
            fail("null is not allowed".into())
        };
    }
    if let Some(members) = schema.get("enum").and_then(Json::as_array)
        && !members.contains(value)
    {
        return fail(format!(
            "{value} is not one of {}",
            Json::from(members.clone())
        ));
    }
    let ty = type_of(schema).unwrap_or_default();
    match (ty, value) {
        ("integer", Json::Number(n)) if n.is_i64() || n.is_u64() => {
            validate_number(n.as_f64().unwrap_or_default(), schema, true).or_else(fail)
        }
        ("number", Json::Number(n)) => {
            validate_number(n.as_f64().unwrap_or_default(), schema, false).or_else(fail)
        }
        ("boolean", Json::Bool(_)) => Ok(()),
        ("string", Json::String(s)) => validate_string(s, schema).or_else(fail),
        ("array", Json::Array(items)) => {
            validate_array(items, schema).or_else(fail)?;
            let item_schema = schema.get("items").unwrap_or(&Json::Null);
            items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| validate(item, item_schema, &format!("{path}[{i}]")))
        }
        ("object", Json::Object(fields)) => {
            for name in required(schema) {
                if !fields.contains_key(name) {
                    return fail(format!("the required field `{name}` is missing"));
                }
            }
            let n = fields.len();
            if count(schema, "minProperties").is_some_and(|min| n < min)
                || count(schema, "maxProperties").is_some_and(|max| n > max)
            {
                return fail(format!(
                    "{n} properties is out of minProperties/maxProperties"
                ));
            }
            let properties = schema.get("properties");
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, field) in fields {
                let sub = properties.and_then(|p| p.get(name)).or(additional);
                if let Some(sub) = sub {
                    validate(field, sub, &format!("{path}.{name}"))?;
                }
            }
            Ok(())
        }
        _ => fail(format!("{value} is not of type {ty}")),
    }
}

fn validate_number(n: f64, schema: &Json, integer: bool) -> Result<(), String> {
    let [low, high] = bounds(schema);
    let below = low.is_some_and(|(v, excl)| n < v || (excl && n == v));
    let above = high.is_some_and(|(v, excl)| n > v || (excl && n == v));
    let (int_low, int_high) = int_range(schema);
    if below
        || above
        || (integer && (int_low.is_some_and(|l| n < l) || int_high.is_some_and(|h| n > h)))
    {
        return Err(format!("{n} is out of the schema's bounds"));
    }
    if let Some(m) = number(schema, "multipleOf")
        && m > 0.0
        && (n / m).fract().abs() > 1e-9
    {
        return Err(format!("{n} is not a multiple of {m}"));
    }
    Ok(())
}

fn validate_string(s: &str, schema: &Json) -> Result<(), String> {
    let len = s.chars().count();
    if count(schema, "minLength").is_some_and(|min| len < min) {
        return Err(format!("{len} characters is shorter than minLength"));
    }
    if count(schema, "maxLength").is_some_and(|max| len > max) {
        return Err(format!("{len} characters is longer than maxLength"));
    }
    if let Some(source) = schema.get("pattern").and_then(Json::as_str)
        && let Ok(pattern) = Pattern::parse(source)
        && pattern.matches(s) == Some(false)
    {
        return Err(format!("{s:?} does not match the pattern {source:?}"));
    }
    Ok(())
}

fn validate_array(items: &[Json], schema: &Json) -> Result<(), String> {
    let n = items.len();
    if count(schema, "minItems").is_some_and(|min| n < min) {
        return Err(format!("{n} items is fewer than minItems"));
    }
    if count(schema, "maxItems").is_some_and(|max| n > max) {
        return Err(format!("{n} items is more than maxItems"));
    }
    let list_type = schema.get("x-kubernetes-list-type").and_then(Json::as_str);
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Json::as_array)
        .map(|k| k.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let identity = |item: &Json| match list_type {
        Some("map") => Json::from(
            keys.iter()
                .map(|k| item.get(*k).cloned().unwrap_or(Json::Null))
                .collect::<Vec<_>>(),
        ),
        _ => item.clone(),
    };
    if flag(schema, "uniqueItems") || matches!(list_type, Some("set" | "map")) {
        for (i, item) in items.iter().enumerate() {
            if items[..i]
                .iter()
                .any(|other| identity(other) == identity(item))
            {
                return Err(format!(
                    "item {i} repeats an earlier one (a set or map list)"
                ));
            }
        }
    }
    Ok(())
}
