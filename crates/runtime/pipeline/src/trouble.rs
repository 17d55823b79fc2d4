//! What is failing right now: the page's red banners.
//!
//! The counters and the trace say what *happened*; a component that cannot do its job
//! at all (an informer whose list the API server keeps refusing, say because the
//! custom resource's conversion webhook is down) must also say so where people look,
//! with the error, for how long, and when it tries again. client-go logs such a
//! reflector's failure on every retry and nothing else; a page that only shows rates
//! would show a quiet pipeline, which reads as "healthy".
//!
//! A component takes a [`TroubleReporter`] once and calls
//! [`failing`](TroubleReporter::failing) on every failed attempt and
//! [`recovered`](TroubleReporter::recovered) when it works again; the page reads the
//! current [`Trouble`]s on each refresh. Dropping the reporter (the informer stopped)
//! removes its entry.
//!
//! ```
//! use std::time::Duration;
//! use pipeline::{Stage, Troubles};
//!
//! let troubles = Troubles::default();
//! let reporter = troubles.reporter("VirtualMachine", Stage::Fifo);
//! reporter.failing("list", &"conversion webhook failed", Duration::from_secs(2));
//! reporter.failing("list", &"conversion webhook failed", Duration::from_secs(4));
//! let now = troubles.read();
//! assert_eq!((now[0].component.as_str(), now[0].what, now[0].failures), ("VirtualMachine", "list", 2));
//! reporter.recovered();
//! assert!(troubles.read().is_empty());
//! ```

use std::collections::BTreeMap;
use std::fmt::Display;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;

use crate::stage::Stage;

/// One component's current failure, as the state endpoint serializes it.
#[derive(Debug, Clone, Serialize)]
pub struct Trouble {
    /// Whose: the informer's kind, as the gauges name it.
    pub component: String,
    /// The stage the page draws the banner at.
    pub stage: Stage,
    /// What fails: `list`, `watch`.
    pub what: &'static str,
    /// Failed attempts in a row.
    pub failures: u64,
    /// When the first of them failed (milliseconds since the Unix epoch).
    pub since_unix_ms: u64,
    /// The last attempt's error, as the server or the transport gave it.
    pub last_error: String,
    /// When the next attempt starts (milliseconds since the Unix epoch); `None` for a
    /// standing condition that nothing retries ([`TroubleReporter::standing`]).
    pub retry_at_unix_ms: Option<u64>,
}

#[derive(Debug)]
struct Entry {
    component: String,
    stage: Stage,
    failing: Option<Failing>,
}

#[derive(Debug)]
struct Failing {
    what: &'static str,
    failures: u64,
    since: SystemTime,
    last_error: String,
    retry_at: Option<SystemTime>,
}

#[derive(Debug, Default)]
struct Shared {
    next_id: AtomicU64,
    entries: Mutex<BTreeMap<u64, Entry>>,
}

/// Every component's current failure (see the [module docs](self)); the process-wide
/// one is [`troubles`](crate::troubles).
#[derive(Debug, Default, Clone)]
pub struct Troubles {
    shared: Arc<Shared>,
}

impl Troubles {
    /// A reporter for `component`, shown at `stage`; healthy until it reports.
    pub fn reporter(&self, component: impl Into<String>, stage: Stage) -> TroubleReporter {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        self.shared.entries.lock().insert(
            id,
            Entry {
                component: component.into(),
                stage,
                failing: None,
            },
        );
        TroubleReporter {
            shared: self.shared.clone(),
            id,
            failing: AtomicBool::new(false),
        }
    }

    /// The components failing now, oldest reporter first.
    pub fn read(&self) -> Vec<Trouble> {
        self.shared
            .entries
            .lock()
            .values()
            .filter_map(|entry| {
                let failing = entry.failing.as_ref()?;
                Some(Trouble {
                    component: entry.component.clone(),
                    stage: entry.stage,
                    what: failing.what,
                    failures: failing.failures,
                    since_unix_ms: unix_ms(failing.since),
                    last_error: failing.last_error.clone(),
                    retry_at_unix_ms: failing.retry_at.map(unix_ms),
                })
            })
            .collect()
    }
}

/// One component's voice in [`Troubles`]; its entry goes when it is dropped.
#[derive(Debug)]
pub struct TroubleReporter {
    shared: Arc<Shared>,
    id: u64,
    /// Whether the entry says failing: lets [`recovered`](Self::recovered), called on
    /// every healthy step, skip the lock.
    failing: AtomicBool,
}

impl TroubleReporter {
    /// An attempt at `what` failed with `error`; the next one starts in `retry_in`.
    /// Counts consecutive failures; the first one sets since when.
    pub fn failing(&self, what: &'static str, error: &dyn Display, retry_in: Duration) {
        self.report(what, error, Some(retry_in));
    }

    /// A condition about `what` holds, described by `error`, and nothing is retried: it
    /// lasts until [`recovered`](Self::recovered) (objects an informer cannot decode,
    /// left out of its cache until they can be). Counts the reports, as `failing`.
    pub fn standing(&self, what: &'static str, error: &dyn Display) {
        self.report(what, error, None);
    }

    fn report(&self, what: &'static str, error: &dyn Display, retry_in: Option<Duration>) {
        let now = SystemTime::now();
        let mut entries = self.shared.entries.lock();
        let Some(entry) = entries.get_mut(&self.id) else {
            return;
        };
        let (failures, since) = entry
            .failing
            .as_ref()
            .map_or((0, now), |f| (f.failures, f.since));
        entry.failing = Some(Failing {
            what,
            failures: failures + 1,
            since,
            last_error: error.to_string(),
            retry_at: retry_in.map(|wait| now + wait),
        });
        self.failing.store(true, Ordering::Release);
    }

    /// The component works again: its banner goes. Cheap when it was not failing.
    pub fn recovered(&self) {
        if !self.failing.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(entry) = self.shared.entries.lock().get_mut(&self.id) {
            entry.failing = None;
        }
    }

    /// Whether the last report was a failure.
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }
}

impl Drop for TroubleReporter {
    fn drop(&mut self) {
        self.shared.entries.lock().remove(&self.id);
    }
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_in_a_row_and_keep_their_start() {
        let troubles = Troubles::default();
        let reporter = troubles.reporter("Foo", Stage::Fifo);
        assert!(troubles.read().is_empty(), "healthy until it reports");
        reporter.failing("list", &"first", Duration::from_secs(1));
        let first = troubles.read().remove(0);
        reporter.failing("watch", &"second", Duration::from_secs(30));
        let second = troubles.read().remove(0);
        assert_eq!(second.failures, 2);
        assert_eq!(second.since_unix_ms, first.since_unix_ms);
        assert_eq!(
            (second.what, second.last_error.as_str()),
            ("watch", "second")
        );
        assert!(second.retry_at_unix_ms >= Some(second.since_unix_ms + 30_000));
        assert!(reporter.is_failing());

        reporter.recovered();
        assert!(troubles.read().is_empty());
        reporter.failing("list", &"again", Duration::ZERO);
        assert_eq!(
            troubles.read()[0].failures,
            1,
            "a recovery starts the count over"
        );
    }

    #[test]
    fn a_dropped_reporter_leaves_nothing_and_others_stay() {
        let troubles = Troubles::default();
        let gone = troubles.reporter("Foo", Stage::Fifo);
        let stays = troubles.reporter("Deployment", Stage::Fifo);
        gone.failing("list", &"refused", Duration::ZERO);
        stays.failing("watch", &"refused", Duration::ZERO);
        drop(gone);
        let now = troubles.read();
        assert_eq!(now.len(), 1);
        assert_eq!(now[0].component, "Deployment");
        let json = serde_json::to_value(&now).unwrap();
        assert_eq!(json[0]["stage"], "fifo");
        assert_eq!(json[0]["what"], "watch");
    }
}
