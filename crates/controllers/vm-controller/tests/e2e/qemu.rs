//! The controller with the real QEMU driver (TCG is fine): a qemu process with the
//! spec's -m and -smp runs while the VirtualMachine is Active, usage is reported, and
//! after the delete the process and the disk are gone.
//!
//! QEMU must be installed (`hack/install-qemu.sh`; hack/test.sh runs it). Without it
//! this test FAILS, on purpose, saying so.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use vm_controller::server_name;
use vm_driver::QemuDriver;
use vm_driver::testing::{cmdline, kill_processes_mentioning, pids_mentioning};

use super::*;

/// Kills every QEMU whose command line names the state directory, then removes the
/// directory: a failing assertion never leaks a VM.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        kill_processes_mentioning(&self.0);
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Whether `args` has `flag` immediately followed by `value`.
fn has_arg(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

#[tokio::test]
async fn a_qemu_process_runs_while_active_and_is_gone_after_delete() -> anyhow::Result<()> {
    // Short: the QMP socket path must stay under 108 bytes.
    let dir = PathBuf::from(format!("/tmp/vmc-e2e-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let _cleanup = Cleanup(dir.clone());
    let driver = QemuDriver::new(&dir)?.with_usage_interval(Duration::from_millis(200));
    if let Err(e) = driver.check_binaries().await {
        panic!(
            "this test needs QEMU (qemu-system-x86_64 and qemu-img): {e}\n\
             install it with hack/install-qemu.sh (hack/test.sh does)"
        );
    }
    let state_dir = driver.state_dir().to_path_buf();

    let env = TestEnv::with_prefix("vmc-qemu").await?;
    install_crds(env.client()).await?;
    let _controller = RunningController::start(
        env.client().clone(),
        env.namespace(),
        Arc::new(driver),
        Duration::from_secs(2),
    );

    create_vm(&env, "tiny", "1", "64Mi", "64Mi").await?;
    let vm = wait_for_vm(&env, "tiny", "tiny Active on QEMU", is_active).await?;
    let name = server_name(&vm)?;

    let pids = pids_mentioning(&state_dir);
    assert_eq!(pids.len(), 1, "one QEMU for one VirtualMachine: {pids:?}");
    let args = cmdline(pids[0]);
    assert!(has_arg(&args, "-m", "64"), "{args:?}");
    assert!(has_arg(&args, "-smp", "1"), "{args:?}");
    assert!(args.iter().any(|a| a.contains(&name)), "{args:?}");
    let server_dir = state_dir.join(&name);
    assert!(server_dir.is_dir(), "{} exists", server_dir.display());

    // Usage measured from /proc: a running QEMU has resident memory.
    let status = vm.status.unwrap();
    let server = status.server.unwrap();
    assert_eq!(server.state, "Running");
    assert!(server.usage.memory > 0.0, "{:?}", server.usage);
    assert!(server.usage.cpu >= 0.0, "{:?}", server.usage);

    delete_and_wait_gone(&env, "tiny").await?;
    assert!(pids_mentioning(&state_dir).is_empty(), "QEMU still running");
    assert!(
        !server_dir.exists(),
        "{} (disk) still there",
        server_dir.display()
    );
    Ok(())
}
