//! The recording, perturbing proxy between the controller and kube-apiserver: an
//! [`apiproxy::Proxy`] whose [`Interceptor`] is a [`Recorder`].
//!
//! What it does to the controller's traffic, always:
//!
//! - **JSON only**: protobuf is removed from each request's `Accept` header (left
//!   empty, it becomes `application/json`), so every list, watch and write answer is
//!   JSON the recorder can read. Our binaries and client-go read the answer by its
//!   `Content-Type`, so they take JSON when protobuf is not offered.
//! - **no streaming lists**: a watch with `sendInitialEvents=true` is answered
//!   `422 Invalid`, as an API server with the WatchList feature off answers it, and the
//!   client lists in pages instead (the recorder sees lists, not initial events it
//!   would have to tell from changes). Both clients fall back on it:
//!   crates/runtime/cache/src/reflector/watch_list.rs lists in pages after any 4xx but
//!   410 and 429 (and, for a 4xx, does not try streaming again), and client-go 1.37's
//!   reflector falls back to a paged list on every error of its watch-list request
//!   except "connection refused" and 429, which it retries (`isWatchErrorRetriable`).
//!   A 429 would be retried forever, a 410 means "relist" to ours, a 5xx reads as a
//!   sick server: 422 is the one that means "not supported here" to both.
//!
//! What it records, as [`trace::Record`](crate::trace::Record)s in the order they
//! happen: every write the controller sends (POST, PUT, PATCH, DELETE: the resource,
//! the object's key, the subresource, the status and the resourceVersion of the
//! answered object; recorded once the answer has been sent), and every `ADDED`,
//! `MODIFIED` and `DELETED` watch event delivered to it, and each list it starts. Writes
//! and events of
//! [`IGNORED`] resources (leases, events: leader election and event recording, on
//! timers rather than on the workload) are neither recorded nor counted. The runner
//! appends the run record and the step boundaries with [`Recorder::push`].
//!
//! What it perturbs, per [`Perturbation`]:
//!
//! - [`IntermediateState`](Perturbation::IntermediateState): the callback given to
//!   [`Recorder::on_crash_point`] is called once, right after the answer to the
//!   controller's `after_write`-th recorded write has been sent (the runner SIGKILLs
//!   the controller there).
//! - [`UnobservedState`](Perturbation::UnobservedState): the `occurrence`-th event of
//!   `resource` `key` (counted over every watch of the resource, as the planner counts
//!   the trace's) is withheld; the next event of that key is delivered as it is. If
//!   none comes by the time the run is otherwise quiet, [`Recorder::release_withheld`]
//!   lets the controller relist (its open watches of the resource end with an `ERROR`
//!   410 event, as kube-apiserver's do when it cannot serve them), so it sees the
//!   object's latest state late rather than never. The replicas of a shard group are
//!   one controller: each watches for itself (one proxy listener each), so events are
//!   counted, withheld and superseded per replica's stream, and the trace records each
//!   object's state once, whichever replica saw it first.
//! - [`StaleState`](Perturbation::StaleState): between [`Recorder::begin_stale`] and
//!   [`Recorder::end_stale`] (the runner starts it when it restarts the controller, at
//!   the resourceVersion this run had reached at the end of step `at_step - 1`, see
//!   [`plan::versions_at_step_ends`](crate::plan::versions_at_step_ends)), each list
//!   request that a lagging server could answer stale (`resourceVersion=0`, or not
//!   older than a version at or before `<rv>`: [`may_be_served_stale`]) is rewritten to
//!   `resourceVersion=<rv>&resourceVersionMatch=Exact`; a list for the most recent state
//!   (no resourceVersion) goes to the live server as a consistent read would; its
//!   continue requests keep their tokens, its watches start from what the list
//!   returned, its writes go to the live server as they are.
//!
//! Keys are matched as given: a plan from a learning run in another namespace must
//! have its key's namespace replaced by this run's first.

mod answer;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{Duration, Instant};

use apiproxy::path;
use apiproxy::watch::{self, Verdict};
use apiproxy::{Exchange, Interceptor, ProxyBody, status_response};
use http::header::{ACCEPT, HeaderValue};
use http::{Response, request, response};
use parking_lot::Mutex;

use crate::plan::Perturbation;
use crate::trace::{Event, Trace};

/// The proxy the controller talks to.
pub type SieveProxy = apiproxy::Proxy<Recorder>;

/// Resources whose writes and events are neither recorded nor counted: leader
/// election's leases and recorded events come on timers, not from the workload.
pub const IGNORED: [&str; 2] = ["leases", "events"];

/// What is called at the crash point, with the proxy listener the write came in on
/// (which replica of a shard group sent it; 0 for a single controller).
type CrashHook = Box<dyn FnOnce(usize) + Send>;

/// Records the controller's writes and watch events and applies one perturbation.
pub struct Recorder {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Recorder")
            .field("perturbation", &state.perturbation)
            .field("records", &state.trace.records.len())
            .finish_non_exhaustive()
    }
}

/// What the recorder and the bodies it wraps share.
struct Shared {
    state: Mutex<State>,
    on_crash: Mutex<Option<CrashHook>>,
    /// The controller's requests so far, those to [`IGNORED`] resources left out: the
    /// runner's quiescence (a shard group's lease renewals never stop).
    requests: AtomicU64,
    /// Per resource, bumped when a withheld event is released: every watch of that
    /// resource open then ends with an `ERROR` 410 event ([`EXPIRED_EVENT`]).
    expiries: Mutex<HashMap<String, tokio::sync::watch::Sender<u64>>>,
}

/// What ends the watches of a resource whose withheld event is released: what
/// kube-apiserver sends on a watch it can no longer serve from its history, a `200` stream
/// with an `ERROR` event carrying a `410` `Status` ("errors must fail with a watch event
/// of type ERROR, rather than a directly returned error": `k8s.io/apiserver`
/// `pkg/storage/cacher/cacher.go`), then the end of the stream. The client relists.
const EXPIRED_EVENT: &str = concat!(
    r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"#,
    r#""status":"Failure","message":"too old resource version (sieve proxy: a withheld event released)","#,
    r#""reason":"Expired","code":410}}"#,
    "\n"
);

#[derive(Default)]
struct State {
    trace: Trace,
    perturbation: Option<Perturbation>,
    /// Writes recorded so far.
    writes: usize,
    /// Events seen per (listener, resource, key), the withheld one included.
    occurrences: HashMap<(usize, String, String), usize>,
    /// The listener each (resource, key, resourceVersion) was first recorded from: the
    /// same state seen by another replica is not recorded again.
    recorded_from: HashMap<(String, String, String), usize>,
    /// The finalizers of each object in the last event delivered of it.
    finalizers: HashMap<(String, String), usize>,
    /// The resourceVersion lists are served at, while stale.
    stale_rv: Option<String>,
    /// The (listener, resource, key) whose event was withheld, each until a later
    /// event of the object is delivered on that listener.
    withheld: Vec<(usize, String, String)>,
    /// When the event was withheld.
    withheld_at: Option<Instant>,
    /// Whether the perturbation's point was reached.
    reached: bool,
}

impl Recorder {
    /// A recorder that applies `perturbation` (none: a learning run).
    pub fn new(perturbation: Option<Perturbation>) -> Self {
        let state = State {
            perturbation,
            ..State::default()
        };
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                on_crash: Mutex::new(None),
                requests: AtomicU64::new(0),
                expiries: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Calls `hook` at the crash point of an
    /// [`IntermediateState`](Perturbation::IntermediateState) plan (never otherwise),
    /// with the index of the proxy listener the write came in on ([`apiproxy::Listener`]).
    pub fn on_crash_point(self, hook: impl FnOnce(usize) + Send + 'static) -> Self {
        *self.shared.on_crash.lock() = Some(Box::new(hook));
        self
    }

    /// Drops the crash hook if it was not called: the run is over (its clean-up must not
    /// kill the controller while a finalizer of its waits to be removed).
    pub fn disarm(&self) {
        self.shared.on_crash.lock().take();
    }

    /// Appends `event` (the run record, a step's begin or end) with the next sequence
    /// number, which it returns.
    pub fn push(&self, event: Event) -> u64 {
        self.shared.state.lock().trace.push(event)
    }

    /// The trace so far.
    pub fn trace(&self) -> Trace {
        self.shared.state.lock().trace.clone()
    }

    /// How many records the trace has (without copying it: the runner asks every tick).
    pub fn len(&self) -> usize {
        self.shared.state.lock().trace.records.len()
    }

    /// Whether the trace has no record yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The controller's requests so far, those to [`IGNORED`] resources (leases,
    /// events: on timers, not on the workload) left out.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(AtomicOrdering::Relaxed)
    }

    /// Whether the perturbation's point was reached: the crash hook called, the event
    /// withheld, a list served stale.
    pub fn reached(&self) -> bool {
        self.shared.state.lock().reached
    }

    /// From now on, serve the controller's lists at `rv` (`resourceVersionMatch=Exact`).
    pub fn begin_stale(&self, rv: impl Into<String>) {
        self.shared.state.lock().stale_rv = Some(rv.into());
    }

    /// Serve the controller's lists as it asks for them again.
    pub fn end_stale(&self) {
        self.shared.state.lock().stale_rv = None;
    }

    /// If the withheld event has not been superseded by a later event of its object
    /// (the object has not changed since: nothing else will tell the controller),
    /// arranges for the controller to see the object's latest state: every watch of the
    /// resource open now ends with an `ERROR` event carrying `410 Expired`
    /// ([`EXPIRED_EVENT`]), as kube-apiserver ends a watch it can no longer serve, and
    /// the client relists; no connection is cut, and the watch after it goes through.
    /// (It used to answer the next watch with an HTTP `410` and cut every connection:
    /// not what an API server does, and kube-runtime counted both as errors and backed
    /// off past the quiet period: finding F1, docs/reliability.md.) Returns whether it
    /// did.
    ///
    /// An unobserved-state plan takes an *intermediate* state away; it must not take
    /// the last one: without this, an object whose withheld event was its last change
    /// (often a change that the controller's own next write would have followed) stays
    /// unseen for good, which no API server does and no controller could converge on.
    ///
    /// The runner releases it once the run is quiet, or once it has been withheld for a
    /// while ([`withheld_for`](Self::withheld_for)) when the run never goes quiet: a
    /// controller that acts on the state before it (a deleted owner it still sees, say)
    /// can keep the run busy for good against the garbage collector.
    pub fn release_withheld(&self) -> bool {
        let released = std::mem::take(&mut self.shared.state.lock().withheld);
        match released.into_iter().next() {
            Some((_, resource, _)) => {
                if let Some(expiry) = self.shared.expiries.lock().get(&resource) {
                    expiry.send_modify(|generation| *generation += 1);
                }
                true
            }
            None => false,
        }
    }

    /// How long the withheld event has been withheld, while nothing superseded or
    /// released it.
    pub fn withheld_for(&self) -> Option<Duration> {
        let state = self.shared.state.lock();
        (!state.withheld.is_empty())
            .then_some(state.withheld_at)
            .flatten()
            .map(|at| at.elapsed())
    }
}

impl Shared {
    /// Records a write's answer (sent on proxy listener `listener`) and calls the crash
    /// hook if this was its write.
    fn record_write(&self, write: crate::trace::Write, listener: usize) {
        let crash = {
            let mut state = self.state.lock();
            let object = (write.resource.clone(), write.key.clone());
            state.trace.push(Event::Write(write));
            state.writes += 1;
            let crash = matches!(state.perturbation,
                Some(Perturbation::IntermediateState { after_write }) if after_write == state.writes);
            state.reached |= crash;
            if crash {
                // The object written last is what its successor finds half done.
                tracing::info!(write = state.writes, ?object, "sieve: crash point");
            }
            crash
        };
        if crash && let Some(hook) = self.on_crash.lock().take() {
            hook(listener);
        }
    }

    /// What to do with a watch event of `resource` on proxy listener `listener`:
    /// records it, or withholds it.
    fn watch_event(&self, listener: usize, resource: &str, event: &watch::WatchEvent) -> Verdict {
        let Some(recorded) = answer::watch_event(resource, event) else {
            return Verdict::Forward;
        };
        let mut state = self.state.lock();
        let object = (listener, recorded.resource.clone(), recorded.key.clone());
        let occurrence = {
            let n = state.occurrences.entry(object.clone()).or_default();
            *n += 1;
            *n
        };
        let withhold = matches!(&state.perturbation,
            Some(Perturbation::UnobservedState { resource, key, occurrence: withheld, .. })
                if (resource, key, *withheld) == (&object.1, &object.2, occurrence));
        if withhold {
            state.reached = true;
            if state.withheld.is_empty() {
                state.withheld_at = Some(Instant::now());
            }
            state.withheld.push(object);
            return Verdict::Drop;
        }
        // Its next state on this stream: delivered, the withheld one stays unobserved.
        state.withheld.retain(|withheld| *withheld != object);
        let (_, resource, key) = object;
        let state_key = (
            resource.clone(),
            key.clone(),
            recorded.resource_version.clone(),
        );
        let first = *state.recorded_from.entry(state_key).or_insert(listener);
        state
            .finalizers
            .insert((resource, key), answer::finalizer_count(&event.object));
        if first == listener {
            state.trace.push(Event::Watch(recorded));
        }
        Verdict::Forward
    }
}

impl Interceptor for Recorder {
    async fn on_request(&self, request: &mut request::Parts) -> Option<Response<ProxyBody>> {
        let accept = request.headers.get(ACCEPT).and_then(|v| v.to_str().ok());
        if let Some(Ok(json)) = accept.map(|a| HeaderValue::from_str(&json_only(a))) {
            request.headers.insert(ACCEPT, json);
        }
        let api = path::action(&request.method, &request.uri)?;
        if !IGNORED.contains(&api.resource.as_str()) {
            self.shared.requests.fetch_add(1, AtomicOrdering::Relaxed);
        }
        match api.verb.as_str() {
            "watch"
                if path::query(&request.uri, "sendInitialEvents").as_deref() == Some("true") =>
            {
                Some(status_response(
                    422,
                    "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: \
                     sendInitialEvents is forbidden for watch unless the WatchList feature gate \
                     is enabled (sieve proxy: streaming lists are off, list in pages)",
                ))
            }
            "create" | "update" | "patch" | "delete" => {
                // What the trace held when the controller sent this write (see
                // trace::Write::sent_after).
                let last = self.shared.state.lock().trace.records.last().map(|r| r.seq);
                request.extensions.insert(SentAfter(last.unwrap_or(0)));
                None
            }
            "list" if path::query(&request.uri, "continue").is_none() => {
                let mut state = self.shared.state.lock();
                if !IGNORED.contains(&api.resource.as_str()) {
                    state.trace.push(Event::List {
                        resource: api.resource.clone(),
                    });
                }
                if let Some(rv) = state.stale_rv.clone()
                    && may_be_served_stale(&request.uri, &rv)
                {
                    request.uri = path::with_query(
                        &request.uri,
                        &[("resourceVersion", &rv), ("resourceVersionMatch", "Exact")],
                    );
                    state.reached = true;
                }
                None
            }
            _ => None,
        }
    }

    fn on_response(
        &self,
        exchange: &Exchange,
        response: &mut response::Parts,
        body: ProxyBody,
    ) -> ProxyBody {
        let Some(api) = path::action(&exchange.method, &exchange.uri) else {
            return body;
        };
        if IGNORED.contains(&api.resource.as_str()) {
            return body;
        }
        let shared = Arc::clone(&self.shared);
        let status = response.status.as_u16();
        let sent_after = exchange.extensions.get::<SentAfter>().map(|s| s.0);
        let listener = exchange
            .extensions
            .get::<apiproxy::Listener>()
            .map_or(0, |l| l.0);
        match api.verb.as_str() {
            "create" | "update" | "patch" | "delete" => {
                apiproxy::body::on_complete(body, move |bytes| {
                    let finalizers = {
                        let state = shared.state.lock();
                        path::key(&api).and_then(|key| {
                            state.finalizers.get(&(api.resource.clone(), key)).copied()
                        })
                    };
                    if let Some(write) = answer::write(&api, status, &bytes, finalizers, sent_after)
                    {
                        shared.record_write(write, listener);
                    }
                })
            }
            "watch" if response.status.is_success() => {
                let mut expiry = shared
                    .expiries
                    .lock()
                    .entry(api.resource.clone())
                    .or_insert_with(|| tokio::sync::watch::Sender::new(0))
                    .subscribe();
                let expired = async move {
                    // Never, unless a release bumps the generation seen now.
                    if expiry.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                    bytes::Bytes::from_static(EXPIRED_EVENT.as_bytes())
                };
                watch::transform_until(
                    body,
                    move |event| shared.watch_event(listener, &api.resource, event),
                    expired,
                )
            }
            _ => body,
        }
    }
}

/// Whether a lagging API server may answer the list request `uri` at `stale_rv`: only
/// a list that lets it ([the API's resourceVersion semantics]). `resourceVersion=0`
/// ("any": client-go's first list, served from the watch cache) may be as old as the
/// server's cache is; `resourceVersion=N` without `resourceVersionMatch=Exact` ("not
/// older than N") may be served at any version from N on, so at `stale_rv` when that is
/// not older than N. A list without a resourceVersion asks for the most recent state, a
/// consistent read: the server answers it from etcd, or from a watch cache it first
/// brings up to etcd's current revision (`ConsistentListFromCache`), never stale; nor
/// an `Exact` list at another version. A controller whose lists all ask for the most
/// recent state (ours, kube-runtime's watcher, `kubectl get`) is out of the stale-state
/// perturbation's reach: its plans are reported not reached, which is a fact about it.
///
/// [the API's resourceVersion semantics]: https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-get-and-list
fn may_be_served_stale(uri: &http::Uri, stale_rv: &str) -> bool {
    let Some(asked) = path::query(uri, "resourceVersion").filter(|rv| !rv.is_empty()) else {
        return false;
    };
    let exact = path::query(uri, "resourceVersionMatch").as_deref() == Some("Exact");
    match (asked.parse::<u64>(), stale_rv.parse::<u64>()) {
        (Ok(0), _) => !exact,
        (Ok(asked), Ok(stale)) => !exact && asked <= stale,
        _ => false,
    }
}

/// The last trace record's sequence number when a write request arrived.
#[derive(Debug, Clone, Copy)]
struct SentAfter(u64);

/// `accept` without its protobuf media types; `application/json` if none is left.
fn json_only(accept: &str) -> String {
    let kept: Vec<&str> = accept
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.to_ascii_lowercase().contains("protobuf"))
        .collect();
    if kept.is_empty() {
        "application/json".to_string()
    } else {
        kept.join(", ")
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
