//! The controllers: one module per kind, kubebuilder's `internal/controller`.
//!
//! Each module has the same three public parts:
//!
//! - `setup(mgr)`: controller-runtime's `SetupWithManager`, the controller's watches
//!   (`for_::<Kind>()`, `owns::<Deployment>()`) and its reconciler, added to the manager;
//! - the reconciler, a `builder::Reconciler`: `reconcile(request)` reads the object
//!   from the informer's cache and makes the world match it, level-triggered (it gets a
//!   name, never the event, and must give the same result however often it runs);
//! - `rbac()`: the RBAC rules the controller needs, which `cargo run --bin manifests`
//!   writes to `deploy/rbac/role.yaml` (kubebuilder's `+kubebuilder:rbac` markers).
//!
//! What they share lives here: the [`Error`] a reconcile fails with,
//! [`set_status_condition`] and [`policy_rule`].
//!
//! (`controller` inside these modules is the runtime's crate, `kcr-controller`:
//! the sync loop, owner references, `ApiError`. This module is `crate::controller`.)

pub mod guestbook;
pub mod memcached;
// +kcr:scaffold:controller-modules

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// The condition type every controller here reports: whether the object is ready.
pub const CONDITION_READY: &str = "Ready";

/// Why a reconcile failed. Every variant means "retry with backoff": the loop logs the
/// error and requeues the request with per-key exponential backoff (5 ms doubling to
/// 1000 s). A problem that retrying cannot fix (a bad spec) is not an error: report it
/// in a condition and an Event, and return `Ok`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The lister could not answer (a malformed key: a bug).
    #[error("reading the cache: {0}")]
    Cache(#[from] cache::Error),
    /// An API call failed (a 409 Conflict, a refused write, the API server away).
    #[error(transparent)]
    Api(#[from] controller::ApiError),
    /// An owner reference could not be built (the owner has no UID).
    #[error(transparent)]
    OwnerRef(controller::Error),
    /// An object of the name the controller wants exists and is controlled by someone
    /// else: it is never touched (sample-controller's `ErrResourceExists`).
    #[error("{kind} {name:?} already exists and is not controlled by this object")]
    ResourceExists {
        /// The object's kind.
        kind: &'static str,
        /// The object's name.
        name: String,
    },
}

impl Error {
    /// The error as users read it in a Warning Event or a condition's message: for a
    /// refused write, the API server's own message.
    pub fn user_message(&self) -> String {
        match self {
            Error::Api(err) => err.user_message(),
            other => other.to_string(),
        }
    }

    /// The `reason` of the Warning Event and of the `Ready=False` condition this error
    /// is reported with (UpperCamelCase, as the API conventions ask).
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Cache(_) | Error::OwnerRef(_) => "InternalError",
            Error::Api(_) => "ApiError",
            Error::ResourceExists { .. } => "ErrResourceExists",
        }
    }
}

/// Sets `new` in `conditions` (apimachinery's `meta.SetStatusCondition`): adds it, or
/// updates the condition of the same type. `lastTransitionTime` moves only when the
/// status changes, as the API conventions ask. Returns whether anything changed, so a
/// reconcile that finds everything in place writes no status.
///
/// ```
/// use guestbook::controller::set_status_condition;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
/// use k8s_openapi::jiff::Timestamp;
///
/// let ready = |status: &str, second: i64| Condition {
///     type_: "Ready".into(),
///     status: status.into(),
///     reason: "Reconciled".into(),
///     message: String::new(),
///     observed_generation: Some(1),
///     last_transition_time: Time(Timestamp::from_second(second).unwrap()),
/// };
/// let mut conditions = Vec::new();
/// assert!(set_status_condition(&mut conditions, ready("True", 10)));
/// // Same status later: nothing changes, the transition time stays.
/// assert!(!set_status_condition(&mut conditions, ready("True", 20)));
/// assert_eq!(conditions[0].last_transition_time, ready("True", 10).last_transition_time);
/// ```
pub fn set_status_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        conditions.push(new);
        return true;
    };
    if existing.status != new.status {
        *existing = new;
        return true;
    }
    let changed = existing.reason != new.reason
        || existing.message != new.message
        || existing.observed_generation != new.observed_generation;
    existing.reason = new.reason;
    existing.message = new.message;
    existing.observed_generation = new.observed_generation;
    changed
}

/// The condition of type `type_` in `conditions`, if any (apimachinery's
/// `meta.FindStatusCondition`).
pub fn find_status_condition<'a>(
    conditions: &'a [Condition],
    type_: &str,
) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// What the manager itself needs, whatever its controllers do: reviewing a scraper's
/// token and access for the secure `/metrics` endpoint (`--metrics-secure`, the
/// default), and writing Events in both Event APIs (`--events-api`).
pub fn manager_rules() -> Vec<PolicyRule> {
    vec![
        policy_rule("authentication.k8s.io", "tokenreviews", &["create"]),
        policy_rule("authorization.k8s.io", "subjectaccessreviews", &["create"]),
        policy_rule("", "events", &["create", "patch"]),
        policy_rule("events.k8s.io", "events", &["create", "patch"]),
    ]
}

/// One RBAC rule: `verbs` on `resource` (plural, or `plural/subresource`) of
/// `api_group` (`""` for the core group). What kubebuilder's
/// `// +kubebuilder:rbac:groups=...,resources=...,verbs=...` marker says.
pub fn policy_rule(api_group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![api_group.to_string()]),
        resources: Some(vec![resource.to_string()]),
        verbs: verbs.iter().map(|verb| verb.to_string()).collect(),
        ..PolicyRule::default()
    }
}
