//! The walk over the spec schema: for each field, in schema order (properties sorted by
//! name, as CRD generators write them), the updates that change it, each applied to the
//! spec as it stands after the previous ones and kept only if the whole spec stays valid.

use serde_json::{Map, Value as Json};

use super::schema::{opaque, required, type_of, validate};
use super::values::{candidates, example};
use super::{Depth, ValueClass, merge_patch};

/// One derived update.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    /// The field, e.g. `spec.replicas`.
    pub field: String,
    pub class: ValueClass,
    /// The value at the field's path in the patch (`null`: removed).
    pub value: Json,
    /// The merge patch of the spec.
    pub patch: Json,
}

pub(crate) struct Walker<'a> {
    /// The spec schema (what every step is checked against).
    root: &'a Json,
    depth: Depth,
    /// How many more updates may be derived.
    budget: Option<usize>,
    /// The spec after the updates so far.
    pub state: Json,
    pub updates: Vec<Update>,
    /// What was not exercised, and why: `(field, reason)`.
    pub skipped: Vec<(String, String)>,
    /// Fields not reached because the budget ran out.
    pub left_out: usize,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(root: &'a Json, sample: Json, depth: Depth, budget: Option<usize>) -> Self {
        Self {
            root,
            depth,
            budget,
            state: sample,
            updates: Vec::new(),
            skipped: Vec::new(),
            left_out: 0,
        }
    }

    /// Walks the properties of the object schema at `path` (from the spec's, `[]`).
    pub(crate) fn object(&mut self, schema: &Json, path: &[String]) {
        let Some(properties) = schema.get("properties").and_then(Json::as_object) else {
            return;
        };
        let required = required(schema);
        for (name, field) in properties {
            let mut path = path.to_vec();
            path.push(name.clone());
            self.field(field, &path, required.contains(&name.as_str()));
        }
    }

    fn field(&mut self, schema: &Json, path: &[String], required: bool) {
        let name = display(path);
        if self.budget == Some(0) {
            self.left_out += 1;
            return;
        }
        if let Some(why) = opaque(schema) {
            self.skipped.push((name, why.into()));
            return;
        }
        let current = get(&self.state, path).cloned();
        let nested = type_of(schema) == Some("object") && schema.get("properties").is_some();
        let mut changed = false;
        if nested {
            if current.is_none() {
                match example(schema, 0) {
                    Some(value) => {
                        changed = self.apply(path, ValueClass::Set, value, &name);
                    }
                    None => self
                        .skipped
                        .push((name.clone(), "no valid value to set it to".into())),
                }
            }
            if get(&self.state, path).is_some() {
                self.object(schema, path);
            }
        } else {
            let mut notes = Vec::new();
            let effective = current.clone().or_else(|| schema.get("default").cloned());
            // A list's or a map's candidates are relative to its items: each class's
            // value is taken from the items as the previous change left them (a list at
            // its minItems is grown, then shrunk back).
            let collection = matches!(type_of(schema), Some("array" | "object"));
            let first = candidates(schema, effective.as_ref(), &mut notes);
            let classes: Vec<ValueClass> = if collection {
                vec![ValueClass::Grown, ValueClass::Shrunk]
            } else {
                first.iter().map(|c| c.class).collect()
            };
            for (i, class) in classes.into_iter().enumerate() {
                if changed && self.depth == Depth::Short {
                    break;
                }
                let value = if collection {
                    let now = get(&self.state, path).cloned();
                    let fresh = candidates(schema, now.as_ref(), &mut Vec::new());
                    match fresh.into_iter().find(|c| c.class == class) {
                        Some(candidate) => candidate.value,
                        None => continue,
                    }
                } else {
                    first[i].value.clone()
                };
                let now = get(&self.state, path).or(schema.get("default"));
                if !collection && now == Some(&value) {
                    continue;
                }
                let class = if get(&self.state, path).is_none() {
                    ValueClass::Set
                } else {
                    class
                };
                changed |= self.apply(path, class, value, &name);
            }
            self.skipped
                .extend(notes.into_iter().map(|note| (name.clone(), note)));
        }
        if !required && get(&self.state, path).is_some() && (self.depth == Depth::Full || !changed)
        {
            self.apply(path, ValueClass::Removed, Json::Null, &name);
        }
    }

    /// Derives the update that puts `value` at `path`, if it changes the spec and keeps
    /// it valid; whether it did.
    fn apply(&mut self, path: &[String], class: ValueClass, value: Json, name: &str) -> bool {
        let patch = nest(path, value.clone());
        let next = merge_patch(&self.state, &patch);
        if next == self.state {
            return false;
        }
        if let Err(why) = validate(&next, self.root, "spec") {
            self.skipped.push((
                name.to_string(),
                format!(
                    "{} {} would be invalid ({why})",
                    class.label(),
                    short(&value)
                ),
            ));
            return false;
        }
        if self.budget == Some(0) {
            return false;
        }
        if let Some(budget) = &mut self.budget {
            *budget -= 1;
        }
        self.updates.push(Update {
            field: name.to_string(),
            class,
            value,
            patch,
        });
        self.state = next;
        true
    }
}

/// `spec.a.b` for the path `[a, b]`.
pub(crate) fn display(path: &[String]) -> String {
    std::iter::once("spec")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(".")
}

/// A value for a comment: compact JSON, at most 60 characters.
pub(crate) fn short(value: &Json) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        format!("{}...", text.chars().take(57).collect::<String>())
    }
}

fn get<'v>(value: &'v Json, path: &[String]) -> Option<&'v Json> {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

/// `{a: {b: value}}` for the path `[a, b]`.
fn nest(path: &[String], value: Json) -> Json {
    path.iter().rev().fold(value, |inner, key| {
        let mut object = Map::new();
        object.insert(key.clone(), inner);
        Json::Object(object)
    })
}
