//! Workloads: the scripted user operations a learning run and every plan replay.
//!
//! A workload is a YAML file: an optional `description` and a list of `steps`, each one
//! user operation on a custom resource. After every step the runner waits until the
//! cluster is quiescent (the controller has nothing left to do) before the next one.
//!
//! ```yaml
//! description: a Foo created, scaled, deleted and created again
//! steps:
//!   - create:              # a new object
//!       apiVersion: samplecontroller.k8s.io/v1alpha1
//!       kind: Foo
//!       name: web
//!       spec: {deploymentName: web, replicas: 1}
//!   - update:              # a JSON merge patch (RFC 7386) of the object's spec
//!       name: web
//!       patch: {replicas: 3}
//!   - recreate:            # delete it and create it back to back, same name, new spec
//!       name: web
//!       spec: {deploymentName: web2, replicas: 2}
//!   - delete:
//!       name: web
//!   - recreate:            # an object deleted earlier: create it again
//!       name: web
//!       spec: {deploymentName: web, replicas: 1}
//! ```
//!
//! `update`, `delete` and `recreate` name an object by its `name` only: its apiVersion
//! and kind are those of the `create` that made it, so names are unique in a workload.
//! The namespace is not part of a workload: every run uses a fresh one.
//!
//! [`Workload::parse`] checks everything before a run starts, and each error names the
//! step (numbered from 1) and the field.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

/// The object a step operates on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// `group/version`, e.g. `samplecontroller.k8s.io/v1alpha1`.
    pub api_version: String,
    /// The kind, e.g. `Foo`.
    pub kind: String,
    /// The object's name (a DNS-1123 subdomain).
    pub name: String,
}

/// What a step does to its [`Target`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Action {
    /// Create the object with this spec.
    Create {
        /// The `spec` (a JSON object).
        spec: Json,
    },
    /// Send a JSON merge patch of the object's `spec`.
    Update {
        /// The patch of `spec` (a non-empty JSON object); the runner sends
        /// `{"spec": patch}` as `application/merge-patch+json`.
        patch: Json,
    },
    /// Delete the object.
    Delete,
    /// Create the object again with the same name and a new spec. When it still
    /// exists, delete it first and create it right after the delete is accepted,
    /// without waiting: the controller may never see the gap.
    Recreate {
        /// The new `spec` (a JSON object).
        spec: Json,
        /// Whether the object exists at this step, so the runner deletes it first.
        delete_first: bool,
    },
}

/// The four operations, by their names in a workload file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `create`.
    Create,
    /// `update`.
    Update,
    /// `delete`.
    Delete,
    /// `recreate`.
    Recreate,
}

impl Op {
    /// Every operation, in the order the docs list them.
    pub const ALL: [Op; 4] = [Op::Create, Op::Update, Op::Delete, Op::Recreate];

    /// The operation's name in a workload file.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Update => "update",
            Op::Delete => "delete",
            Op::Recreate => "recreate",
        }
    }

    /// The fields the operation takes (all required).
    fn fields(self) -> &'static [&'static str] {
        match self {
            Op::Create => &["apiVersion", "kind", "name", "spec"],
            Op::Update => &["name", "patch"],
            Op::Delete => &["name"],
            Op::Recreate => &["name", "spec"],
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validated step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The step's number, from 1 (as errors, traces and plans name it).
    pub number: usize,
    /// The object it operates on.
    pub target: Target,
    /// What it does.
    pub action: Action,
}

impl Step {
    /// The step's operation.
    pub fn op(&self) -> Op {
        match self.action {
            Action::Create { .. } => Op::Create,
            Action::Update { .. } => Op::Update,
            Action::Delete => Op::Delete,
            Action::Recreate { .. } => Op::Recreate,
        }
    }

    /// The object to create in `namespace` (for `create` and `recreate`), or `None`.
    pub fn manifest(&self, namespace: &str) -> Option<Json> {
        let spec = match &self.action {
            Action::Create { spec } | Action::Recreate { spec, .. } => spec,
            Action::Update { .. } | Action::Delete => return None,
        };
        Some(serde_json::json!({
            "apiVersion": self.target.api_version,
            "kind": self.target.kind,
            "metadata": { "name": self.target.name, "namespace": namespace },
            "spec": spec,
        }))
    }
}

/// A parsed and validated workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// What the workload exercises, if the file says.
    pub description: Option<String>,
    /// The steps, in order (at least one).
    pub steps: Vec<Step>,
}

/// Why a workload was refused.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The file could not be read.
    #[error("reading workload {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The text is not YAML.
    #[error("workload is not YAML: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// The document's shape is wrong (not a mapping, no steps, an unknown top-level field).
    #[error("workload: {0}")]
    Document(String),
    /// A step is not a mapping of exactly one known operation.
    #[error("step {step}: {problem}")]
    Step {
        /// The step's number, from 1.
        step: usize,
        /// What is wrong.
        problem: String,
    },
    /// A field of a step is missing, unknown, of the wrong type or invalid.
    #[error("step {step} ({op}): field `{field}`: {problem}")]
    Field {
        /// The step's number, from 1.
        step: usize,
        /// The step's operation.
        op: Op,
        /// The field, as the file spells it.
        field: String,
        /// What is wrong with it.
        problem: Problem,
    },
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A required field is absent.
    #[error("missing")]
    Missing,
    /// The operation takes no such field.
    #[error("unknown field (this operation takes {0})")]
    Unknown(String),
    /// The value has the wrong type.
    #[error("expected {0}")]
    Type(&'static str),
    /// The value is not acceptable.
    #[error("{0}")]
    Invalid(String),
}

impl Workload {
    /// Reads and validates the workload file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, WorkloadError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorkloadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Parses and validates a workload's YAML text.
    pub fn parse(text: &str) -> Result<Self, WorkloadError> {
        let doc: Yaml = serde_yaml::from_str(text)?;
        let Yaml::Mapping(doc) = doc else {
            return Err(WorkloadError::Document(
                "expected a mapping with `steps` (and optionally `description`)".into(),
            ));
        };
        let mut description = None;
        let mut raw_steps = None;
        for (key, value) in doc {
            match key.as_str() {
                Some("description") => match value {
                    Yaml::String(text) => description = Some(text),
                    _ => {
                        return Err(WorkloadError::Document(
                            "`description` must be a string".into(),
                        ));
                    }
                },
                Some("steps") => match value {
                    Yaml::Sequence(steps) => raw_steps = Some(steps),
                    _ => return Err(WorkloadError::Document("`steps` must be a list".into())),
                },
                _ => {
                    return Err(WorkloadError::Document(format!(
                        "unknown field {} (a workload has `description` and `steps`)",
                        display_key(&key)
                    )));
                }
            }
        }
        let raw_steps =
            raw_steps.ok_or_else(|| WorkloadError::Document("missing `steps`".into()))?;
        if raw_steps.is_empty() {
            return Err(WorkloadError::Document("`steps` is empty".into()));
        }
        let mut objects = Objects::default();
        let steps = raw_steps
            .into_iter()
            .enumerate()
            .map(|(i, raw)| parse_step(i + 1, raw, &mut objects))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { description, steps })
    }

    /// The `(apiVersion, kind)` pairs the workload creates, sorted.
    pub fn kinds(&self) -> BTreeSet<(String, String)> {
        self.steps
            .iter()
            .map(|step| (step.target.api_version.clone(), step.target.kind.clone()))
            .collect()
    }
}

/// What the validation knows about each name at the current step.
#[derive(Default)]
struct Objects {
    /// Every name created so far: its target, the step that created it and, once
    /// deleted (and not created again), the step that deleted it.
    by_name: HashMap<String, (Target, usize, Option<usize>)>,
}

fn parse_step(step: usize, raw: Yaml, objects: &mut Objects) -> Result<Step, WorkloadError> {
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
fn display_key(key: &Yaml) -> String {
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

#[cfg(test)]
#[path = "workload_tests.rs"]
mod tests;
