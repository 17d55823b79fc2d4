//! The controller under test as a process: started, SIGKILLed at a crash point, started
//! again, stopped. Each incarnation logs to a file of its own (`controller-N.log`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::process::{Child, Command};

use super::RunError;

/// The controller's current incarnation, shared with the proxy's crash hook (which
/// kills it synchronously, right after the answer to the crash point's write went out).
#[derive(Debug, Default)]
pub struct Controller {
    child: Arc<Mutex<Option<Child>>>,
    incarnations: usize,
    logs: Vec<PathBuf>,
}

impl Controller {
    /// Starts a new incarnation of `command` (program and arguments) with `env`,
    /// logging to `dir/controller-N.log`.
    pub fn start(
        &mut self,
        command: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<(), RunError> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| RunError::Setup("the controller's command is empty".into()))?;
        self.incarnations += 1;
        let log = dir.join(format!("controller-{}.log", self.incarnations));
        let file = std::fs::File::create(&log).map_err(|e| RunError::io("creating a log", e))?;
        let err = file
            .try_clone()
            .map_err(|e| RunError::io("cloning a log", e))?;
        let child = Command::new(program)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RunError::io(format!("starting {program}"), e))?;
        *self.child.lock() = Some(child);
        self.logs.push(log);
        Ok(())
    }

    /// A function that SIGKILLs the current incarnation at once (for the crash hook).
    pub fn killer(&self) -> impl FnOnce() + Send + 'static {
        let child = Arc::clone(&self.child);
        move || {
            if let Some(child) = child.lock().as_mut() {
                let _ = child.start_kill();
            }
        }
    }

    /// SIGKILLs the current incarnation and waits for it to exit.
    pub async fn kill(&self) {
        let child = self.child.lock().take();
        if let Some(mut child) = child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Whether the current incarnation exited; its status if it did.
    pub fn exited(&self) -> Option<std::process::ExitStatus> {
        self.child
            .lock()
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    /// Stops the current incarnation: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&self, grace: Duration) {
        let child = self.child.lock().take();
        let Some(mut child) = child else { return };
        if let Some(pid) = child.id() {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(pid.cast_signed())
                    .expect("a child's pid is positive"),
                rustix::process::Signal::TERM,
            );
        }
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// How many incarnations were started.
    pub fn incarnations(&self) -> usize {
        self.incarnations
    }

    /// The incarnations' log files, in order.
    pub fn logs(&self) -> &[PathBuf] {
        &self.logs
    }

    /// The lines of the logs that report a panic (`file: line`), at most 20.
    pub fn panics(&self) -> Vec<String> {
        let mut found = Vec::new();
        for log in &self.logs {
            let Ok(text) = std::fs::read_to_string(log) else {
                continue;
            };
            let name = log
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            for line in text.lines().filter(|l| {
                l.contains("panicked at")
                    || l.contains("panic while syncing")
                    || l.contains("panic: ")
            }) {
                if found.len() < 20 {
                    found.push(format!(
                        "{name}: {}",
                        line.chars().take(300).collect::<String>()
                    ));
                }
            }
        }
        found
    }
}
