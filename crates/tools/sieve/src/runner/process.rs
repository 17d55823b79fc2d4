//! The controller under test as processes (one, or a shard group's replicas): started,
//! SIGKILLed at a crash point, started again, stopped. Each incarnation logs to a file
//! of its own (`controller-N.log`).
//!
//! Each incarnation is the leader of a **process group** of its own, and every signal
//! goes to the whole group. A controller is often more than one process: a shell script
//! with its `kubectl get --watch` and a python filter, a wrapper that execs nothing. A
//! signal to the direct child alone leaves the rest re-parented to init, still watching
//! and writing beside the next incarnation (every watch event after a crash seen twice,
//! writes from a process that should be dead): not a crash at all. A process that moves
//! itself into another group (`setsid`) escapes this; a controller that does so should be
//! started through a wrapper that does not.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
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
            // Its own process group (pgid = its pid): signals reach its children too.
            .process_group(0)
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

    /// A function that SIGKILLs the current incarnation of a replica, its whole process
    /// group, at once (for the crash hook, which names the replica).
    pub fn killer(&self) -> impl Fn(usize) + Send + 'static {
        let replicas = self.replicas.clone();
        move |replica| {
            if let Some(child) = replicas.get(replica)
                && let Some(child) = child.lock().as_mut()
            {
                signal_group(child, Signal::KILL);
                let _ = child.start_kill();
            }
        }
    }

    /// SIGKILLs the current incarnation of `replica` (its process group) and waits for
    /// it to exit and for its group to be gone.
    pub async fn kill(&self, replica: usize) {
        let child = self.replicas.get(replica).and_then(|c| c.lock().take());
        if let Some(mut child) = child {
            let group = group_of(&child);
            signal_group(&child, Signal::KILL);
            let _ = child.start_kill();
            let _ = child.wait().await;
            if let Some(group) = group {
                wait_group_gone(group).await;
            }
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
            let group = group_of(&child);
            signal_group(&child, Signal::TERM);
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            // Whatever of the group outlived its leader (a child that ignores SIGTERM).
            if let Some(group) = group {
                let _ = kill_process_group(group, Signal::KILL);
                wait_group_gone(group).await;
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

/// The process group `child` leads (its pid), while it has not been reaped.
fn group_of(child: &Child) -> Option<Pid> {
    child.id().and_then(|pid| Pid::from_raw(pid.cast_signed()))
}

/// Sends `signal` to the process group `child` leads.
fn signal_group(child: &Child, signal: Signal) {
    if let Some(group) = group_of(child) {
        let _ = kill_process_group(group, signal);
    }
}

/// Waits, up to 5 s, until no process of `group` is left: its members are re-parented to
/// init once the leader is reaped, and a SIGKILL takes effect before any of them runs
/// again, but one that has not exited yet can still hold a connection open. (A zombie
/// whose parent never reaps it stays a member: hence the bound.)
async fn wait_group_gone(group: Pid) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while test_kill_process_group(group).is_ok() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a process with `pid` is alive (not a zombie, not gone).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            // The state is the field after the command's closing parenthesis.
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
            !matches!(state, Some(Some('Z' | 'X')) | None)
        })
    }

    /// The pid the test script writes to `pid_file` (atomically: written, then renamed),
    /// waited for up to 10 s.
    async fn child_pid(pid_file: &std::path::Path) -> i32 {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
            {
                return pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the script never started its child"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A controller made of several processes, as a shell script with its `kubectl get
    /// --watch` is: the crash kills all of them, not only the shell (issue 57, A1).
    #[tokio::test]
    async fn a_crash_kills_the_controllers_own_children_too() {
        let dir = std::env::temp_dir().join(format!("sieve-process-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let pid_file = dir.join("grandchild.pid");
        let script = format!(
            "sleep 300 & echo $! > {0}.tmp && mv {0}.tmp {0}; wait",
            pid_file.display()
        );
        let mut controller = Controller::new(1);
        let command = ["sh".to_owned(), "-c".to_owned(), script];
        controller.start(0, &command, &[], &dir).expect("started");
        let grandchild = child_pid(&pid_file).await;
        assert!(alive(grandchild));
        // The crash hook's path: the synchronous killer, then the runner's restart.
        controller.killer()(0);
        controller.kill(0).await;
        assert!(
            !alive(grandchild),
            "the controller's child {grandchild} outlived the crash"
        );
        // And a stop (SIGTERM to the group) reaches a child too.
        // Removed before the start: the new script may write it at once.
        let _ = std::fs::remove_file(&pid_file);
        controller
            .start(0, &command, &[], &dir)
            .expect("started again");
        let second = child_pid(&pid_file).await;
        controller.stop(Duration::from_secs(2)).await;
        assert!(
            !alive(second),
            "the controller's child {second} outlived the stop"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
