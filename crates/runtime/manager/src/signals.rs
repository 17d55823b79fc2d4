//! Graceful shutdown on SIGTERM / SIGINT: sample-controller's `pkg/signals`.
//!
//! The kubelet stops a Pod by sending SIGTERM, waiting the grace period (30 s by
//! default), then sending SIGKILL. A controller should use that window: stop taking
//! new work, let in-flight syncs finish, release its leader lease, exit 0. A second
//! signal means the operator (or a Ctrl-C typed twice) wants out now: exit at once with
//! status 1, as sample-controller's `SetupSignalHandler` does.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Returns a token cancelled on the first SIGTERM or SIGINT; a second one exits the
/// process immediately with status 1.
///
/// # Panics
///
/// Outside a Tokio runtime, or if the signal handlers cannot be installed (which only
/// happens when the process is out of file descriptors at start-up).
pub fn setup_signal_handler() -> CancellationToken {
    let shutdown = CancellationToken::new();
    let mut term = signal(SignalKind::terminate()).expect("install the SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("install the SIGINT handler");
    let token = shutdown.clone();
    tokio::spawn(async move {
        let first = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        info!(
            signal = first,
            "shutting down gracefully; send it again to exit at once"
        );
        token.cancel();
        let second = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        warn!(signal = second, "second signal: exiting immediately");
        std::process::exit(1);
    });
    shutdown
}
