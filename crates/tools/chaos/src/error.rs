//! The soak's errors: what stops it from running at all (a violation is not an error;
//! it is reported).

/// Why the soak could not set up or run a step.
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// A set-up step failed (certificates, files, the control plane's state dir).
    #[error("{0}")]
    Setup(String),
    /// A file or socket operation failed.
    #[error("{action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A request to the API server failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An external command (hack/control-plane.sh, curl) failed.
    #[error("{command} failed: {detail}")]
    Command {
        /// The command.
        command: String,
        /// Its exit status and the end of its output.
        detail: String,
    },
}

impl ChaosError {
    /// An [`Io`](Self::Io) error.
    pub fn io(action: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            action: action.into(),
            source,
        }
    }
}
