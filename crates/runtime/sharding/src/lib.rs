//! Scaling a controller out: N **active** replicas, each caching and reconciling only
//! its slice of the objects, with no key ever reconciled by two replicas at once.
//!
//! Leader election ([`leaderelection`]) scales a controller *up* to one busy process
//! and N idle standbys. When one process is not enough (too many objects to cache,
//! too many reconciles per second), neither client-go, controller-runtime nor
//! kube-runtime has an answer. Kubernetes has the two pieces: Leases to say who is
//! alive, and since 1.36 (alpha, gate `ShardedListAndWatch`, KEP-5866) list and watch
//! filtered to a range of a hash of `metadata.uid`. This crate puts them together,
//! with no central sharder and no webhook:
//!
//! ```text
//!   replica a ── Lease a {ranges: [0, 1/3)} ──┐
//!   replica b ── Lease b {ranges: [1/3, 2/3)} ├─ one shard group (a label)
//!   replica c ── Lease c {ranges: [2/3, 1)} ──┘
//!       │
//!       ├─ informers: list/watch ?shardSelector=shardRange(object.metadata.uid, ...)
//!       │             (owned objects: filtered by their controller's UID)
//!       └─ workers:   a gate admits only the keys whose hash this replica holds
//! ```
//!
//! | piece | module |
//! |---|---|
//! | hash, ranges, the informers' filter | [`cache::shard`] |
//! | who should hold what (equal contiguous ranges) | [`assignment`] |
//! | members as Leases | [`member`] |
//! | the per-key fence in the loop | [`gate`] ([`controller::SyncGate`]) |
//! | the loop that renews, releases and claims | [`coordinator`] (its docs state the rules) |
//! | a replica's configuration and status | [`config`] |
//! | `--shard-*` flags | [`args`] |
//! | `/metrics` | [`metrics`] |
//!
//! # The invariant
//!
//! **No object is synced by two replicas at the same time.** A replica syncs a key only
//! while it holds the key's hash in its gate and its membership is renewed; it
//! announces giving a range up only after the syncs of that range have ended; it
//! starts a range only after no live member announces it, and after re-reading the
//! announcements once its own claim is written; and it stops everything at its renew
//! deadline, which comes before any other replica may consider it dead. The
//! [`coordinator`] docs give the rules one by one; `tests/handover.rs` checks each on
//! paused time, and the e2e suite of the Foo controller checks the whole on a real
//! API server (3 replicas, a kill, a join, a freeze).
//!
//! A key is a name, and the ranges hold uids: a name deleted and created again is a
//! new object whose uid may fall in another replica's range. Until the old object's
//! replica has settled its last queued sync of the name, both may sync it at once, the
//! old one seeing "not found" (its cache holds only its range) while the new one
//! sees the new object. So a controller's "not found" path must act only on what the
//! old object owned (owner references, names that carry its uid), never on whatever
//! the name points at now: sample-controller's, which does nothing, is the model.
//!
//! # Wiring
//!
//! The manager does it for the binaries (`--shard-group`): it creates the [`Shard`],
//! gives [`Shard::ranges`] to the informer factory, runs [`Shard::run`], and a
//! controller asks for its gate:
//!
//! ```ignore
//! let foos = factory.informer_for_api(Api::<Foo>::all(client), InformerOptions {
//!     shard: Some(ShardBy::UID),            // the controller's own objects
//!     ..InformerOptions::default()
//! });
//! let deployments = factory.informer_for_api(Api::<Deployment>::all(client), InformerOptions {
//!     shard: Some(ShardBy::ControllerUid),  // the objects it owns follow their owner
//!     ..InformerOptions::default()
//! });
//! let controller = Controller::new(name, queue.clone(), syncer)
//!     .with_gate(shard.map(|s| s.gate(&foos, queue.clone())));
//! ```

#![forbid(unsafe_code)]

pub mod args;
pub mod assignment;
pub mod config;
pub mod coordinator;
pub mod gate;
pub mod member;
pub mod metrics;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use args::ShardArgs;
pub use assignment::{assign, moved_fraction, ranges_for};
pub use config::{ConfigError, ShardConfig, ShardStatus};
pub use coordinator::Shard;
pub use gate::ShardGate;
pub use member::{LeaseMembers, MemberRecord, MemberStore, StoreError};
pub use metrics::ShardMetrics;
