//! Every sync result the loop reports, per controller: a [`ReconcileObserver`] for
//! tests that assert what the loop *counted* (a success or an error), not only what
//! the sync handler returned.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use crate::metrics::{ReconcileObserver, ReconcileResult, set_global_reconcile_observer};

/// The results, per controller name.
#[derive(Default)]
struct Recorded(Mutex<HashMap<String, Vec<ReconcileResult>>>);

impl ReconcileObserver for Recorded {
    fn observe(&self, controller: &str, result: ReconcileResult, _took: Duration) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(controller.to_string())
            .or_default()
            .push(result);
    }
}

static RECORDED: LazyLock<Arc<Recorded>> = LazyLock::new(|| {
    let recorded = Arc::new(Recorded::default());
    set_global_reconcile_observer(recorded.clone());
    recorded
});

/// Installs the recording observer as the process's reconcile observer (once; later
/// calls do nothing). Call it before the syncs to be recorded. The observer is
/// process-wide, so a test binary that uses it installs no other, and each test names
/// its controller uniquely.
pub fn record_reconcile_results() {
    LazyLock::force(&RECORDED);
}

/// The results the loop reported so far for `controller`, in order (empty unless
/// [`record_reconcile_results`] was called first).
pub fn reconcile_results(controller: &str) -> Vec<ReconcileResult> {
    RECORDED
        .0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(controller)
        .cloned()
        .unwrap_or_default()
}
