//! The controller under test as processes (one, or a shard group's replicas): started,
//! SIGKILLed at a crash point, started again, stopped. Each incarnation logs to a file
//! of its own (`controller-N.log`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::process::{Child, Command};

use super::RunError;

/// The controller's replicas (one, or a shard group's), each its current incarnation,
/// shared with the proxy's crash hook (which kills the replica that sent the crash
/// point's write synchronously, right after the answer to it went out).
#[derive(Debug)]
pub struct Controller {
    replicas: Vec<Arc<Mutex<Option<Child>>>>,
    incarnations: usize,
    logs: Vec<PathBuf>,
}

impl Default for Controller {
    fn default() -> Self {
        Self::new(1)
    }
}

impl Controller {
    /// A controller of `replicas` processes (at least one), none started yet.
    pub fn new(replicas: usize) -> Self {
        Self {
            replicas: (0..replicas.max(1)).map(|_| Arc::default()).collect(),
            incarnations: 0,
            logs: Vec::new(),
        }
    }

    /// How many replicas the controller has.
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// Starts a new incarnation of `replica` running `command` (program and arguments)
    /// with `env`, logging to `dir/controller-N.log` (`controller-N-replica-R.log` in a
    /// group).
    pub fn start(
        &mut self,
        replica: usize,
        command: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<(), RunError> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| RunError::Setup("the controller's command is empty".into()))?;
        let slot = self
            .replicas
            .get(replica)
            .cloned()
            .ok_or_else(|| RunError::Setup(format!("no replica {replica}")))?;
        self.incarnations += 1;
        let name = if self.replicas.len() == 1 {
            format!("controller-{}.log", self.incarnations)
        } else {
            format!("controller-{}-replica-{replica}.log", self.incarnations)
        };
        let log = dir.join(name);
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
        *slot.lock() = Some(child);
        self.logs.push(log);
        Ok(())
    }

    /// A function that SIGKILLs the current incarnation of a replica at once (for the
    /// crash hook, which names the replica).
    pub fn killer(&self) -> impl Fn(usize) + Send + 'static {
        let replicas = self.replicas.clone();
        move |replica| {
            if let Some(child) = replicas.get(replica)
                && let Some(child) = child.lock().as_mut()
            {
                let _ = child.start_kill();
            }
        }
    }

    /// SIGKILLs the current incarnation of `replica` and waits for it to exit.
    pub async fn kill(&self, replica: usize) {
        let child = self.replicas.get(replica).and_then(|c| c.lock().take());
        if let Some(mut child) = child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// SIGKILLs every replica and waits for them to exit.
    pub async fn kill_all(&self) {
        for replica in 0..self.replicas.len() {
            self.kill(replica).await;
        }
    }

    /// The first replica whose current incarnation exited, and its status.
    pub fn exited(&self) -> Option<(usize, std::process::ExitStatus)> {
        self.replicas.iter().enumerate().find_map(|(index, child)| {
            child
                .lock()
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten())
                .map(|status| (index, status))
        })
    }

    /// Stops every replica: SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(&self, grace: Duration) {
        for slot in &self.replicas {
            let child = slot.lock().take();
            let Some(mut child) = child else { continue };
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
