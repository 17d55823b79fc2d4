//! QemuDriver against real QEMU processes (TCG or KVM, whatever the host offers).
//!
//! QEMU must be installed: `hack/install-qemu.sh` (CI runs it). Without it these
//! tests fail, on purpose, with a message saying so.
//!
//! Every test uses its own state directory and a [`Cleanup`] guard that SIGKILLs any
//! QEMU still running from it, so a failing assertion never leaks a VM.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use vm_driver::testing::{cmdline, kill_processes_mentioning, pids_mentioning};
use vm_driver::{Driver, DriverError, QemuDriver, ServerSpec, ServerState};

/// Sends `signal` to the (verified QEMU) process `pid`.
fn send(pid: u32, signal: Signal) -> rustix::io::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .expect("a pid");
    kill_process(pid, signal)
}

/// Removes a test's state directory, killing its QEMUs first (every process whose
/// command line names this directory).
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.0);
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh, short state directory (the QMP socket path must stay under 108 bytes).
fn state_dir(tag: &str) -> (PathBuf, Cleanup) {
    let dir = PathBuf::from(format!("/tmp/vmd-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    (dir.clone(), Cleanup(dir))
}

async fn driver(dir: &Path) -> QemuDriver {
    driver_with_kvm(dir, true).await
}

/// `kvm: false` forces TCG, so hosts with KVM also exercise the software path.
async fn driver_with_kvm(dir: &Path, kvm: bool) -> QemuDriver {
    let driver = QemuDriver::new(dir)
        .expect("state dir")
        .with_kvm(kvm)
        .with_usage_interval(Duration::from_millis(500));
    if let Err(e) = driver.check_binaries().await {
        panic!(
            "these tests need QEMU (qemu-system-x86_64 and qemu-img): {e}\n\
             install it with hack/install-qemu.sh (CI does)"
        );
    }
    driver
}

/// 1 vCPU, 64 MiB, a 16 MiB disk.
fn tiny(name: &str) -> ServerSpec {
    ServerSpec::new(name, 1, 64 << 20, 16 << 20)
}

/// Polls `condition` every 50 ms for up to 30 s.
async fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (up to 30 s) until the server `pid` is the only process whose command line
/// mentions `disk`: right after a start, QEMU's daemonizing parent can still be listed
/// for a moment (seen once in CI).
async fn only_the_server_mentions(disk: &Path, pid: u32) {
    wait_for("only the server to mention its disk", || {
        pids_mentioning(disk) == [pid]
    })
    .await;
}

fn has_pair(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_idempotency_and_restart() {
    let (dir, _cleanup) = state_dir("life");
    let disk = dir.join("vm-1/disk.qcow2");
    let first = driver(&dir).await;
    let spec = tiny("vm-1");

    // Two concurrent creates: one server.
    let (a, b) = tokio::join!(first.create_server(&spec), first.create_server(&spec));
    let id = a.unwrap();
    assert_eq!(b.unwrap(), id);
    assert!(disk.exists());
    let pid = first.server_pid("vm-1").unwrap().expect("a running QEMU");
    only_the_server_mentions(&disk, pid).await;
    let args = cmdline(pid);
    assert!(has_pair(&args, "-m", "64"), "{args:?}");
    assert!(has_pair(&args, "-smp", "1"), "{args:?}");
    assert!(has_pair(&args, "-uuid", id.as_str()), "{args:?}");

    let status = first.server_status("vm-1").await.unwrap();
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.state.to_string(), "Running");
    assert!(status.memory_percent > 0.0, "{status:?}");
    assert!(
        status.memory_percent < 400.0,
        "RSS of a 64 MiB VM: {status:?}"
    );
    // Whole-process CPU per vCPU: at most every host core busy, plus rounding slack.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    assert!(status.cpu_percent >= 0.0, "{status:?}");
    assert!(status.cpu_percent <= 100.0 * cores + 10.0, "{status:?}");

    // Create again: same id, same single process.
    assert_eq!(first.create_server(&spec).await.unwrap(), id);
    only_the_server_mentions(&disk, pid).await;
    assert_eq!(first.server_names().unwrap(), ["vm-1"]);

    // "Restart the controller": a new driver on the same directory adopts the VM.
    drop(first);
    let second = driver(&dir).await;
    assert!(second.server_exists("vm-1").await.unwrap());
    assert_eq!(second.server_pid("vm-1").unwrap(), Some(pid));
    assert_eq!(
        second.server_status("vm-1").await.unwrap().state,
        ServerState::Running
    );
    assert_eq!(second.create_server(&spec).await.unwrap(), id);
    only_the_server_mentions(&disk, pid).await;

    // Delete: process, disk and directory gone; repeating it is fine.
    second.delete_server("vm-1").await.unwrap();
    assert!(pids_mentioning(&disk).is_empty());
    assert!(!disk.exists() && !dir.join("vm-1").exists());
    assert!(!second.server_exists("vm-1").await.unwrap());
    let err = second.server_status("vm-1").await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    second.delete_server("vm-1").await.unwrap();
    assert!(second.server_names().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_whose_qemu_died_is_restarted_by_create_and_cleaned_by_delete() {
    let (dir, _cleanup) = state_dir("stale");
    let driver = driver_with_kvm(&dir, false).await;
    assert!(!driver.uses_kvm());
    let id = driver.create_server(&tiny("vm-2")).await.unwrap();
    let disk = dir.join("vm-2/disk.qcow2");

    let kill_qemu = || {
        let pid = driver.server_pid("vm-2").unwrap().expect("running");
        send(pid, Signal::KILL).unwrap();
        pid
    };
    let old_pid = kill_qemu();
    wait_for("the killed QEMU to go", || {
        pids_mentioning(&disk).is_empty()
    })
    .await;

    // Still defined, reported as shut down.
    assert!(driver.server_exists("vm-2").await.unwrap());
    let status = driver.server_status("vm-2").await.unwrap();
    assert_eq!(
        (status.state, status.cpu_percent, status.memory_percent),
        (ServerState::Shutdown, 0.0, 0.0)
    );

    // Create brings it back with the same id and disk.
    assert_eq!(driver.create_server(&tiny("vm-2")).await.unwrap(), id);
    let new_pid = driver.server_pid("vm-2").unwrap().expect("restarted");
    assert_ne!(new_pid, old_pid);
    only_the_server_mentions(&disk, new_pid).await;
    assert_eq!(
        driver.server_status("vm-2").await.unwrap().state,
        ServerState::Running
    );

    // Dead again, then deleted: the stale directory is cleaned up.
    kill_qemu();
    wait_for("the killed QEMU to go", || {
        pids_mentioning(&disk).is_empty()
    })
    .await;
    driver.delete_server("vm-2").await.unwrap();
    assert!(!dir.join("vm-2").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reused_pid_is_never_adopted_or_killed() {
    let (dir, _cleanup) = state_dir("reuse");
    let driver = driver(&dir).await;
    driver.create_server(&tiny("vm-3")).await.unwrap();
    let disk = dir.join("vm-3/disk.qcow2");
    let pid = driver.server_pid("vm-3").unwrap().expect("running");
    send(pid, Signal::KILL).unwrap();
    wait_for("the killed QEMU to go", || {
        pids_mentioning(&disk).is_empty()
    })
    .await;

    // An unrelated process now "has" the pid in the pidfile.
    let mut stranger = tokio::process::Command::new("sleep")
        .arg("300")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stranger_pid = stranger.id().unwrap();
    fs::write(dir.join("vm-3/qemu.pid"), stranger_pid.to_string()).unwrap();

    assert_eq!(driver.server_pid("vm-3").unwrap(), None);
    assert_eq!(
        driver.server_status("vm-3").await.unwrap().state,
        ServerState::Shutdown
    );
    driver.delete_server("vm-3").await.unwrap();
    assert!(!dir.join("vm-3").exists());
    assert!(
        stranger.try_wait().unwrap().is_none(),
        "delete must not kill a process that is not our QEMU"
    );
    stranger.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qemu_that_ignores_quit_is_killed() {
    let (dir, _cleanup) = state_dir("hung");
    driver(&dir)
        .await
        .create_server(&tiny("vm-4"))
        .await
        .unwrap();
    // Short timeouts only now, so a slow CI start-up cannot fail the create.
    let driver = driver(&dir)
        .await
        .with_qmp_timeout(Duration::from_millis(500))
        .with_stop_timeout(Duration::from_secs(1));
    let disk = dir.join("vm-4/disk.qcow2");
    let pid = driver.server_pid("vm-4").unwrap().expect("running");
    // A stopped process accepts the QMP connection but never answers or exits.
    send(pid, Signal::STOP).unwrap();

    let err = driver.server_status("vm-4").await.unwrap_err();
    assert!(matches!(err, DriverError::Qmp { .. }), "{err:?}");
    driver.delete_server("vm-4").await.unwrap();
    assert!(pids_mentioning(&disk).is_empty());
    assert!(!dir.join("vm-4").exists());
}

#[tokio::test]
async fn bad_names_specs_and_missing_servers_are_typed_errors() {
    let (dir, _cleanup) = state_dir("errors");
    let driver = driver(&dir).await;
    for name in ["../etc", "a/b", "UPPER", ""] {
        let err = driver.create_server(&tiny(name)).await.unwrap_err();
        assert!(
            matches!(err, DriverError::InvalidName { .. }),
            "{name:?}: {err:?}"
        );
        let err = driver.delete_server(name).await.unwrap_err();
        assert!(
            matches!(err, DriverError::InvalidName { .. }),
            "{name:?}: {err:?}"
        );
    }
    let err = driver
        .create_server(&ServerSpec {
            cpus: 0,
            ..tiny("vm")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::InvalidSpec { .. }), "{err:?}");
    let err = driver.server_status("missing").await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(!driver.server_exists("missing").await.unwrap());
    driver.delete_server("missing").await.unwrap();
    // Nothing was written for any of these.
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
}
