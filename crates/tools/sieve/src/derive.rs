//! Workloads derived from a CRD's OpenAPI schema and a sample object, as Acto does
//! (issue 57: "no workload to write").
//!
//! # Why
//!
//! A hand-written workload exercises what its author thought of. Acto (Jiawei Tyler Gu et
//! al., "Acto: Automatic End-to-End Testing for Operation Correctness of Cloud System
//! Management", SOSP 2023, <https://doi.org/10.1145/3600006.3613161>) found 56 bugs in 11
//! operators by driving each one through spec changes derived from its CRD's schema: an
//! operator must reconcile *every* valid spec, and the schema says which specs are
//! valid. The bugs sit at the edges the author did not think of: a bound, an enum member
//! nobody uses, an optional field removed, a list shrunk to its minimum. The schema is
//! already there for every CRD, so every controller gets such a workload for free, and
//! the user's own YAML workloads come on top.
//!
//! # What is derived
//!
//! From the version of the CRD the sample's `apiVersion` names (an error if the CRD does
//! not serve it) and its `schema.openAPIV3Schema.properties.spec`:
//!
//! 1. `create` the sample (its `metadata.name` and `spec`);
//! 2. for each field of the spec, in schema order (nested objects walked; a leaf is a
//!    scalar, an array or a map), `update`s, each a JSON merge patch of the spec that
//!    changes that field to another valid value, by [`ValueClass`]: each `enum` member;
//!    an integer's or number's `minimum`, `maximum` and the values just inside them
//!    (exclusive bounds honoured; without a lower bound, an integer's -1, which the
//!    schema accepts and a controller may refuse: see [`crate::complaints`]; without an
//!    upper bound, the value plus 1 and plus 10);
//!    a boolean flipped; a string matching the field's `pattern` (the simple subset:
//!    character classes with quantifiers, anchors, literal text, groups), or of its
//!    `format`, or changed, shortest and longest (`minLength`/`maxLength`); an array grown
//!    and shrunk by one item (`minItems`/`maxItems`); an optional field the sample sets,
//!    removed; one it does not set, set;
//! 3. `delete` the object, then `recreate` it under the same name with the sample's spec.
//!
//! The updates accumulate: each one is checked against the whole spec as the previous
//! ones left it, and kept only if that spec stays valid under the schema (required fields
//! kept, bounds, lengths, patterns, list uniqueness: see `schema.rs`); a value that would
//! not be is left out and the workload's header says so. Fields the schema leaves open
//! (`x-kubernetes-preserve-unknown-fields`, no `type`, `x-kubernetes-int-or-string`,
//! embedded resources) are skipped, also said in the header.
//!
//! What cannot be checked here: CEL rules (`x-kubernetes-validations`), admission
//! webhooks, the API server's own limits. A derived step the API server refuses is
//! therefore possible, and is an outcome of the run, not a mistake of the workload.
//!
//! [`Depth::Short`] keeps one change per field (the most interesting: an enum member or
//! a bound other than the current value before a plain change) and at most
//! [`SHORT_MAX_UPDATES`] updates: a pass inside a project's test command.
//! [`Depth::Full`] keeps every value of every field.
//!
//! Every step of the YAML text carries a comment naming the field and the value class
//! it exercises, and [`Derived::steps`] says the same per step number ([`step_notes`]
//! reads the comments back from a workload file), so that a report can name the field
//! and the step of a failure. [`final_specs`] gives the spec each
//! object ends with: what Acto's differential oracle creates afresh to compare.

use serde_json::{Map, Value as Json, json};

use crate::workload::{Action, Target, Workload, WorkloadError};

pub mod cli;
mod emit;
mod pattern;
mod schema;
mod values;
mod walk;

/// How many values of each field a derived workload exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Depth {
    /// One change per field, the most interesting one, within a budget of updates
    /// ([`SHORT_MAX_UPDATES`] unless [`DeriveOptions::max_steps`] says otherwise).
    #[default]
    Short,
    /// Every value of every field (within [`DeriveOptions::max_steps`], if set).
    Full,
}

/// The updates of a [`Depth::Short`] workload when [`DeriveOptions::max_steps`] is unset.
pub const SHORT_MAX_UPDATES: usize = 8;

/// What to derive.
#[derive(Debug, Clone, Default)]
pub struct DeriveOptions {
    /// One change per field, or every value.
    pub depth: Depth,
    /// At most this many `update` steps (the create, delete and recreate come on top).
    pub max_steps: Option<usize>,
}

/// What a derived step exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ValueClass {
    /// The sample, created.
    Create,
    /// A member of the field's `enum`.
    EnumMember,
    /// The lowest valid value.
    Minimum,
    /// The highest valid value.
    Maximum,
    /// Just above the lowest valid value.
    AboveMinimum,
    /// Just below the highest valid value.
    BelowMaximum,
    /// -1, for an integer the schema gives no minimum (a value below zero it accepts).
    Negative,
    /// The value plus one (no upper bound).
    Incremented,
    /// A larger value (no upper bound).
    Larger,
    /// A boolean flipped.
    Flipped,
    /// A string matching the field's `pattern`.
    Pattern,
    /// A string of the field's `format`.
    Format,
    /// A string changed (a trailing number incremented, or a suffix).
    Changed,
    /// The shortest valid string (`minLength`).
    Shortest,
    /// The longest valid string (`maxLength`).
    Longest,
    /// An array (or a map) grown by one item.
    Grown,
    /// An array (or a map) shrunk by one item.
    Shrunk,
    /// An optional field the spec did not have, set.
    Set,
    /// An optional field, removed (`null` in the merge patch).
    Removed,
    /// The object deleted.
    Delete,
    /// The object created again under the same name with the sample's spec.
    Recreate,
}

impl ValueClass {
    /// How a comment or a report names the class.
    pub fn label(self) -> &'static str {
        match self {
            Self::Create => "the sample created",
            Self::EnumMember => "enum member",
            Self::Minimum => "minimum",
            Self::Maximum => "maximum",
            Self::AboveMinimum => "just above the minimum",
            Self::BelowMaximum => "just below the maximum",
            Self::Negative => "negative (no minimum)",
            Self::Incremented => "incremented",
            Self::Larger => "a larger value",
            Self::Flipped => "flipped",
            Self::Pattern => "matching the pattern",
            Self::Format => "of its format",
            Self::Changed => "changed",
            Self::Shortest => "shortest",
            Self::Longest => "longest",
            Self::Grown => "grown by one",
            Self::Shrunk => "shrunk by one",
            Self::Set => "set (absent before)",
            Self::Removed => "removed",
            Self::Delete => "deleted",
            Self::Recreate => "recreated with the sample's spec",
        }
    }
}

impl std::fmt::Display for ValueClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// What one step of a derived workload exercises.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepOrigin {
    /// The step's number, from 1, as [`crate::workload::Step::number`].
    pub number: usize,
    /// The field an update changes (`spec.replicas`); `None` for create, delete, recreate.
    pub field: Option<String>,
    /// The value class.
    pub class: ValueClass,
    /// The field's value in the patch (`null`: removed); `None` without a field.
    pub value: Option<Json>,
}

impl std::fmt::Display for StepOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {}: ", self.number)?;
        match (&self.field, &self.value) {
            (Some(field), Some(value)) => {
                write!(f, "{field}: {} -> {}", self.class, walk::short(value))
            }
            _ => f.write_str(self.class.label()),
        }
    }
}

/// A derived workload.
#[derive(Debug, Clone)]
pub struct Derived {
    /// The workload file's text: a header, and a comment naming each step's field and
    /// value class.
    pub text: String,
    /// The same, parsed by [`Workload::parse`].
    pub workload: Workload,
    /// What each step exercises, in step order.
    pub steps: Vec<StepOrigin>,
    /// What was not exercised and why, as `(field, reason)`.
    pub skipped: Vec<(String, String)>,
    /// The CEL rules (`x-kubernetes-validations`) of the spec's schema, as `(field,
    /// rule)`: not checked, so a step may break one and the API server refuse it.
    pub unchecked_rules: Vec<(String, String)>,
    /// The fields not reached because the budget of updates ran out.
    pub left_out: usize,
}

/// Why no workload could be derived.
#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    /// The CRD is not an `apiextensions.k8s.io/v1` CustomResourceDefinition.
    #[error("not an apiextensions.k8s.io/v1 CustomResourceDefinition: {0}")]
    NotACrd(String),
    /// The sample lacks what a workload needs (apiVersion, kind, metadata.name, a spec
    /// that is an object).
    #[error("the sample: {0}")]
    Sample(String),
    /// The sample is of another group or kind than the CRD defines.
    #[error("the sample is a {sample}, the CRD {crd} defines {defined}")]
    KindMismatch {
        /// The sample's `group/kind`.
        sample: String,
        /// The CRD's name.
        crd: String,
        /// The CRD's `group/kind`.
        defined: String,
    },
    /// The CRD does not serve the sample's version.
    #[error(
        "the CRD {crd} does not serve version {version} (the sample's apiVersion); it serves: {}",
        if served.is_empty() { "none".to_string() } else { served.join(", ") }
    )]
    VersionNotServed {
        /// The CRD's name.
        crd: String,
        /// The sample's version.
        version: String,
        /// The versions the CRD serves.
        served: Vec<String>,
    },
    /// The version has no `schema.openAPIV3Schema.properties.spec`.
    #[error("the CRD {crd}, version {version}, has no schema.openAPIV3Schema.properties.spec")]
    NoSpecSchema {
        /// The CRD's name.
        crd: String,
        /// The version.
        version: String,
    },
    /// The sample's spec is not valid under the schema: nothing valid can start from it.
    #[error("the sample's spec is not valid under the CRD's schema: {0}")]
    InvalidSample(String),
    /// The derived text could not be written as YAML.
    #[error("writing the derived workload as YAML: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// The derived workload does not parse: a bug of this module.
    #[error("the derived workload does not parse (a bug of sieve derive): {0}")]
    Workload(#[from] WorkloadError),
}

/// The sample's identity and spec.
struct Sample<'a> {
    group: &'a str,
    version: &'a str,
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    spec: Json,
}

impl<'a> Sample<'a> {
    fn read(sample: &'a Json) -> Result<Self, DeriveError> {
        let field = |pointer: &str| {
            sample
                .pointer(pointer)
                .and_then(Json::as_str)
                .ok_or_else(|| {
                    let field = pointer[1..].replace('/', ".");
                    DeriveError::Sample(format!("no {field} (a string)"))
                })
        };
        let api_version = field("/apiVersion")?;
        let (group, version) = api_version
            .split_once('/')
            .ok_or_else(|| DeriveError::Sample(format!("apiVersion {api_version} has no group")))?;
        let spec = match sample.get("spec") {
            None => json!({}),
            Some(spec @ Json::Object(_)) => spec.clone(),
            Some(_) => return Err(DeriveError::Sample("spec is not an object".into())),
        };
        Ok(Self {
            group,
            version,
            api_version,
            kind: field("/kind")?,
            name: field("/metadata/name")?,
            spec,
        })
    }
}

/// The CRD's name and the spec schema of `version`, checked against the sample.
fn spec_schema<'c>(crd: &'c Json, sample: &Sample<'_>) -> Result<(&'c str, &'c Json), DeriveError> {
    if crd.get("apiVersion").and_then(Json::as_str) != Some("apiextensions.k8s.io/v1")
        || crd.get("kind").and_then(Json::as_str) != Some("CustomResourceDefinition")
    {
        return Err(DeriveError::NotACrd(format!(
            "apiVersion {}, kind {}",
            crd.get("apiVersion").unwrap_or(&Json::Null),
            crd.get("kind").unwrap_or(&Json::Null)
        )));
    }
    let text = |pointer: &str| crd.pointer(pointer).and_then(Json::as_str).unwrap_or("");
    let name = text("/metadata/name");
    let (group, kind) = (text("/spec/group"), text("/spec/names/kind"));
    if (group, kind) != (sample.group, sample.kind) {
        return Err(DeriveError::KindMismatch {
            sample: format!("{}/{}", sample.group, sample.kind),
            crd: name.to_string(),
            defined: format!("{group}/{kind}"),
        });
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Json::as_array)
        .ok_or_else(|| DeriveError::NotACrd("no spec.versions".into()))?;
    let served = |v: &&Json| v.get("served").and_then(Json::as_bool) == Some(true);
    let version = versions
        .iter()
        .filter(served)
        .find(|v| v.get("name").and_then(Json::as_str) == Some(sample.version))
        .ok_or_else(|| DeriveError::VersionNotServed {
            crd: name.to_string(),
            version: sample.version.to_string(),
            served: versions
                .iter()
                .filter(served)
                .filter_map(|v| v.get("name").and_then(Json::as_str).map(str::to_string))
                .collect(),
        })?;
    let schema = version
        .pointer("/schema/openAPIV3Schema/properties/spec")
        .ok_or_else(|| DeriveError::NoSpecSchema {
            crd: name.to_string(),
            version: sample.version.to_string(),
        })?;
    Ok((name, schema))
}

/// Derives the workload of `sample` (a custom resource) under `crd` (its
/// CustomResourceDefinition): see the module's docs.
pub fn derive(crd: &Json, sample: &Json, options: &DeriveOptions) -> Result<Derived, DeriveError> {
    let sample = Sample::read(sample)?;
    let (crd_name, schema) = spec_schema(crd, &sample)?;
    schema::validate(&sample.spec, schema, "spec").map_err(DeriveError::InvalidSample)?;
    let budget = match options.depth {
        Depth::Short => Some(options.max_steps.unwrap_or(SHORT_MAX_UPDATES)),
        Depth::Full => options.max_steps,
    };
    let mut walker = walk::Walker::new(schema, sample.spec.clone(), options.depth, budget);
    walker.object(schema, &[]);

    let name = sample.name;
    let mut steps = vec![(
        StepOrigin {
            number: 1,
            field: None,
            class: ValueClass::Create,
            value: None,
        },
        json!({"create": {
            "apiVersion": sample.api_version,
            "kind": sample.kind,
            "name": name,
            "spec": sample.spec,
        }}),
    )];
    for update in &walker.updates {
        steps.push((
            StepOrigin {
                number: steps.len() + 1,
                field: Some(update.field.clone()),
                class: update.class,
                value: Some(update.value.clone()),
            },
            json!({"update": {"name": name, "patch": update.patch}}),
        ));
    }
    for (class, step) in [
        (ValueClass::Delete, json!({"delete": {"name": name}})),
        (
            ValueClass::Recreate,
            json!({"recreate": {"name": name, "spec": sample.spec}}),
        ),
    ] {
        let origin = StepOrigin {
            number: steps.len() + 1,
            field: None,
            class,
            value: None,
        };
        steps.push((origin, step));
    }
    let rules = schema::cel_rules(schema, "spec");
    let header = emit::Header {
        crd: crd_name,
        version: sample.version,
        kind: sample.kind,
        name,
        depth: options.depth,
        budget,
        updates: walker.updates.len(),
        skipped: &walker.skipped,
        rules: &rules,
        left_out: walker.left_out,
    };
    let text = emit::text(&header, &steps)?;
    let workload = Workload::parse(&text)?;
    Ok(Derived {
        text,
        workload,
        steps: steps.into_iter().map(|(origin, _)| origin).collect(),
        skipped: walker.skipped,
        unchecked_rules: rules,
        left_out: walker.left_out,
    })
}

/// The spec each object of `workload` ends with once every step is applied in order (a
/// create or recreate sets it, an update merges its patch, a delete removes the
/// object), in the order the objects were first created; a deleted object is absent.
/// Acto's differential oracle creates a fresh object with this spec and compares the
/// state it reaches with the state the workload reached.
pub fn final_specs(workload: &Workload) -> Vec<(Target, Json)> {
    let mut objects: Vec<(Target, Option<Json>)> = Vec::new();
    for step in &workload.steps {
        let index = match objects.iter().position(|(t, _)| t.name == step.target.name) {
            Some(index) => index,
            None => {
                objects.push((step.target.clone(), None));
                objects.len() - 1
            }
        };
        let spec = &mut objects[index].1;
        *spec = match &step.action {
            Action::Create { spec } | Action::Recreate { spec, .. } => Some(spec.clone()),
            Action::Update { patch } => spec.as_ref().map(|s| merge_patch(s, patch)),
            Action::Delete => None,
        };
    }
    objects
        .into_iter()
        .filter_map(|(target, spec)| spec.map(|spec| (target, spec)))
        .collect()
}

/// What each step of a derived workload's text exercises, read back from its comments
/// (`# step 3: spec.replicas: maximum -> 10`) as `(step number, what)`: a report can
/// name the field and the step of a failure with only the workload file at hand.
/// Empty for a workload that was not derived.
pub fn step_notes(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("# step ")?;
            let (number, what) = rest.split_once(": ")?;
            Some((number.parse().ok()?, what.to_string()))
        })
        .collect()
}

/// `patch` applied to `target` as a JSON merge patch (RFC 7386): objects merge key by
/// key, `null` removes a key, anything else replaces.
pub fn merge_patch(target: &Json, patch: &Json) -> Json {
    let Json::Object(patch) = patch else {
        return patch.clone();
    };
    let mut result = match target {
        Json::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch {
        if value.is_null() {
            result.remove(key);
        } else {
            let merged = merge_patch(result.get(key).unwrap_or(&Json::Null), value);
            result.insert(key.clone(), merged);
        }
    }
    Json::Object(result)
}

#[cfg(test)]
#[path = "derive_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "derive/repository_tests.rs"]
mod repository_tests;
