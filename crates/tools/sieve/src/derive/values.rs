//! The other valid values of one field, by value class, most interesting first (what
//! [`super::Depth::Short`] takes), and a valid value of a schema to start from (a new
//! array item, an optional field the sample does not set).

use serde_json::{Map, Value as Json, json};

use super::ValueClass;
use super::pattern::Pattern;
use super::schema::{bounds, count, int_range, type_of, validate};

/// One value a field can be changed to: the value at the field's path in the merge
/// patch (for a map, the entries to merge, `null` removing one).
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub class: ValueClass,
    pub value: Json,
}

/// The candidates of a leaf (a scalar, an array or a map) whose value is `current`
/// (absent: `None`); `notes` gets why a class has no value (an unsupported pattern or
/// format). None equals `current`: the spec already had that value (the create, or an
/// earlier field's walk, exercised it). Candidates are not yet checked against the schema.
pub(crate) fn candidates(
    schema: &Json,
    current: Option<&Json>,
    notes: &mut Vec<String>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut push = |class, value: Json| {
        if Some(&value) != current && !out.iter().any(|c: &Candidate| c.value == value) {
            out.push(Candidate { class, value });
        }
    };
    if let Some(members) = schema.get("enum").and_then(Json::as_array) {
        for member in members {
            push(ValueClass::EnumMember, member.clone());
        }
        return out;
    }
    match type_of(schema) {
        Some("integer") => {
            let (low, high) = int_range(schema);
            let [has_low, has_high] = bounds(schema).map(|b| b.is_some());
            let current = current.and_then(Json::as_i64);
            let base = current
                .or_else(|| example(schema, 0).and_then(|e| e.as_i64()))
                .unwrap_or(0);
            let mut ints = Vec::new();
            if let (true, Some(low)) = (has_low, low) {
                ints.push((ValueClass::Minimum, low as i64));
            }
            if let (true, Some(high)) = (has_high, high) {
                ints.push((ValueClass::Maximum, high as i64));
            }
            if let (true, Some(low)) = (has_low, low) {
                ints.push((ValueClass::AboveMinimum, low as i64 + 1));
            }
            if let (true, Some(high)) = (has_high, high) {
                ints.push((ValueClass::BelowMaximum, high as i64 - 1));
            }
            // No minimum: the schema accepts a negative value, which a controller may
            // not (a size, a count): the disagreement the complaints oracle finds.
            if !has_low && base >= 0 {
                ints.push((ValueClass::Negative, -1));
            }
            if !has_high {
                ints.push((ValueClass::Incremented, base.saturating_add(1)));
                ints.push((ValueClass::Larger, base.saturating_add(10)));
            }
            for (class, v) in ints {
                let in_range =
                    low.is_none_or(|l| v as f64 >= l) && high.is_none_or(|h| v as f64 <= h);
                if in_range {
                    push(class, json!(v));
                }
            }
        }
        Some("number") => {
            let [low, high] = bounds(schema);
            let span = match (low, high) {
                (Some((l, _)), Some((h, _))) => h - l,
                _ => f64::INFINITY,
            };
            let delta = (span / 4.0).min(1.0);
            let low = low.map(|(v, excl)| if excl { v + delta } else { v });
            let high = high.map(|(v, excl)| if excl { v - delta } else { v });
            let base = current.and_then(Json::as_f64).or(low).unwrap_or(0.0);
            let mut numbers = Vec::new();
            if let Some(low) = low {
                numbers.push((ValueClass::Minimum, low));
            }
            if let Some(high) = high {
                numbers.push((ValueClass::Maximum, high));
            }
            if let Some(low) = low {
                numbers.push((ValueClass::AboveMinimum, low + delta));
            }
            if let Some(high) = high {
                numbers.push((ValueClass::BelowMaximum, high - delta));
            } else {
                numbers.push((ValueClass::Incremented, base + 1.0));
                numbers.push((ValueClass::Larger, base + 10.0));
            }
            for (class, v) in numbers {
                push(class, json!(v));
            }
        }
        Some("boolean") => {
            let now = current.or(schema.get("default")).and_then(Json::as_bool);
            push(ValueClass::Flipped, json!(!now.unwrap_or(false)));
        }
        Some("string") => strings(schema, current.and_then(Json::as_str), notes, &mut push),
        Some("array") => {
            let items = current
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            let max = count(schema, "maxItems");
            if current.is_none() && count(schema, "minItems").unwrap_or(0) > 1 {
                // Absent, and one item would be too few: set it to minItems items.
                if let Some(value) = example(schema, 0) {
                    push(ValueClass::Grown, value);
                }
            } else if max.is_none_or(|max| items.len() < max) {
                match new_item(schema, &items) {
                    Some(grown) => push(ValueClass::Grown, grown),
                    None => notes.push("no valid new item could be derived from `items`".into()),
                }
            }
            if items.len() > count(schema, "minItems").unwrap_or(0) {
                push(
                    ValueClass::Shrunk,
                    Json::from(items[..items.len() - 1].to_vec()),
                );
            }
        }
        Some("object") => {
            let entries = current
                .and_then(Json::as_object)
                .cloned()
                .unwrap_or_default();
            let value_schema = schema.get("additionalProperties").filter(|a| a.is_object());
            let Some(value_schema) = value_schema else {
                notes.push("an object with neither properties nor additionalProperties".into());
                return out;
            };
            let max = count(schema, "maxProperties");
            if max.is_none_or(|max| entries.len() < max) {
                let key = (1..)
                    .map(|i| format!("sieve-{i}"))
                    .find(|k| !entries.contains_key(k))
                    .expect("an unused key");
                match example(value_schema, entries.len()) {
                    Some(value) => push(ValueClass::Grown, json!({ key: value })),
                    None => notes.push("no valid value derived from additionalProperties".into()),
                }
            }
            if entries.len() > count(schema, "minProperties").unwrap_or(0)
                && let Some(last) = entries.keys().next_back()
            {
                push(ValueClass::Shrunk, json!({ last: null }));
            }
        }
        _ => {}
    }
    out
}

fn strings(
    schema: &Json,
    current: Option<&str>,
    notes: &mut Vec<String>,
    push: &mut impl FnMut(ValueClass, Json),
) {
    let min = count(schema, "minLength").unwrap_or(0);
    let max = count(schema, "maxLength");
    let avoid: Vec<&str> = current.into_iter().collect();
    if let Some(source) = schema.get("pattern").and_then(Json::as_str) {
        match Pattern::parse(source) {
            Ok(pattern) => match pattern.generate(0, min, max, &avoid) {
                Some(value) => push(ValueClass::Pattern, json!(value)),
                None => notes.push(format!(
                    "no value matching the pattern {source:?} within the length bounds"
                )),
            },
            Err(why) => notes.push(format!("the pattern {source:?} is not supported: {why}")),
        }
        return;
    }
    if let Some(format) = schema.get("format").and_then(Json::as_str) {
        match format_values(format) {
            Some(values) => {
                for value in values {
                    push(ValueClass::Format, json!(value));
                }
            }
            None => notes.push(format!("the format {format:?} is not known")),
        }
        return;
    }
    let current = current.unwrap_or_default();
    push(ValueClass::Changed, json!(changed(current)));
    push(ValueClass::Shortest, json!(padded("", min)));
    if let Some(max) = max.filter(|&max| max <= 4096) {
        let mut longest: String = current.chars().take(max).collect();
        longest = padded(&longest, max);
        push(ValueClass::Longest, json!(longest));
    }
}

/// `s` with `x`s up to `len` characters.
fn padded(s: &str, len: usize) -> String {
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(
        'x',
        len.saturating_sub(s.chars().count()),
    ));
    out
}

/// Another plausible value: a trailing number incremented (`nginx:1.27` becomes
/// `nginx:1.28`), else `-2` appended, before any trailing white space.
fn changed(s: &str) -> String {
    let body = s.trim_end();
    let tail = &s[body.len()..];
    let digits = body.chars().rev().take_while(char::is_ascii_digit).count();
    let head = &body[..body.len() - digits];
    let changed = match body[head.len()..].parse::<u64>() {
        Ok(n) if digits > 0 => format!("{head}{}", n.saturating_add(1)),
        _ if body.is_empty() => "sieve".to_string(),
        _ => format!("{body}-2"),
    };
    format!("{changed}{tail}")
}

/// Two valid values of a string format Kubernetes knows, `None` for another format.
fn format_values(format: &str) -> Option<[&'static str; 2]> {
    Some(match format {
        "date-time" | "datetime" => ["2026-01-01T00:00:00Z", "2026-06-30T12:30:00Z"],
        "date" => ["2026-01-01", "2026-06-30"],
        "uuid" | "uuid4" => [
            "9a1d2c6e-1b7f-4b8e-9f3a-2d4c6e8a0b1c",
            "0f8e7d6c-5b4a-4c3d-8e2f-1a0b9c8d7e6f",
        ],
        "byte" => ["c2lldmU=", "YWN0bw=="],
        "hostname" => ["sieve.example.com", "acto.example.com"],
        "ipv4" => ["10.0.0.1", "192.168.1.2"],
        "ipv6" => ["fd00::1", "fd00::2"],
        "cidr" => ["10.0.0.0/24", "192.168.0.0/16"],
        "email" => ["sieve@example.com", "acto@example.com"],
        "uri" => ["https://example.com/sieve", "https://example.com/acto"],
        "mac" => ["02:00:00:00:00:01", "02:00:00:00:00:02"],
        "duration" => ["1h", "30s"],
        "password" => ["sieve-secret", "acto-secret"],
        "hexcolor" => ["#ff0000", "#00ff00"],
        _ => return None,
    })
}

/// `items` and one more valid item (another one than those already there), or `None`.
fn new_item(schema: &Json, items: &[Json]) -> Option<Json> {
    let item_schema = schema.get("items")?;
    (0..16).find_map(|variant| {
        let item = example(item_schema, items.len() + variant)?;
        let mut grown = items.to_vec();
        grown.push(item);
        let grown = Json::from(grown);
        validate(&grown, schema, "").is_ok().then_some(grown)
    })
}

/// A valid value of `schema` (`variant` picks another one where there are several), or
/// `None` when none can be derived.
pub(crate) fn example(schema: &Json, variant: usize) -> Option<Json> {
    let value = if let Some(default) = schema.get("default").filter(|_| variant == 0) {
        default.clone()
    } else if let Some(members) = schema.get("enum").and_then(Json::as_array) {
        members.get(variant % members.len().max(1))?.clone()
    } else {
        match type_of(schema)? {
            "integer" => {
                let (low, high) = int_range(schema);
                let [has_low, _] = bounds(schema).map(|b| b.is_some());
                let base = if has_low { low.unwrap_or(0.0) } else { 0.0 };
                let base = high.map_or(base, |h| base.min(h)) as i64;
                json!(base.checked_add(i64::try_from(variant).ok()?)?)
            }
            "number" => {
                let [low, _] = bounds(schema);
                json!(low.map_or(0.0, |(v, excl)| v + f64::from(u8::from(excl))) + variant as f64)
            }
            "boolean" => json!(variant % 2 == 1),
            "string" => json!(example_string(schema, variant)?),
            "array" => {
                let min = count(schema, "minItems").unwrap_or(0);
                let mut items = Vec::new();
                for _ in 0..min {
                    items = new_item(schema, &items)?.as_array()?.clone();
                }
                json!(items)
            }
            "object" => {
                let mut object = Map::new();
                let properties = schema.get("properties");
                for name in super::schema::required(schema) {
                    let field = properties.and_then(|p| p.get(name))?;
                    object.insert(name.to_string(), example(field, variant)?);
                }
                Json::Object(object)
            }
            _ => return None,
        }
    };
    validate(&value, schema, "").is_ok().then_some(value)
}

fn example_string(schema: &Json, variant: usize) -> Option<String> {
    let min = count(schema, "minLength").unwrap_or(0);
    let max = count(schema, "maxLength");
    if let Some(source) = schema.get("pattern").and_then(Json::as_str) {
        return Pattern::parse(source)
            .ok()?
            .generate(variant, min, max, &[]);
    }
    if let Some(format) = schema.get("format").and_then(Json::as_str) {
        return format_values(format).map(|values| values[variant % 2].to_string());
    }
    let base = match variant {
        0 => "sieve".to_string(),
        n => format!("sieve-{n}"),
    };
    let base: String = base.chars().take(max.unwrap_or(usize::MAX)).collect();
    Some(padded(&base, min))
}
