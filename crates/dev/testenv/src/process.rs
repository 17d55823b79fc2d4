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

use crate::error::{Error, Result};

/// Shared between the guard and the waiter thread: the exit status, once known.
type Exit = Arc<(Mutex<Option<ExitStatus>>, Condvar)>;

/// A running child process group; dropping the guard stops it (`SIGTERM`,
/// then `SIGKILL` to the whole group after a grace period).
#[derive(Debug)]
pub(crate) struct ProcessGuard {
    pid: i32,
    exit: Exit,
    grace: Duration,
}

impl ProcessGuard {
    /// Spawn `cmd` with `signal` as its parent-death signal, in a new process
    /// group, from a dedicated waiter thread.
    pub(crate) fn spawn(mut cmd: Command, signal: libc::c_int, grace: Duration) -> Result<Self> {
        let exit: Exit = Arc::new((Mutex::new(None), Condvar::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter_exit = Arc::clone(&exit);
        let program = format!("{:?}", cmd.get_program());
        std::thread::Builder::new()
            .name("testenv-child-waiter".into())
            .spawn(move || {
                // SAFETY: getpid is async-signal-safe and has no preconditions.
                let parent = unsafe { libc::getpid() };
                cmd.process_group(0);
                // SAFETY: the closure only calls async-signal-safe functions
                // (prctl, getppid, _exit) between fork and exec.
                unsafe {
                    cmd.pre_exec(move || {
                        if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        // The parent may have died before prctl took effect.
                        if libc::getppid() != parent {
                            libc::_exit(1);
                        }
                        Ok(())
                    });
                }
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
        Ok(Self {
            pid: pid as i32,
            exit,
            grace,
        })
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
        // SAFETY: kill(2) with a negative pid signals the process group we
        // created for the child; harmless if it is already gone.
        unsafe { libc::kill(-self.pid, libc::SIGTERM) };
        if self.wait_timeout(self.grace).is_none() {
            tracing::warn!(
                pid = self.pid,
                "child did not exit after SIGTERM; sending SIGKILL"
            );
        }
        // Also reap stragglers in the group (grandchildren outliving the child).
        // SAFETY: as above.
        unsafe { libc::kill(-self.pid, libc::SIGKILL) };
        self.wait_timeout(Duration::from_secs(5));
        // SIGKILL is asynchronous: return only once no process of the group is left
        // (signal 0 fails with ESRCH), so a stopped control plane has closed its ports.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // SAFETY: signal 0 only checks that the group exists.
        while unsafe { libc::kill(-self.pid, 0) } == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.stop();
    }
}
