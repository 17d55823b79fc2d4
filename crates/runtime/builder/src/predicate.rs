//! Event filters: controller-runtime's `predicate` package.
//!
//! A predicate looks at an informer event *before* it becomes a work-queue key and
//! says whether it is worth a reconcile. It is the builder's version of the
//! `if old.resourceVersion == new.resourceVersion { return }` check at the top of
//! sample-controller's `handleObject`: cheap filtering where the events arrive, so the
//! queue only sees changes that matter.
//!
//! Predicates here see an object's [`ObjectMeta`] (generation, resourceVersion,
//! labels...), which is what every predicate controller-runtime ships reads; that
//! keeps them object-safe, so one filter serves every kind a controller watches.
//!
//! # Defaults
//!
//! With no predicate, **every** event passes, as in controller-runtime: adds (the
//! initial list included), updates (periodic resyncs included: they are the
//! level-triggered safety net), and deletes. Add filters with
//! [`Builder::with_event_filter`](crate::Builder::with_event_filter) (every watch of the
//! controller) or the `*_with` methods (one watch). Several predicates must all pass
//! (controller-runtime ANDs them too); use [`Or`] for "either".
//!
//! | predicate | create | update passes when | delete |
//! |---|---|---|---|
//! | [`GenerationChanged`] | yes | `metadata.generation` changed (a spec edit, not a status or metadata write) | yes |
//! | [`ResourceVersionChanged`] | yes | `metadata.resourceVersion` changed (anything but a resync) | yes |
//! | [`LabelSelectorPredicate`] | labels match | the new labels match | labels match |
//! | [`Funcs`] | your closures | | |

use std::fmt;
use std::sync::Arc;

use cache::Selector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Whether an event is worth a reconcile: controller-runtime's `predicate.Predicate`.
///
/// Every method defaults to `true` (let the event through).
pub trait Predicate: Send + Sync + 'static {
    /// An object was added (or listed at start).
    fn create(&self, _obj: &ObjectMeta) -> bool {
        true
    }
    /// An object changed (or a periodic resync re-delivered it unchanged).
    fn update(&self, _old: &ObjectMeta, _new: &ObjectMeta) -> bool {
        true
    }
    /// An object was deleted (its last known state).
    fn delete(&self, _obj: &ObjectMeta) -> bool {
        true
    }
}

/// A shared, type-erased predicate, as the builder stores them.
pub type BoxPredicate = Arc<dyn Predicate>;

/// Passes updates whose `metadata.generation` changed: controller-runtime's
/// `GenerationChangedPredicate`.
///
/// The API server bumps `generation` on a change to a custom resource's spec (with the
/// status subresource enabled), not on a status or metadata write, so this filter lets
/// a reconciler update its own object's status without waking itself up. Its price:
/// label and annotation edits do not reconcile either. Creates and deletes pass.
///
/// ```
/// use builder::predicate::{GenerationChanged, Predicate};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let meta = |generation| ObjectMeta { generation: Some(generation), ..Default::default() };
/// assert!(!GenerationChanged.update(&meta(1), &meta(1))); // a status write
/// assert!(GenerationChanged.update(&meta(1), &meta(2))); // a spec edit
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GenerationChanged;

impl Predicate for GenerationChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.generation != new.generation
    }
}

/// Passes updates whose `metadata.resourceVersion` changed, i.e. every real change and
/// no periodic resync: controller-runtime's `ResourceVersionChangedPredicate`.
///
/// ```
/// use builder::predicate::{Predicate, ResourceVersionChanged};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let meta = |rv: &str| ObjectMeta { resource_version: Some(rv.into()), ..Default::default() };
/// assert!(!ResourceVersionChanged.update(&meta("7"), &meta("7"))); // a resync
/// assert!(ResourceVersionChanged.update(&meta("7"), &meta("8")));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceVersionChanged;

impl Predicate for ResourceVersionChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.resource_version != new.resource_version
    }
}

/// Passes events for objects whose labels match a selector: controller-runtime's
/// `LabelSelectorPredicate`. For an update, the new labels decide.
///
/// Filtering here still lists and caches every object; to keep non-matching objects
/// out of the cache too, give the informer a server-side label selector instead.
///
/// ```
/// use builder::predicate::{LabelSelectorPredicate, Predicate};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let only_web = LabelSelectorPredicate::parse("app=web").unwrap();
/// let labelled = |app: &str| ObjectMeta {
///     labels: Some([("app".to_string(), app.to_string())].into()),
///     ..Default::default()
/// };
/// assert!(only_web.create(&labelled("web")));
/// assert!(!only_web.create(&labelled("db")));
/// assert!(!only_web.create(&ObjectMeta::default()));
/// ```
#[derive(Debug, Clone)]
pub struct LabelSelectorPredicate {
    selector: Selector,
}

impl LabelSelectorPredicate {
    /// A predicate for `selector`.
    pub fn new(selector: Selector) -> Self {
        Self { selector }
    }

    /// Parses a selector string (`app=web,tier in (a,b)`).
    pub fn parse(selector: &str) -> Result<Self, cache::Error> {
        Ok(Self::new(Selector::parse(selector)?))
    }

    fn matches(&self, obj: &ObjectMeta) -> bool {
        match &obj.labels {
            Some(labels) => self.selector.matches(labels),
            None => self.selector.matches(&Default::default()),
        }
    }
}

impl Predicate for LabelSelectorPredicate {
    fn create(&self, obj: &ObjectMeta) -> bool {
        self.matches(obj)
    }
    fn update(&self, _old: &ObjectMeta, new: &ObjectMeta) -> bool {
        self.matches(new)
    }
    fn delete(&self, obj: &ObjectMeta) -> bool {
        self.matches(obj)
    }
}

/// Passes an event when either predicate does: controller-runtime's `predicate.Or`.
///
/// ```
/// use builder::predicate::{Funcs, GenerationChanged, Or, Predicate};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// // A spec change, or a label change.
/// let labels_changed = Funcs::new().on_update(|old, new| old.labels != new.labels);
/// let filter = Or(GenerationChanged, labels_changed);
/// let labelled = ObjectMeta { labels: Some([("a".into(), "b".into())].into()), ..Default::default() };
/// assert!(filter.update(&ObjectMeta::default(), &labelled));
/// assert!(!filter.update(&labelled, &labelled));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Or<A, B>(pub A, pub B);

impl<A: Predicate, B: Predicate> Predicate for Or<A, B> {
    fn create(&self, obj: &ObjectMeta) -> bool {
        self.0.create(obj) || self.1.create(obj)
    }
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        self.0.update(old, new) || self.1.update(old, new)
    }
    fn delete(&self, obj: &ObjectMeta) -> bool {
        self.0.delete(obj) || self.1.delete(obj)
    }
}

type CreateFn = Arc<dyn Fn(&ObjectMeta) -> bool + Send + Sync>;
type UpdateFn = Arc<dyn Fn(&ObjectMeta, &ObjectMeta) -> bool + Send + Sync>;

/// A predicate from closures; an event without a closure passes: controller-runtime's
/// `predicate.Funcs`.
#[derive(Clone, Default)]
pub struct Funcs {
    create: Option<CreateFn>,
    update: Option<UpdateFn>,
    delete: Option<CreateFn>,
}

impl fmt::Debug for Funcs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Funcs")
            .field("create", &self.create.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl Funcs {
    /// Lets everything through until closures are set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Filters creates with `f`.
    pub fn on_create(mut self, f: impl Fn(&ObjectMeta) -> bool + Send + Sync + 'static) -> Self {
        self.create = Some(Arc::new(f));
        self
    }
    /// Filters updates with `f(old, new)`.
    pub fn on_update(
        mut self,
        f: impl Fn(&ObjectMeta, &ObjectMeta) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Arc::new(f));
        self
    }
    /// Filters deletes with `f`.
    pub fn on_delete(mut self, f: impl Fn(&ObjectMeta) -> bool + Send + Sync + 'static) -> Self {
        self.delete = Some(Arc::new(f));
        self
    }
}

impl Predicate for Funcs {
    fn create(&self, obj: &ObjectMeta) -> bool {
        self.create.as_ref().is_none_or(|f| f(obj))
    }
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        self.update.as_ref().is_none_or(|f| f(old, new))
    }
    fn delete(&self, obj: &ObjectMeta) -> bool {
        self.delete.as_ref().is_none_or(|f| f(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(generation: i64, rv: &str, app: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            generation: Some(generation),
            resource_version: Some(rv.into()),
            labels: app.map(|a| [("app".to_string(), a.to_string())].into()),
            ..Default::default()
        }
    }

    #[test]
    fn generation_changed_lets_creates_deletes_and_spec_edits_through() {
        let p = GenerationChanged;
        assert!(p.create(&meta(1, "1", None)));
        assert!(p.delete(&meta(1, "1", None)));
        assert!(
            !p.update(&meta(1, "1", None), &meta(1, "2", None)),
            "status write"
        );
        assert!(
            p.update(&meta(1, "1", None), &meta(2, "2", None)),
            "spec edit"
        );
    }

    #[test]
    fn resource_version_changed_drops_only_resyncs() {
        let p = ResourceVersionChanged;
        assert!(!p.update(&meta(1, "5", None), &meta(1, "5", None)));
        assert!(p.update(&meta(1, "5", None), &meta(1, "6", None)));
        assert!(p.create(&meta(1, "5", None)) && p.delete(&meta(1, "5", None)));
    }

    #[test]
    fn label_selector_decides_on_the_new_labels() {
        let p = LabelSelectorPredicate::parse("app=web").unwrap();
        assert!(p.update(&meta(1, "1", None), &meta(1, "2", Some("web"))));
        assert!(!p.update(&meta(1, "1", Some("web")), &meta(1, "2", Some("db"))));
        assert!(p.delete(&meta(1, "1", Some("web"))));
        assert!(!p.delete(&meta(1, "1", None)));
        assert!(LabelSelectorPredicate::parse("app in (web").is_err());
    }

    #[test]
    fn funcs_default_to_passing() {
        let p = Funcs::new().on_delete(|_| false);
        assert!(p.create(&meta(1, "1", None)));
        assert!(p.update(&meta(1, "1", None), &meta(1, "1", None)));
        assert!(!p.delete(&meta(1, "1", None)));
    }
}
