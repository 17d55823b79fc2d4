//! The informer event handlers: how changes become work-queue keys.
//!
//! sample-controller registers two sets of handlers:
//!
//! - on Foos: add and update enqueue the Foo's key (`enqueueFoo`). Deletes need no
//!   handler: the garbage collector deletes the Deployment through its owner
//!   reference.
//! - on Deployments: any change to a Deployment *owned by a Foo* enqueues that Foo
//!   (`handleObject`), so a Deployment that is scaled by hand, deleted, or becomes
//!   available is noticed and converged. Periodic resyncs re-deliver every
//!   Deployment as an update with an unchanged resourceVersion; those are skipped,
//!   because nothing changed.
//!
//! Initial-list adds and resync updates are queued at low priority
//! ([`controller::event_priority`]), so after a restart a Foo a user has just changed
//! does not wait behind every Foo that exists.
//!
//! Handlers only compute keys and add them to the queue (and look an owner up in the
//! Foo lister): quick, and never blocking. So they are called on the informer's own
//! task ([`EventHandler::delivers_inline`]) rather than each on a thread of its own,
//! which saves a thread wake-up per event. The queue deduplicates, so a burst of
//! events for one Foo costs one sync.

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::Foo;
use cache::{DeletedObject, EventHandler, Lister, Selector, meta_namespace_key};
use controller::{controller_owner_key, event_priority, get_controller_of};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Resource;
use tracing::{debug, warn};
use workqueue::{AddOpts, RateLimitingQueue};

/// Foo add/update -> enqueue the Foo (sample-controller's `enqueueFoo`).
pub struct FooHandler {
    queue: RateLimitingQueue<String>,
}

impl FooHandler {
    /// A handler feeding `queue`.
    pub fn new(queue: RateLimitingQueue<String>) -> Self {
        Self { queue }
    }

    fn enqueue(&self, foo: &Foo, priority: i32) {
        match meta_namespace_key(foo) {
            Ok(key) => self.queue.add_with_opts(
                key,
                AddOpts {
                    priority,
                    ..AddOpts::default()
                },
            ),
            Err(err) => warn!(error = %err, "cannot compute a key for a Foo; skipping it"),
        }
    }
}

impl EventHandler<Foo> for FooHandler {
    fn on_add(&self, foo: &Arc<Foo>, is_in_initial_list: bool) {
        self.enqueue(foo, event_priority::on_add(is_in_initial_list));
    }

    fn on_update(&self, old: &Arc<Foo>, new: &Arc<Foo>) {
        self.enqueue(new, event_priority::on_update(&**old, &**new));
    }

    /// A key and a queue add: called on the informer's task (module docs).
    fn delivers_inline(&self) -> bool {
        true
    }
}

/// Deployment add/update/delete -> enqueue the Foo that controls it, if that Foo
/// exists (sample-controller's `handleObject`).
pub struct DeploymentHandler {
    queue: RateLimitingQueue<String>,
    foos: Lister<Foo>,
}

impl DeploymentHandler {
    /// A handler that looks owners up in `foos` and feeds `queue`.
    pub fn new(queue: RateLimitingQueue<String>, foos: Lister<Foo>) -> Self {
        Self { queue, foos }
    }

    /// Enqueues the Foo controlling `deployment`. Deployments without a Foo controller
    /// are none of our business; a controller reference to a Foo that no longer exists
    /// (or to an earlier Foo of the same name: the UID differs) is an orphan waiting
    /// for the garbage collector, also ignored.
    pub fn handle_object(&self, deployment: &Deployment) {
        self.handle_object_with_priority(deployment, workqueue::priority::DEFAULT);
    }

    /// [`handle_object`](Self::handle_object), queueing the Foo at `priority`.
    fn handle_object_with_priority(&self, deployment: &Deployment, priority: i32) {
        let Some(key) = controller_owner_key::<Foo, _>(deployment) else {
            return;
        };
        let owner_uid = get_controller_of(deployment).map(|r| r.uid.as_str());
        match self.foos.get_by_key(&key) {
            Ok(foo) if foo.meta().uid.as_deref() == owner_uid => {
                debug!(foo = %key, deployment = ?deployment.metadata.name, "Deployment changed; enqueueing its Foo");
                self.queue.add_with_opts(
                    key,
                    AddOpts {
                        priority,
                        ..AddOpts::default()
                    },
                );
            }
            _ => {
                debug!(foo = %key, deployment = ?deployment.metadata.name, "ignoring orphaned Deployment")
            }
        }
    }
}

impl DeploymentHandler {
    /// Enqueues every Foo that wants the name of the deleted `deployment` without
    /// owning it: a Foo whose Deployment name was held by another object (an earlier
    /// Foo's Deployment still waiting for the garbage collector, one a user made) failed
    /// its sync with "already exists and is not managed by Foo" and waits in the
    /// rate limiter's backoff, which grows to 1000 s. The name is free now: sync it at
    /// once, rather than when the backoff says (the owner itself was queued by
    /// [`handle_object`](Self::handle_object)). Sieve found it (issue 57): a Foo deleted
    /// and created again with its old Deployment's delete not yet seen got its
    /// Deployment only at its next retry, 10 s on.
    fn enqueue_waiting_for(&self, deployment: &Deployment) {
        let (Some(namespace), Some(name)) = (
            deployment.metadata.namespace.as_deref(),
            deployment.metadata.name.as_deref(),
        ) else {
            return;
        };
        let owner_uid = get_controller_of(deployment).map(|r| r.uid.as_str());
        for foo in self
            .foos
            .namespaced(namespace)
            .list(&Selector::everything())
            .into_iter()
            .filter(|foo| {
                foo.spec.deployment_name == name && foo.meta().uid.as_deref() != owner_uid
            })
        {
            match meta_namespace_key(&*foo) {
                Ok(key) => {
                    debug!(foo = %key, deployment = name, "the Deployment name a Foo waits for is free; enqueueing it");
                    self.queue.add(key);
                }
                Err(err) => warn!(error = %err, "cannot compute a key for a Foo; skipping it"),
            }
        }
    }
}

impl EventHandler<Deployment> for DeploymentHandler {
    fn on_add(&self, deployment: &Arc<Deployment>, is_in_initial_list: bool) {
        self.handle_object_with_priority(deployment, event_priority::on_add(is_in_initial_list));
    }

    fn on_update(&self, old: &Arc<Deployment>, new: &Arc<Deployment>) {
        // A periodic resync sends an update for every Deployment. Two versions of the
        // same Deployment always have different resourceVersions.
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        self.handle_object(new);
    }

    fn on_delete(&self, deleted: &DeletedObject<Deployment>) {
        // A tombstone (the delete happened while the watch was down) still carries the
        // last state we knew, owner references included.
        match deleted.object() {
            Some(deployment) => {
                self.handle_object(deployment);
                self.enqueue_waiting_for(deployment);
            }
            None => warn!("Deployment tombstone without an object; cannot find its Foo"),
        }
    }

    /// A lister lookup and a queue add: called on the informer's task (module docs).
    fn delivers_inline(&self) -> bool {
        true
    }
}
