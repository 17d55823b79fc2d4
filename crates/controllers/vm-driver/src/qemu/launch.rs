//! Making a server's disk and starting its QEMU.
//!
//! QEMU is started with `-daemonize`: the process we spawn forks the real VM into a
//! new session (setsid), waits until the VM is initialised (disk opened, QMP socket
//! listening, pidfile written) and only then exits, with a non-zero status if
//! anything failed. So when [`start_qemu`] returns, the VM is ready for QMP, and it
//! is not our child: it outlives the controller, and a controller restart (or crash)
//! never takes VMs down with it. The pidfile is how we find it again.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::error::DriverError;
use crate::qemu::server_dir::{ServerDir, ServerRecord};

/// Where to point users when a binary is missing.
const INSTALL_HINT: &str = "not found: install QEMU with hack/install-qemu.sh \
                            (Debian packages qemu-system-x86 and qemu-utils)";

/// Whether `/dev/kvm` can be opened read-write (hardware acceleration is usable).
pub(crate) fn kvm_usable() -> bool {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// `qemu-img create -f qcow2 <disk> <bytes>`, through a temporary file renamed into
/// place, so a crash never leaves a half-written disk that a retry would trust.
/// `bytes` is rounded up to a whole 512-byte sector.
pub(crate) async fn create_disk(
    qemu_img: &Path,
    dir: &ServerDir,
    bytes: u64,
    timeout: Duration,
) -> Result<(), DriverError> {
    let disk = dir.disk_path();
    let tmp = dir.dir.join("disk.qcow2.tmp");
    let size = bytes.div_ceil(512).saturating_mul(512);
    let mut command = Command::new(qemu_img);
    command
        .arg("create")
        .arg("-q")
        .args(["-f", "qcow2"])
        .arg(&tmp)
        .arg(size.to_string())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = run(qemu_img, command.output(), timeout).await?;
    if !output.status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(DriverError::Process {
            program: qemu_img.display().to_string(),
            detail: format!(
                "creating {}: {}: {}",
                disk.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    fs::rename(&tmp, &disk).map_err(|e| DriverError::io("renaming disk to", &disk, e))
}

/// The QEMU command line of a server (without the program).
pub(crate) fn qemu_args(dir: &ServerDir, record: &ServerRecord, kvm: bool) -> Vec<String> {
    let spec = &record.spec;
    let mut args: Vec<String> = vec!["-name".into(), dir.name.clone()];
    args.extend(["-uuid".into(), record.id.to_string()]);
    args.extend(["-m".into(), spec.memory_mib().to_string()]);
    args.extend(["-smp".into(), spec.cpus.to_string()]);
    if kvm {
        // Two -accel options: QEMU tries KVM and falls back to TCG if KVM fails to
        // initialise (e.g. /dev/kvm exists but nested virtualisation is off).
        args.extend(["-accel".into(), "kvm".into()]);
    }
    args.extend(["-accel".into(), "tcg".into()]);
    args.extend(
        [
            "-nodefaults",
            "-display",
            "none",
            "-nic",
            "none",
            "-daemonize",
        ]
        .map(String::from),
    );
    args.extend(["-drive".into(), dir.drive_arg()]);
    args.extend([
        "-qmp".into(),
        format!(
            "unix:{},server=on,wait=off",
            dir.qmp_socket_path().display()
        ),
    ]);
    args.extend(["-pidfile".into(), dir.pidfile_path().display().to_string()]);
    args
}

/// Starts the server's QEMU (daemonized) and returns its pid once the VM is up.
pub(crate) async fn start_qemu(
    qemu_system: &Path,
    dir: &ServerDir,
    record: &ServerRecord,
    kvm: bool,
    timeout: Duration,
) -> Result<i32, DriverError> {
    let pidfile = dir.pidfile_path();
    for stale in [pidfile.clone(), dir.qmp_socket_path()] {
        match fs::remove_file(&stale) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(DriverError::io("removing stale", stale, e));
            }
            _ => {}
        }
    }
    let log_path = dir.log_path();
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| DriverError::io("opening", &log_path, e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| DriverError::io("opening", &log_path, e))?;
    let mut command = Command::new(qemu_system);
    command
        .args(qemu_args(dir, record, kvm))
        .current_dir(&dir.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        // Only the short-lived launcher is our child; the VM itself is daemonized.
        .kill_on_drop(true);
    tracing::info!(server = %dir.name, id = %record.id, kvm, "starting QEMU");
    let status = run(qemu_system, command.status(), timeout).await?;
    let failed = |detail: String| DriverError::Process {
        program: qemu_system.display().to_string(),
        detail: format!("server {:?}: {detail}; log: {}", dir.name, dir.log_tail(10)),
    };
    if !status.success() {
        return Err(failed(format!("exited with {status}")));
    }
    dir.running_pid(Some(&record.id))
        .ok_or_else(|| failed(format!("no running QEMU found via {}", pidfile.display())))
}

/// Runs a process future with a timeout, mapping "program missing" to a hint.
async fn run<T>(
    program: &Path,
    future: impl Future<Output = std::io::Result<T>>,
    timeout: Duration,
) -> Result<T, DriverError> {
    let name = program.display().to_string();
    match tokio::time::timeout(timeout, future).await {
        Err(_) => Err(DriverError::Process {
            program: name,
            detail: format!("did not finish within {timeout:?}"),
        }),
        Ok(Err(e)) if e.kind() == ErrorKind::NotFound => Err(DriverError::Process {
            program: name,
            detail: INSTALL_HINT.into(),
        }),
        Ok(Err(e)) => Err(DriverError::Process {
            program: name,
            detail: format!("could not run: {e}"),
        }),
        Ok(Ok(value)) => Ok(value),
    }
}

/// Checks that `program --version` runs; the error says how to install QEMU.
pub(crate) async fn check_binary(program: &Path, timeout: Duration) -> Result<(), DriverError> {
    let mut command = Command::new(program);
    command
        .arg("--version")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = run(program, command.output(), timeout).await?;
    if output.status.success() {
        Ok(())
    } else {
        Err(DriverError::Process {
            program: program.display().to_string(),
            detail: format!("--version failed ({}); {INSTALL_HINT}", output.status),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{ServerId, ServerSpec};

    #[test]
    fn command_line_carries_the_spec() {
        let dir = ServerDir::new(Path::new("/state"), "vm-1");
        let record = ServerRecord {
            id: ServerId("u-1".into()),
            spec: ServerSpec::new("vm-1", 2, (64 << 20) + 1, 1 << 20),
        };
        let args = qemu_args(&dir, &record, true).join(" ");
        for want in [
            "-uuid u-1",
            "-m 65",
            "-smp 2",
            "-accel kvm -accel tcg",
            "-nodefaults",
            "-display none",
            "-nic none",
            "-daemonize",
            "-drive file=/state/vm-1/disk.qcow2,if=virtio,format=qcow2",
            "-qmp unix:/state/vm-1/qmp.sock,server=on,wait=off",
            "-pidfile /state/vm-1/qemu.pid",
        ] {
            assert!(args.contains(want), "{want:?} missing from {args}");
        }
        let tcg = qemu_args(&dir, &record, false).join(" ");
        assert!(!tcg.contains("kvm") && tcg.contains("-accel tcg"), "{tcg}");
    }

    #[tokio::test]
    async fn a_missing_binary_points_at_the_install_script() {
        let err = check_binary(Path::new("/nonexistent/qemu-img"), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("hack/install-qemu.sh"), "{err}");
    }
}
