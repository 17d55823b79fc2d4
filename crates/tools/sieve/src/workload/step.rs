//! The validation of one step of a workload: its shape, its fields, and whether the
//! object it names exists at that point.

use std::collections::HashMap;

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use super::{Action, Op, Problem, Step, Target, WorkloadError};

/// What the validation knows about each name at the current step.
#[derive(Default)]
pub(super) struct Objects {
    /// Every name created so far: its target, the step that created it and, once
    /// deleted (and not created again), the step that deleted it.
    by_name: HashMap<String, (Target, usize, Option<usize>)>,
}

pub(super) fn parse_step(
    step: usize,
    raw: Yaml,
    objects: &mut Objects,
) -> Result<Step, WorkloadError> {
    let step_error = |problem: String| WorkloadError::Step { step, problem };
    let ops = Op::ALL.map(Op::as_str).join(", ");
    let Yaml::Mapping(map) = raw else {
        return Err(step_error(format!(
            "expected a mapping with one operation ({ops})"
        )));
    };
    let mut entries = map.into_iter();
    let (Some((key, body)), None) = (entries.next(), entries.next()) else {
        return Err(step_error(format!(
            "expected exactly one operation ({ops})"
        )));
    };
    let op = Op::ALL
        .into_iter()
        .find(|op| key.as_str() == Some(op.as_str()))
        .ok_or_else(|| {
            step_error(format!(
                "unknown operation {} (expected one of {ops})",
                display_key(&key)
            ))
        })?;
    let Yaml::Mapping(body) = body else {
        return Err(step_error(format!(
            "`{op}` must be a mapping of its fields"
        )));
    };
    let field_error = |field: &str, problem: Problem| WorkloadError::Field {
        step,
        op,
        field: field.to_string(),
        problem,
    };
    let mut fields = HashMap::new();
    for (key, value) in body {
        match key.as_str().filter(|name| op.fields().contains(name)) {
            Some(name) => {
                fields.insert(name.to_string(), value);
            }
            None => {
                let field = key
                    .as_str()
                    .map_or_else(|| display_key(&key), str::to_string);
                return Err(field_error(
                    &field,
                    Problem::Unknown(op.fields().join(", ")),
                ));
            }
        }
    }
    let mut take = |field: &str| {
        fields
            .remove(field)
            .ok_or_else(|| field_error(field, Problem::Missing))
    };
    let name = string_field(take("name")?)
        .ok_or_else(|| field_error("name", Problem::Type("a string")))?;
    if let Some(problem) = dns_subdomain_problem(&name) {
        return Err(field_error("name", Problem::Invalid(problem)));
    }
    let action = match op {
        Op::Create => {
            let api_version = string_field(take("apiVersion")?)
                .ok_or_else(|| field_error("apiVersion", Problem::Type("a string")))?;
            let kind = string_field(take("kind")?)
                .ok_or_else(|| field_error("kind", Problem::Type("a string")))?;
            let spec = object_field(take("spec")?).map_err(|p| field_error("spec", p))?;
            if !api_version.contains('/')
                || api_version.starts_with('/')
                || api_version.ends_with('/')
            {
                return Err(field_error(
                    "apiVersion",
                    Problem::Invalid(format!(
                        "`{api_version}` is not group/version (a custom resource has a group)"
                    )),
                ));
            }
            if !kind.starts_with(|c: char| c.is_ascii_uppercase())
                || !kind.chars().all(|c| c.is_ascii_alphanumeric())
            {
                return Err(field_error(
                    "kind",
                    Problem::Invalid(format!("`{kind}` is not a kind (e.g. `Foo`)")),
                ));
            }
            if let Some((_, created, None)) = objects.by_name.get(&name) {
                return Err(field_error(
                    "name",
                    Problem::Invalid(format!(
                        "`{name}` already exists (created at step {created})"
                    )),
                ));
            }
            let target = Target {
                api_version,
                kind,
                name: name.clone(),
            };
            objects.by_name.insert(name, (target.clone(), step, None));
            return Ok(Step {
                number: step,
                target,
                action: Action::Create { spec },
            });
        }
        Op::Update => Action::Update {
            patch: match object_field(take("patch")?) {
                Ok(Json::Object(patch)) if patch.is_empty() => {
                    return Err(field_error(
                        "patch",
                        Problem::Invalid("an empty patch changes nothing".into()),
                    ));
                }
                Ok(patch) => patch,
                Err(problem) => return Err(field_error("patch", problem)),
            },
        },
        Op::Delete => Action::Delete,
        Op::Recreate => Action::Recreate {
            spec: object_field(take("spec")?).map_err(|p| field_error("spec", p))?,
            delete_first: true,
        },
    };
    let Some((target, _, deleted)) = objects.by_name.get_mut(&name) else {
        return Err(field_error(
            "name",
            Problem::Invalid(format!(
                "no object named `{name}` was created before this step"
            )),
        ));
    };
    let action = match (action, *deleted) {
        (Action::Recreate { spec, .. }, was_deleted) => {
            *deleted = None;
            Action::Recreate {
                spec,
                delete_first: was_deleted.is_none(),
            }
        }
        (_, Some(at)) => {
            return Err(field_error(
                "name",
                Problem::Invalid(format!(
                    "`{name}` does not exist at this step (deleted at step {at})"
                )),
            ));
        }
        (Action::Delete, None) => {
            *deleted = Some(step);
            Action::Delete
        }
        (action, None) => action,
    };
    Ok(Step {
        number: step,
        target: target.clone(),
        action,
    })
}

/// A YAML string's text.
fn string_field(value: Yaml) -> Option<String> {
    match value {
        Yaml::String(text) => Some(text),
        _ => None,
    }
}

/// A YAML mapping as a JSON object.
fn object_field(value: Yaml) -> Result<Json, Problem> {
    if !value.is_mapping() {
        return Err(Problem::Type("a mapping"));
    }
    serde_json::to_value(&value)
        .map_err(|e| Problem::Invalid(format!("not representable as JSON: {e}")))
}

/// A mapping key for an error message.
pub(super) fn display_key(key: &Yaml) -> String {
    match key.as_str() {
        Some(text) => format!("`{text}`"),
        None => format!("{key:?}"),
    }
}

/// Why `name` is not a DNS-1123 subdomain (Kubernetes' rule for object names), if it is not.
fn dns_subdomain_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if name.len() > 253 {
        return Some(format!("`{name}` is longer than 253 characters"));
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !name.chars().all(|c| allowed(c) || c == '-' || c == '.')
        || !name.starts_with(allowed)
        || !name.ends_with(allowed)
    {
        return Some(format!(
            "`{name}` is not a DNS-1123 subdomain (lower case letters, digits, '-' and '.', \
             starting and ending with a letter or digit)"
        ));
    }
    None
}
