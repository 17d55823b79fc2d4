//! client-go v0.37.2's reflector tests (`tools/cache/reflector_test.go` and
//! `reflector_watchlist_test.go`), ported to this crate's [`cache::Reflector`] (issue
//! 32: the cache on client-go v0.37's exact semantics).
//!
//! One Rust test per Go test function, with a comment naming it; subcases of a Go
//! table test are the cases of one Rust test. The Go fakes map onto
//! [`cache::testing::ScriptedListerWatcher`] (wrapped in [`harness::Recorded`], which
//! logs every call in order, with the virtual time it came at); a Go `FakeWatcher` is a
//! scripted or a channel-fed watch, `watcher.Stop()` a closed watch, a fake clock Tokio's
//! paused time. Where client-go hands the reflector a `Store`, ours feeds an
//! [`cache::InformerQueue`], which [`harness::Harness::drain`] applies to an indexer as
//! an informer would.
//!
//! # Not ported, and why
//!
//! * `TestReflectorResyncChan`: the reflector's resync timer. Ours has none: the
//!   informer resyncs, per handler (`shared_informer.rs`); `TestReflectorResync` is
//!   ported against the informer for that reason.
//! * `TestGetTypeDescriptionFromObject`, `TestGetExpectedGVKFromObject`,
//!   `TestIsUnsupportedTableObject`, and the "rejected" `*v1.Service` event of
//!   `TestReflectorWatchHandler`: Go's reflection on `interface{}` objects (expected
//!   type, GVK of `Unstructured`, `Table` responses). A `Reflector<K>` is typed: an
//!   object of another type (or a `Table`) fails to decode and never reaches it.
//! * `TestRetryInternalError`'s two "retries on" cases and `TestWatchTimeout`'s
//!   `MinWatchTimeout` cases: `Reflector.MaxInternalErrorRetryDuration` and
//!   `ReflectorOptions.MinWatchTimeout` are not offered (client-go's defaults, retries
//!   off and a 5-10 minute timeout, are what ours does; those cases are ported).
//! * `TestInitialEventsEndBookmarkTicker`: a ticker that only logs a warning while a
//!   streaming list waits for its end bookmark; we log nothing periodically.
//!
//! `TestReflectorListExtract` checks Go's garbage collector with finalizers; its port
//! checks the same property with `Weak` references (nothing but the store keeps a
//! listed object alive). client-go's `Store`-level hooks (`UpdateResourceVersion`, a
//! store wrapping `Replace`) are observed through the reflector's
//! `last_sync_resource_version` and what the queue hands the indexer.
//!
//! # Where we differ on purpose (the tests assert our behaviour)
//!
//! * Every list asks for resourceVersion `""` (a consistent read, paged), never `"0"`
//!   or the last synced version, so "Expired" or "too large resource version" answers
//!   to a list cannot happen and a relist never travels back in time
//!   (`reflector.rs`, "Which resourceVersion the first list uses, and why"). An
//!   expired continue token starts the paged list over instead of one unpaged list.
//! * Streaming lists are on by default (client-go: the `WatchListClient` gate), a
//!   `422` turns them off for good, `MODIFIED`/`DELETED` before the end bookmark
//!   mean the server ignores `sendInitialEvents`, and a stream that closes early is
//!   followed by a paged list (`reflector/watch_list.rs`).
//! * A watch that cannot be started, or that ends within a second with no event, is
//!   retried from the same resourceVersion after a backoff; client-go returns from
//!   `ListAndWatch` and relists (except for `429` and `connection refused`). A `410`
//!   relists without waiting first (`reflector.rs`, module docs).
//! * A transform runs once per object, as the object enters the queue; client-go's
//!   streaming list also runs it for its temporary store.
//!
//! # Fixed while porting
//!
//! * An `ERROR` event (or an undecodable stream) in an established watch now relists
//!   after a backoff, as in client-go; it used to watch again from the same version,
//!   so an object the API server deleted unsafely stayed cached for ever
//!   (`TestReflectorReplacesStoreOnUnsafeDelete`, `TestRetryInternalError`).
//! * A `429` or a refused connection on a streaming list backs off and streams again;
//!   it used to fall back to a paged list (`TestWatchList`, "checks if the reflector
//!   retries 429").
//! * The backoff's jitter is applied after its cap, as client-go's `wait.Backoff`
//!   does (waits settle in `[max, 2 * max)`); it used to be capped after the jitter
//!   (`TestReflectorListAndWatchInitConnBackoff`).

mod harness;

#[path = "../common/mod.rs"]
mod common;

mod backoff;
mod list_and_watch;
mod lists;
mod watch;
mod watch_list;
