//! `vm-controller`: the VirtualMachine controller binary, controller101's
//! `cmd/main.go`. It only wires flags to crates; the controller is
//! `crates/controllers/vm-controller`, the drivers are `crates/controllers/vm-driver`.
//!
//! ```text
//! vm-controller --kubeconfig ~/.kube/config --vm-driver qemu --state-dir /var/lib/vm-controller
//! vm-controller --vm-driver fake --usage-period 5s --log-format json
//! ```
//!
//! Several replicas sharing one driver state must run with `--leader-elect`: only the
//! leader drives servers.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, ValueEnum};
use cliflag::parse_duration;
use manager::{ControllerRunnable, Manager, ManagerArgs};
use tracing::info;
use vm_controller::{CONTROLLER_NAME, VirtualMachineControllerOptions};
use vm_driver::{Driver, FakeDriver, FileDriver, QemuDriver};

/// Which driver creates the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DriverKind {
    /// In memory: servers exist only while this process runs (demos, tests).
    Fake,
    /// Local QEMU processes, state in --state-dir (hack/install-qemu.sh installs QEMU).
    Qemu,
    /// Like fake, but the servers are files in --state-dir, shared by every replica
    /// on that directory, with failure injection from its faults.json (the chaos soak).
    File,
}

/// The VirtualMachine controller: keeps a server per VirtualMachine (cloudnative.tw/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "vm-controller", version, about)]
struct Cli {
    #[command(flatten)]
    manager: ManagerArgs,

    /// The VM driver.
    #[arg(long, env = "VM_DRIVER", value_enum, default_value_t = DriverKind::Qemu)]
    vm_driver: DriverKind,

    /// Where the qemu driver keeps its servers (disks, pidfiles, QMP sockets), and the
    /// file driver its server files. Must survive controller restarts for the servers
    /// to be found again.
    #[arg(
        long,
        env = "STATE_DIR",
        default_value = "/var/lib/vm-controller",
        value_name = "DIR"
    )]
    state_dir: PathBuf,

    /// How often an Active VirtualMachine's usage is refreshed in its status. Go
    /// duration syntax: 20s, 1m.
    #[arg(long, env = "USAGE_PERIOD", default_value = "20s", value_parser = parse_usage_period, value_name = "DURATION")]
    usage_period: Duration,
}

/// A usage period: a Go duration of at least one second (a zero period would requeue
/// every Active VirtualMachine in a hot loop).
fn parse_usage_period(value: &str) -> Result<Duration, String> {
    let period = parse_duration(value).map_err(|e| e.to_string())?;
    if period < Duration::from_secs(1) {
        return Err(format!("must be at least 1s, got {value}"));
    }
    Ok(period)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    manager::main(
        CONTROLLER_NAME,
        cli.manager.clone(),
        async |mgr: &mut Manager| {
            let driver = driver(cli.vm_driver, &cli.state_dir).await?;
            // Served only with --webhook-bind-address (deploy/ sets it).
            vm_controller::webhook::register(mgr.webhook_server())?;
            // The CRD's conversion webhook (v1alpha1 <-> v1beta1), on the same server.
            vm_controller::conversion::register(mgr.webhook_server())?;
            // --namespace, the loop's flags and, with --shard-group, the shard.
            let options = mgr.controller_options();
            let workers = options.workers;
            let options = VirtualMachineControllerOptions {
                usage_period: cli.usage_period,
                ..options.into()
            };
            let vms = vm_controller::new_controller(
                mgr.client().clone(),
                mgr.factory(),
                mgr.recorder(),
                driver,
                options,
            );
            info!(workers, driver = ?cli.vm_driver, usage_period = ?cli.usage_period, "starting the VirtualMachine controller");
            mgr.add(ControllerRunnable::new(vms, workers))?;
            Ok(())
        },
    )
}

/// The driver `--vm-driver` names, on `--state-dir`.
async fn driver(kind: DriverKind, state_dir: &Path) -> anyhow::Result<Arc<dyn Driver>> {
    Ok(match kind {
        DriverKind::Fake => Arc::new(FakeDriver::new()),
        DriverKind::File => {
            let file = FileDriver::new(state_dir)
                .with_context(|| format!("opening state dir {}", state_dir.display()))?;
            info!(state_dir = %file.dir().display(), "file driver");
            Arc::new(file)
        }
        DriverKind::Qemu => {
            let qemu = QemuDriver::new(state_dir)
                .with_context(|| format!("opening state dir {}", state_dir.display()))?;
            qemu.check_binaries().await.context(
                "the qemu driver needs qemu-system-x86_64 and qemu-img (hack/install-qemu.sh)",
            )?;
            info!(state_dir = %qemu.state_dir().display(), kvm = qemu.uses_kvm(), "qemu driver");
            Arc::new(qemu)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let cli = Cli::try_parse_from(["vm-controller"]).unwrap();
        assert_eq!(cli.vm_driver, DriverKind::Qemu);
        assert_eq!(cli.usage_period, Duration::from_secs(20));
        assert_eq!(cli.state_dir, PathBuf::from("/var/lib/vm-controller"));
        assert_eq!(cli.manager.run.namespace, None);
        assert_eq!(cli.manager.events_api, manager::EventsApi::EventsV1);
        let cli = Cli::try_parse_from([
            "vm-controller",
            "--events-api",
            "core/v1",
            "--vm-driver",
            "file",
            "--usage-period",
            "1m5s",
            "--state-dir",
            "/tmp/s",
            "--namespace",
            "ns",
            "--workers",
            "4",
        ])
        .unwrap();
        assert_eq!(cli.vm_driver, DriverKind::File);
        assert_eq!(cli.usage_period, Duration::from_secs(65));
        assert_eq!(cli.state_dir, PathBuf::from("/tmp/s"));
        assert_eq!(cli.manager.run.namespace.as_deref(), Some("ns"));
        assert_eq!(cli.manager.run.workers, 4);
        assert_eq!(cli.manager.events_api, manager::EventsApi::CoreV1);
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["vm-controller", "--vm-driver", "openstack"][..],
            &["vm-controller", "--usage-period", "0s"],
            &["vm-controller", "--usage-period", "soon"],
        ] {
            let err = Cli::try_parse_from(args).expect_err("refused").to_string();
            assert!(err.contains(args[1]), "{err}");
        }
    }
}
