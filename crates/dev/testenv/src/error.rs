//! The error type of this crate.

use std::path::PathBuf;
use std::time::Duration;

/// Everything that can go wrong while starting, using or waiting on a test
/// control plane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `hack/control-plane.sh build` failed: no Go toolchain and no cached or
    /// `KUBEBUILDER_ASSETS` binaries, or the Go build itself failed.
    #[error(
        "could not get the control-plane binaries (`{script} build` exited with {status}); \
         install Go >= 1.24 and run `{script} build`, or set KUBEBUILDER_ASSETS to a directory \
         with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok.\n{output}"
    )]
    Binaries {
        /// The control-plane script that was run.
        script: PathBuf,
        /// Its exit status.
        status: String,
        /// The end of its output.
        output: String,
    },

    /// A file-system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The control plane did not become ready in time.
    #[error("control plane not ready after {timeout:?}; log {log}:\n{log_tail}")]
    StartTimeout {
        /// How long we waited.
        timeout: Duration,
        /// The startup log file.
        log: PathBuf,
        /// The end of the startup log.
        log_tail: String,
    },

    /// The control-plane process exited (during startup or later).
    #[error("control plane exited ({status}); log {log}:\n{log_tail}")]
    Exited {
        /// Its exit status.
        status: String,
        /// The startup log file.
        log: PathBuf,
        /// The end of the startup log.
        log_tail: String,
    },

    /// Starting the process-wide shared control plane failed earlier; every
    /// test using it reports the same failure.
    #[error("the shared control plane failed to start: {0}")]
    SharedStartFailed(String),

    /// The kubeconfig could not be read or turned into a client config.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),

    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),

    /// A request could not be built (e.g. an invalid path for [`get_raw`](crate::get_raw)).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// A test certificate could not be generated ([`WebhookCerts`](crate::webhook::WebhookCerts)).
    #[error("test certificate: {0}")]
    Certificate(String),

    /// [`wait_for`](crate::wait_for) ran out of time.
    #[error("timed out after {timeout:?} waiting for {what}; last seen: {last_seen}")]
    Timeout {
        /// The condition that was awaited.
        what: String,
        /// How long we waited.
        timeout: Duration,
        /// The description of the last observed state.
        last_seen: String,
    },
}

impl Error {
    /// An [`Error::Io`] with context.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
