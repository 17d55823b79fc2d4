//! Child processes that never outlive the test process.
//!
//! Each child gets its own process group (so the whole tree can be signalled
//! at once) and `PR_SET_PDEATHSIG`, so the kernel signals it when its parent
//! dies, even on panic or `SIGKILL`. The parent-death signal fires when the
//! spawning *thread* exits, not the process, so children are spawned from a
//! dedicated thread that lives exactly as long as the child (it waits on it).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{
    Pid, Signal, getpid, getppid, kill_process_group, set_parent_process_death_signal,
    test_kill_process_group,
};

use crate::error::{Error, Result};

/// Shared between the guard and the waiter thread: the exit status, once known.
type Exit = Arc<(Mutex<Option<ExitStatus>>, Condvar)>;

/// A running child process group; dropping the guard stops it (`SIGTERM`,
/// then `SIGKILL` to the whole group after a grace period).
#[derive(Debug)]
pub(crate) struct ProcessGuard {
    /// The child's pid, which is also its process group's id.
    pid: Pid,
    exit: Exit,
    grace: Duration,
}

impl ProcessGuard {
    /// Spawn `cmd` with `signal` as its parent-death signal, in a new process
    /// group, from a dedicated waiter thread.
    pub(crate) fn spawn(mut cmd: Command, signal: Signal, grace: Duration) -> Result<Self> {
        let exit: Exit = Arc::new((Mutex::new(None), Condvar::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter_exit = Arc::clone(&exit);
        let program = format!("{:?}", cmd.get_program());
        std::thread::Builder::new()
            .name("testenv-child-waiter".into())
            .spawn(move || {
                cmd.process_group(0);
                signal_on_parent_death(&mut cmd, signal, getpid());
                match cmd.spawn() {
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                    Ok(mut child) => {
                        let _ = tx.send(Ok(child.id()));
                        let status = child.wait();
                        let (lock, cvar) = &*waiter_exit;
                        let mut slot = lock.lock().unwrap_or_else(|e| e.into_inner());
                        // An error from wait() means the child is gone anyway.
                        *slot = Some(status.unwrap_or_else(|_| ExitStatus::from_raw(0)));
                        cvar.notify_all();
                    }
                }
            })
            .map_err(|e| Error::io("spawning the child waiter thread", e))?;
        let pid = rx
            .recv()
            .map_err(|_| Error::io("child waiter thread died", std::io::ErrorKind::Other.into()))?
            .map_err(|e| Error::io(format!("spawning {program}"), e))?;
        let pid = i32::try_from(pid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| {
                Error::io(
                    format!("pid of {program}"),
                    std::io::ErrorKind::InvalidData.into(),
                )
            })?;
        Ok(Self { pid, exit, grace })
    }

    /// The exit status if the child has exited.
    pub(crate) fn try_status(&self) -> Option<ExitStatus> {
        *self.exit.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait up to `timeout` for the child to exit.
    fn wait_timeout(&self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.exit;
        let mut slot = lock.lock().unwrap_or_else(|e| e.into_inner());
        while slot.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            slot = cvar
                .wait_timeout(slot, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *slot
    }

    /// Stop the process group: `SIGTERM`, wait for the grace period, `SIGKILL`.
    pub(crate) fn stop(&self) {
        // The process group we created for the child; harmless if it is already gone.
        let _ = kill_process_group(self.pid, Signal::TERM);
        if self.wait_timeout(self.grace).is_none() {
            tracing::warn!(
                pid = self.pid.as_raw_pid(),
                "child did not exit after SIGTERM; sending SIGKILL"
            );
        }
        // Also reap stragglers in the group (grandchildren outliving the child).
        let _ = kill_process_group(self.pid, Signal::KILL);
        self.wait_timeout(Duration::from_secs(5));
        // SIGKILL is asynchronous: return only once no process of the group is left
        // (signal 0 fails with ESRCH), so a stopped control plane has closed its ports.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while test_kill_process_group(self.pid).is_ok() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Makes the kernel send `signal` to the child when the thread spawning it exits
/// (`PR_SET_PDEATHSIG`), and the child give up before `exec` if `parent` already died
/// (the signal would then never come).
///
/// The crate's one `unsafe` item: std runs code between `fork` and `exec` only
/// through the unsafe [`CommandExt::pre_exec`], and offers no safe way to set a
/// parent-death signal.
#[allow(unsafe_code)]
fn signal_on_parent_death(cmd: &mut Command, signal: Signal, parent: Pid) {
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe code may run: it makes two system calls (prctl, getppid)
    // through rustix, which neither allocates nor takes a lock, and builds its error
    // from a raw errno (no allocation). An error makes `spawn` fail and the child
    // exit without running the program. Exercised by
    // `stop_ends_every_process_and_removes_the_state_dir` (tests/lifecycle.rs) and by
    // every other test that starts a control plane through `ProcessGuard::spawn`.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(signal))?;
            // The parent may have died before prctl took effect.
            if getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.stop();
    }
}
