//! What happened to each key, stage by stage: the bounded trace behind
//! the live pipeline view.
//!
//! A change travels through a controller in stages: the reflector's watch event is
//! queued in the informer's FIFO, popped and written to the indexer, handed to each
//! event handler, turned into a key in the workqueue, taken by a worker, synced, and
//! the sync makes API writes (see [`Stage`]). Each stage records a [`Step`] here as it
//! happens, keyed by the object's `namespace/name`, so one key's whole trip can be
//! read back ([`trip`]): that is what the `/debug/pipeline` page of the binaries
//! shows (the metrics crate serves it), and what learners use to *see* client-go's
//! architecture work.
//!
//! client-go has nothing like it: its pieces log at high verbosity, and following
//! one object means grepping klog lines from six files. Recording is on from the
//! start, so the trip of the object that just misbehaved is there when someone looks; it is
//! bounded ([`DEFAULT_CAPACITY`] steps per stage, about 4 MB) and cheap (a step is a
//! few shared pointers and a lock on its stage's ring; docs/benchmarks.md has the
//! measured cost). `PIPELINE_TRACE=off` in the environment turns it off, and the
//! binaries' `manager` turns it off when they do not serve the view (no
//! `--debug-pipeline`): then nobody could read it.
//!
//! The crate depends on nothing of Kubernetes, so the workqueue, the cache and the
//! loop can all record into it; the one process-wide [`Trace`] is [`global`].
//!
//! ```
//! use std::sync::Arc;
//! use pipeline::{Stage, Step};
//!
//! let (informer, key): (Arc<str>, Arc<str>) = (Arc::from("Foo"), Arc::from("default/web"));
//! pipeline::record(|| Step::new(Stage::Fifo, informer.clone(), key.clone(), "Added").text("812"));
//! pipeline::record(|| Step::new(Stage::Indexer, informer.clone(), key.clone(), "add"));
//!
//! let trip = pipeline::trip("default/web");
//! assert_eq!(trip.len(), 2);
//! assert_eq!((trip[0].stage, trip[0].what, trip[0].text.as_deref()), (Stage::Fifo, "Added", Some("812")));
//! assert_eq!(trip[1].stage, Stage::Indexer);
//! ```

#![forbid(unsafe_code)]

mod gauges;
mod scope;
mod stage;
mod step;
mod trace;
mod trouble;

use std::sync::LazyLock;

pub use gauges::{GaugeValue, Gauges, Reading};
pub use scope::{SyncScope, current_sync, in_sync};
pub use stage::Stage;
pub use step::Step;
pub use trace::{DEFAULT_CAPACITY, StageCount, Trace};
pub use trouble::{Trouble, TroubleReporter, Troubles};

/// The environment variable that turns recording off (`off`, `false` or `0`).
pub const ENV_SWITCH: &str = "PIPELINE_TRACE";

static GLOBAL: LazyLock<Trace> = LazyLock::new(|| {
    let trace = Trace::new(DEFAULT_CAPACITY);
    if let Ok(value) = std::env::var(ENV_SWITCH) {
        trace.set_enabled(!matches!(value.trim(), "off" | "false" | "0"));
    }
    trace
});

static GAUGES: LazyLock<Gauges> = LazyLock::new(Gauges::default);

static TROUBLES: LazyLock<Troubles> = LazyLock::new(Troubles::default);

/// The process-wide trace every stage records into.
pub fn global() -> &'static Trace {
    &GLOBAL
}

/// The process-wide size readers (see [`Gauges`]).
pub fn gauges() -> &'static Gauges {
    &GAUGES
}

/// The process-wide failures the page shows as banners (see [`Troubles`]).
pub fn troubles() -> &'static Troubles {
    &TROUBLES
}

/// Records a step in the [`global`] trace (see [`Trace::record`]).
#[inline]
pub fn record(make: impl FnOnce() -> Step) {
    GLOBAL.record(make);
}

/// Whether the [`global`] trace is recording: check before computing something only
/// a step needs.
#[inline]
pub fn enabled() -> bool {
    GLOBAL.is_enabled()
}

/// The trip of `key` in the [`global`] trace (see [`Trace::trip`]).
pub fn trip(key: &str) -> Vec<Step> {
    GLOBAL.trip(key)
}

/// The last segment of a type's path: `Foo` for
/// `apis::samplecontroller::v1alpha1::Foo`, the informer component name for `K`.
pub fn short_type_name<K: ?Sized>() -> &'static str {
    let full = std::any::type_name::<K>();
    // Generic arguments are rare for resource types; cut them off before splitting.
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_type_names() {
        assert_eq!(short_type_name::<std::sync::Arc<str>>(), "Arc");
        assert_eq!(short_type_name::<Step>(), "Step");
        assert_eq!(short_type_name::<u8>(), "u8");
    }
}
