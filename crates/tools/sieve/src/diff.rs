//! The end-state comparison: a plan's end state against the learning run's (the
//! reference).
//!
//! Each run has a namespace of its own and objects of its own, so what differs from run
//! to run for no fault of the controller's is normalized away first ([`normalize`]):
//!
//! - `metadata`: `uid`, `resourceVersion`, `creationTimestamp`, `generation`,
//!   `managedFields` and `selfLink` are dropped; `deletionTimestamp` keeps only that it
//!   is set; `namespace` becomes `<namespace>` when it is the run's own; a name made from
//!   `generateName` becomes `<generateName>*`; `ownerReferences[].uid` is dropped;
//! - `status.conditions[]`: `lastTransitionTime` and `lastUpdateTime` are dropped, and
//!   the conditions are sorted by type;
//! - what the [default ignore rules](crate::ignore::DEFAULT_RULES) drop (a Deployment's
//!   condition messages, which name its generated ReplicaSet);
//! - whatever [`Options::ignore`] adds (e.g. a status timestamp of the controller's own:
//!   the presets' rules, `--ignore`, `--ignore-file`).
//!
//! `status.observedGeneration` is kept: it tells whether the controller caught up (and
//! how many specs it went through: [`Options::shorter_history`] says when fewer is fine).
//!
//! Objects are matched by (kind, name) ([`ObjectId`]); the [`StateDiff`] lists those
//! missing from the plan's end state, those extra in it, and those changed, each change
//! with its JSON path and both values.

use std::collections::BTreeMap;

use std::sync::LazyLock;

use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::ignore::IgnoreRule;

/// [`IgnoreRule::defaults`], parsed once.
static DEFAULT_RULES: LazyLock<Vec<IgnoreRule>> = LazyLock::new(IgnoreRule::defaults);

/// What the comparison drops beyond the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Paths to drop, for every kind or one ([`IgnoreRule`]); `*` stands for every
    /// element of an array or every key of an object: `.status.lastUpdateTime`.
    /// [`IgnoreRule::defaults`] apply besides these.
    pub ignore: Vec<IgnoreRule>,
    /// The run may have skipped states of an object (an unobserved-state plan): a
    /// [history counter](HISTORY_COUNTERS) lower than the reference's is then no
    /// difference. A level-triggered controller that never saw a Foo's first spec
    /// creates its Deployment at the final one: one rollout, `observedGeneration` 1,
    /// where the learning run created and then changed it (2). A counter *higher* than
    /// the reference's (needless rollouts) stays a difference.
    pub shorter_history: bool,
}

/// Paths that count an object's history (how many specs or rollouts it went through),
/// not its state: `.status.observedGeneration` of every kind (and a status condition's,
/// `.status.conditions[N].observedGeneration`: see [`is_history_counter`]), and the
/// Deployment controller's revision annotation.
pub const HISTORY_COUNTERS: &[&str] = &[
    ".status.observedGeneration",
    ".metadata.annotations[\"deployment.kubernetes.io/revision\"]",
];

/// Whether `path` is a [history counter](HISTORY_COUNTERS), a condition's
/// `observedGeneration` included.
pub fn is_history_counter(path: &str) -> bool {
    HISTORY_COUNTERS.contains(&path)
        || (path.starts_with(".status.conditions[") && path.ends_with("].observedGeneration"))
}

/// The paths every comparison drops (besides the special cases of [`normalize`]).
const DEFAULT_IGNORED: &[&[&str]] = &[
    &["metadata", "uid"],
    &["metadata", "resourceVersion"],
    &["metadata", "creationTimestamp"],
    &["metadata", "generation"],
    &["metadata", "managedFields"],
    &["metadata", "selfLink"],
    &["metadata", "ownerReferences", "*", "uid"],
    &["status", "conditions", "*", "lastTransitionTime"],
    &["status", "conditions", "*", "lastUpdateTime"],
];

/// Objects every namespace holds that no controller under test makes: `(kind, name)`.
/// kube-controller-manager puts the cluster's CA into `kube-root-ca.crt` in each
/// namespace; a replay on another control plane has another CA.
pub const CLUSTER_OBJECTS: &[(&str, &str)] = &[("ConfigMap", "kube-root-ca.crt")];

/// What `metadata.namespace` becomes when it is the run's own namespace.
pub const NAMESPACE_PLACEHOLDER: &str = "<namespace>";

/// An object's identity across runs: its kind and its (normalized) name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectId {
    /// The kind.
    pub kind: String,
    /// The name; `<generateName>*` for a generated one.
    pub name: String,
}

impl std::fmt::Display for ObjectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// One value that differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Its JSON path, jq style: `.spec.replicas`, `.metadata.labels["app"]`, `.items[0]`.
    pub path: String,
    /// The value in the reference (`None`: absent).
    pub reference: Option<Json>,
    /// The value in the plan's end state (`None`: absent).
    pub actual: Option<Json>,
}

/// An object in both end states, with its differences.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    /// The object.
    pub id: ObjectId,
    /// What differs, in path order.
    pub differences: Vec<Difference>,
}

/// The differences between two end states.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StateDiff {
    /// In the reference, not in the plan's end state.
    pub missing: Vec<ObjectId>,
    /// In the plan's end state, not in the reference (a duplicate is one more).
    pub extra: Vec<ObjectId>,
    /// In both, different.
    pub changed: Vec<Changed>,
}

impl StateDiff {
    /// Whether the end states are the same (after normalization).
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty() && self.changed.is_empty()
    }
}

impl std::fmt::Display for StateDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            return writeln!(f, "end states equal");
        }
        for id in &self.missing {
            writeln!(f, "missing: {id}")?;
        }
        for id in &self.extra {
            writeln!(f, "extra: {id}")?;
        }
        for changed in &self.changed {
            writeln!(f, "changed: {}", changed.id)?;
            for d in &changed.differences {
                let show = |v: &Option<Json>| {
                    v.as_ref()
                        .map_or_else(|| "(absent)".to_string(), Json::to_string)
                };
                writeln!(
                    f,
                    "  {}: reference {}, actual {}",
                    d.path,
                    show(&d.reference),
                    show(&d.actual)
                )?;
            }
        }
        Ok(())
    }
}

/// `object` as the comparison sees it, for a run in `namespace`.
pub fn normalize(object: &Json, namespace: &str, options: &Options) -> Json {
    let mut object = object.clone();
    for path in DEFAULT_IGNORED {
        remove_path(&mut object, path);
    }
    let kind = object
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    for rule in DEFAULT_RULES.iter().chain(&options.ignore) {
        if rule.applies_to(&kind) {
            let path: Vec<&str> = rule.path.iter().map(String::as_str).collect();
            remove_path(&mut object, &path);
        }
    }
    // Conditions are a map keyed by type (`listType: map`): their order is the order
    // they were first set in, which differs between two histories that end alike (a
    // Deployment created at its final size, or scaled to it).
    if let Some(Json::Array(conditions)) = object.pointer_mut("/status/conditions") {
        conditions.sort_by(|a, b| {
            let ty = |c: &Json| c.get("type").and_then(Json::as_str).map(str::to_owned);
            ty(a).cmp(&ty(b))
        });
    }
    if let Some(metadata) = object.get_mut("metadata").and_then(Json::as_object_mut) {
        if let Some(deletion) = metadata.get_mut("deletionTimestamp") {
            *deletion = Json::String("<set>".into());
        }
        if metadata.get("namespace").and_then(Json::as_str) == Some(namespace) {
            metadata.insert(
                "namespace".into(),
                Json::String(NAMESPACE_PLACEHOLDER.into()),
            );
        }
        let generated = match (metadata.get("generateName"), metadata.get("name")) {
            (Some(Json::String(prefix)), Some(Json::String(name)))
                if !prefix.is_empty() && name.starts_with(prefix.as_str()) =>
            {
                Some(format!("{prefix}*"))
            }
            _ => None,
        };
        if let Some(name) = generated {
            metadata.insert("name".into(), Json::String(name));
        }
    }
    object
}

/// The id of a normalized object.
fn id_of(object: &Json) -> ObjectId {
    let text = |v: Option<&Json>| v.and_then(Json::as_str).unwrap_or_default().to_string();
    ObjectId {
        kind: text(object.get("kind")),
        name: text(object.pointer("/metadata/name")),
    }
}

/// Compares a plan's end state (`actual`, in `actual_namespace`) with the reference
/// (`reference`, in `reference_namespace`).
pub fn compare(
    reference: &[Json],
    reference_namespace: &str,
    actual: &[Json],
    actual_namespace: &str,
    options: &Options,
) -> StateDiff {
    let group = |objects: &[Json], namespace: &str| {
        let mut groups: BTreeMap<ObjectId, Vec<Json>> = BTreeMap::new();
        for object in objects {
            let object = normalize(object, namespace, options);
            let id = id_of(&object);
            if CLUSTER_OBJECTS.contains(&(id.kind.as_str(), id.name.as_str())) {
                continue;
            }
            groups.entry(id).or_default().push(object);
        }
        groups
    };
    let mut reference = group(reference, reference_namespace);
    let mut actual = group(actual, actual_namespace);
    let mut ids: Vec<ObjectId> = reference.keys().chain(actual.keys()).cloned().collect();
    ids.sort();
    ids.dedup();
    let mut diff = StateDiff::default();
    for id in ids {
        let mut expected = reference.remove(&id).unwrap_or_default();
        let mut got = actual.remove(&id).unwrap_or_default();
        // Equal objects pair first, so a duplicate is reported extra, not changed.
        expected.retain(|e| match got.iter().position(|g| g == e) {
            Some(i) => {
                got.remove(i);
                false
            }
            None => true,
        });
        let paired = expected.len().min(got.len());
        for (e, g) in expected.iter().zip(&got) {
            let mut differences = Vec::new();
            differences_at(String::new(), Some(e), Some(g), &mut differences);
            if options.shorter_history {
                differences.retain(|d| !is_shorter_history(d));
            }
            if !differences.is_empty() {
                diff.changed.push(Changed {
                    id: id.clone(),
                    differences,
                });
            }
        }
        diff.missing
            .extend(expected[paired..].iter().map(|_| id.clone()));
        diff.extra.extend(got[paired..].iter().map(|_| id.clone()));
    }
    diff
}

/// Whether `d` is a [history counter](HISTORY_COUNTERS) lower in the run than in the
/// reference (numbers, or numbers as strings as annotations hold them).
fn is_shorter_history(d: &Difference) -> bool {
    let count = |v: &Option<Json>| match v {
        Some(Json::Number(n)) => n.as_u64(),
        Some(Json::String(s)) => s.parse().ok(),
        _ => None,
    };
    is_history_counter(&d.path)
        && matches!((count(&d.reference), count(&d.actual)), (Some(r), Some(a)) if a < r)
}

/// Appends the differences between `a` and `b` under `path`.
fn differences_at(path: String, a: Option<&Json>, b: Option<&Json>, out: &mut Vec<Difference>) {
    match (a, b) {
        (Some(Json::Object(a)), Some(Json::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                differences_at(
                    format!("{path}{}", key_segment(key)),
                    a.get(key),
                    b.get(key),
                    out,
                );
            }
        }
        (Some(Json::Array(a)), Some(Json::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                differences_at(format!("{path}[{i}]"), a.get(i), b.get(i), out);
            }
        }
        (a, b) if a != b => out.push(Difference {
            path: if path.is_empty() { ".".into() } else { path },
            reference: a.cloned(),
            actual: b.cloned(),
        }),
        _ => {}
    }
}

/// `.key`, or `["key"]` when the key is not a plain identifier.
fn key_segment(key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{key}")
    } else {
        format!("[{}]", Json::String(key.to_string()))
    }
}

/// Removes what `path` names from `value` (`*`: every element or key).
fn remove_path(value: &mut Json, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let children: Vec<&mut Json> = match (value, *first) {
        (Json::Object(map), "*") if rest.is_empty() => {
            *map = Map::new();
            return;
        }
        (Json::Object(map), key) if rest.is_empty() => {
            map.remove(key);
            return;
        }
        (Json::Array(items), "*") if rest.is_empty() => {
            items.clear();
            return;
        }
        (Json::Object(map), "*") => map.values_mut().collect(),
        (Json::Object(map), key) => map.get_mut(key).into_iter().collect(),
        (Json::Array(items), "*") => items.iter_mut().collect(),
        _ => return,
    };
    for child in children {
        remove_path(child, rest);
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
