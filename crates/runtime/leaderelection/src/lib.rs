//! client-go's `tools/leaderelection` in Rust: run several replicas of a controller and
//! let exactly one of them (the *leader*) do the work, with the election record kept
//! in a `coordination.k8s.io/v1` Lease.
//!
//! | client-go                                   | here                          |
//! |---------------------------------------------|-------------------------------|
//! | `resourcelock.LeaderElectionRecord`         | [`LeaderElectionRecord`]      |
//! | `resourcelock.Interface`                    | [`ResourceLock`] (+ [`LockRecord`], [`LockError`]) |
//! | `resourcelock.LeaseLock`                    | [`LeaseLock`]                 |
//! | `LeaderElectionConfig`, `NewLeaderElector` checks | [`LeaderElectionConfig`], [`ConfigError`] |
//! | `LeaderCallbacks`                           | [`LeaderCallbacks`]           |
//! | `LeaderElector` (`Run`, `IsLeader`, `GetLeader`, `Check`) | [`LeaderElector`] |
//! | `os.Hostname() + "_" + uuid.NewUUID()`      | [`default_identity`]          |
//! | component-base `--leader-elect*` flags      | [`LeaderElectionArgs`] (durations: [`cliflag::parse_duration`]) |
//!
//! # The algorithm
//!
//! Every candidate runs the same loop ([`LeaderElector::run`]) against one lock
//! object. The record in it names the holder and says how long the holder's lease
//! lasts (`leaseDurationSeconds`). One attempt (`try_acquire_or_renew`) goes:
//!
//! 1. **Read** the lock. If it does not exist, **create** it with ourselves as holder:
//!    we lead. (If two candidates create at once, the API server lets one win; the
//!    other gets `AlreadyExists`.)
//! 2. If the record differs from the one we read last time, note **our own clock's
//!    current time** as the moment we observed it.
//! 3. If somebody else holds the lock and less than their `leaseDurationSeconds` has
//!    passed since we *observed* the last change, the holder is presumed alive: give
//!    up for now and try again after `retry_period` (plus up to 120 % jitter).
//! 4. Otherwise (the lock is free, expired, or ours) **write** the record with
//!    ourselves as holder, conditional on the resourceVersion just read. Only one of
//!    several racing candidates can succeed; the others get a 409 Conflict.
//!    `leaderTransitions` goes up by one when the holder changes.
//!
//! The leader repeats the attempt every `retry_period` to renew (a fresh `renewTime`
//! changes the record, which is what the others observe). If renewals keep failing
//! for `renew_deadline`, the leader **stops leading**: the token given to
//! `on_started_leading` is cancelled that very moment. With `release_on_cancel`, a
//! leader that is shut down writes an empty holder with `leaseDurationSeconds: 1`, so
//! the next candidate takes over at its next attempt instead of waiting a full lease;
//! it does so only after its `on_started_leading` future has returned, so the two
//! leaders' work never overlaps (client-go releases at once and leaves that to the
//! caller).
//!
//! # Why local observed time
//!
//! The record carries `renewTime`, but that timestamp was produced by the *leader's*
//! clock, and a candidate whose clock is a minute ahead would think every lease long
//! expired. So no candidate ever compares a timestamp from the record with its own
//! clock. It only uses the fact that the record **changed**, and measures
//! `leaseDurationSeconds` from the moment it saw the change, on its own monotonic
//! clock (`tokio::time::Instant`). A new candidate therefore always waits a full
//! lease duration before taking over an existing lock, however old its `renewTime`
//! looks. This makes the election tolerant to arbitrary clock **offset** between
//! machines.
//!
//! # The split-brain caveat (from client-go's package docs)
//!
//! This is not *fencing*: nothing stops a deposed leader from still writing. Safety
//! rests on timing. The leader stops after `renew_deadline` without a successful
//! renewal; the others take over no sooner than `lease_duration` after they last saw
//! a renewal. Because `renew_deadline < lease_duration` ([`ConfigError`] enforces it),
//! the old leader has stopped before a new one starts, **provided clocks run at
//! roughly the same rate**. The election tolerates clock skew but not an arbitrary
//! skew *rate*: a leader whose clock runs slow could overstay. The tolerance is about
//! the ratio `lease_duration / renew_deadline`: to tolerate one machine's time passing
//! twice as fast as another's, use e.g. 60 s and 30 s. Likewise a leader that is
//! paused (GC, a frozen VM) for longer than the margin can wake up still believing it
//! leads. Keep the work a leader does idempotent and guarded by optimistic
//! concurrency on the objects it writes, as controllers do anyway.
//!
//! # Example
//!
//! Two candidates on one lock; the first leads, is shut down with release, and the
//! second takes over. Here the lock is in memory (`testing::MemoryLease`, a test double
//! that exists with the crate's `testing` feature: `leaderelection = { workspace = true,
//! features = ["testing"] }` under `[dev-dependencies]`) so the example runs as it is;
//! against a cluster use `LeaseLock::new(client, namespace, name, default_identity())`.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use leaderelection::testing::MemoryLease;
//! use leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector};
//! use tokio::sync::mpsc;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let lease = MemoryLease::new("foo-controller");
//! let (events, mut seen) = mpsc::unbounded_channel();
//!
//! let candidate = |identity: &str| {
//!     let mut config = LeaderElectionConfig::new(Arc::new(lease.lock(identity)));
//!     config.lease_duration = Duration::from_secs(3);
//!     config.renew_deadline = Duration::from_secs(2);
//!     config.retry_period = Duration::from_millis(100);
//!     config.release_on_cancel = true;
//!     let (started, identity) = (events.clone(), identity.to_string());
//!     let callbacks = LeaderCallbacks::new(
//!         move |token: CancellationToken| {
//!             let (started, identity) = (started.clone(), identity.clone());
//!             async move {
//!                 started.send(identity).unwrap();
//!                 // The controller would run here, until the token fires.
//!                 token.cancelled().await;
//!             }
//!         },
//!         || {},
//!     );
//!     Arc::new(LeaderElector::new(config, callbacks).unwrap())
//! };
//!
//! let (a, stop_a) = (candidate("a"), CancellationToken::new());
//! let run_a = tokio::spawn({
//!     let (a, stop_a) = (a.clone(), stop_a.clone());
//!     async move { a.run(stop_a).await }
//! });
//! assert_eq!(seen.recv().await.unwrap(), "a");
//! assert!(a.is_leader());
//!
//! let b = candidate("b");
//! let run_b = tokio::spawn({
//!     let b = b.clone();
//!     async move { b.run(CancellationToken::new()).await }
//! });
//! stop_a.cancel(); // shut "a" down; it releases the lock ...
//! run_a.await.unwrap().unwrap();
//! assert_eq!(seen.recv().await.unwrap(), "b"); // ... and "b" takes over at once.
//! assert_eq!(lease.get().unwrap().record.leader_transitions, 1);
//! run_b.abort();
//! # }
//! ```
//!
//! A binary wires it from its flags:
//!
//! ```no_run
//! use std::sync::Arc;
//! use clap::Parser;
//! use leaderelection::{LeaderCallbacks, LeaderElectionArgs, LeaderElector, default_identity};
//! use tokio_util::sync::CancellationToken;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     leader_election: LeaderElectionArgs,
//! }
//!
//! # async fn controller(_stop: CancellationToken) {}
//! # async fn example(client: kube::Client) -> anyhow::Result<()> {
//! let cli = Cli::parse();
//! let shutdown = CancellationToken::new();
//! if !cli.leader_election.leader_elect {
//!     controller(shutdown).await;
//!     return Ok(());
//! }
//! let lock = cli.leader_election.lease_lock(client, "default", "foo-controller", default_identity());
//! let config = cli.leader_election.config(Arc::new(lock));
//! let callbacks = LeaderCallbacks::new(controller, || tracing::info!("leader election lost"));
//! LeaderElector::new(config, callbacks)?.run(shutdown).await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod args;
pub mod callbacks;
pub mod config;
pub mod identity;
pub mod leader_elector;
pub mod lease_lock;
pub mod record;
pub mod resource_lock;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use args::LeaderElectionArgs;
pub use callbacks::LeaderCallbacks;
pub use config::{
    ConfigError, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
    JITTER_FACTOR, LeaderElectionConfig,
};
pub use identity::{default_identity, hostname};
pub use leader_elector::{AlreadyRunning, LeaderElector, LeaseExpired};
pub use lease_lock::LeaseLock;
pub use record::{
    LeaderElectionRecord, leader_election_record_to_lease_spec,
    lease_spec_to_leader_election_record,
};
pub use resource_lock::{LockError, LockRecord, ResourceLock};
