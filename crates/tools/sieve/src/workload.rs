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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use step::{Objects, display_key, parse_step};

mod step;

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

#[cfg(test)]
#[path = "workload_tests.rs"]
mod tests;
