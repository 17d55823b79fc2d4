//! `vm-controller`: the VirtualMachine controller binary, controller101's
//! `cmd/main.go`. It only wires flags to crates; the controller is
//! `crates/vm-controller`, the drivers are `crates/vm-driver`.
//!
//! ```text
//! vm-controller --kubeconfig ~/.kube/config --vm-driver qemu --state-dir /var/lib/vm-controller
//! vm-controller --vm-driver fake --usage-period 5s --log-format json
//! ```
//!
//! Run ONE replica per driver state: two controllers driving the same servers would
//! race (leader election arrives with the production-operation issue).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use cache::SharedInformerFactory;
use clap::{Parser, ValueEnum};
use controller::{ClientArgs, RunArgs};
use leaderelection::parse_duration;
use record::{BroadcasterOptions, EventBroadcaster};
use tracing::info;
use vm_controller::{CONTROLLER_NAME, VirtualMachineController, VirtualMachineControllerOptions};
use vm_driver::{Driver, FakeDriver, QemuDriver};

/// How long shutdown waits for queued Events to be written.
const EVENT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Which driver creates the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DriverKind {
    /// In memory: servers exist only while this process runs (demos, tests).
    Fake,
    /// Local QEMU processes, state in --state-dir (hack/install-qemu.sh installs QEMU).
    Qemu,
}

/// The VirtualMachine controller: keeps a server per VirtualMachine (cloudnative.tw/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "vm-controller", version, about)]
struct Cli {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    run: RunArgs,

    /// The VM driver.
    #[arg(long, env = "VM_DRIVER", value_enum, default_value_t = DriverKind::Qemu)]
    vm_driver: DriverKind,

    /// Where the qemu driver keeps its servers (disks, pidfiles, QMP sockets). Must
    /// survive controller restarts for the servers to be found again.
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    controller::init_logging(cli.run.log_format).map_err(|e| anyhow::anyhow!(e))?;

    // First SIGTERM/SIGINT: graceful shutdown; second: exit at once.
    let shutdown = controller::setup_signal_handler();

    let driver: Arc<dyn Driver> = match cli.vm_driver {
        DriverKind::Fake => Arc::new(FakeDriver::new()),
        DriverKind::Qemu => {
            let qemu = QemuDriver::new(&cli.state_dir)
                .with_context(|| format!("opening state dir {}", cli.state_dir.display()))?;
            qemu.check_binaries().await.context(
                "the qemu driver needs qemu-system-x86_64 and qemu-img (hack/install-qemu.sh)",
            )?;
            info!(state_dir = %qemu.state_dir().display(), kvm = qemu.uses_kvm(), "qemu driver");
            Arc::new(qemu)
        }
    };

    let client = cli
        .client
        .client()
        .await
        .context("building the Kubernetes client")?;
    let factory = SharedInformerFactory::new(client.clone(), cli.run.resync_period);

    let events = EventBroadcaster::new(BroadcasterOptions::default());
    events
        .start_recording_to_sink(client.clone())
        .context("starting the event broadcaster")?;
    let recorder = events.new_recorder(CONTROLLER_NAME, hostname());

    let options = VirtualMachineControllerOptions {
        usage_period: cli.usage_period,
        namespace: cli.run.namespace.clone(),
    };
    let vms = VirtualMachineController::new(client, &factory, recorder, driver, options);
    factory.start(&shutdown);
    info!(
        workers = cli.run.workers,
        driver = ?cli.vm_driver,
        usage_period = ?cli.usage_period,
        namespace = cli.run.namespace.as_deref().unwrap_or("<all>"),
        "starting the VirtualMachine controller"
    );
    let result = vms.run(cli.run.workers.into(), shutdown).await;

    events.shutdown(EVENT_FLUSH_TIMEOUT).await;
    result.context("running the VirtualMachine controller")?;
    info!("stopped");
    Ok(())
}

/// The node or Pod name for the Events' `source.host`.
fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
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
        assert_eq!(cli.run.namespace, None);
        let cli = Cli::try_parse_from([
            "vm-controller",
            "--vm-driver",
            "fake",
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
        assert_eq!(cli.vm_driver, DriverKind::Fake);
        assert_eq!(cli.usage_period, Duration::from_secs(65));
        assert_eq!(cli.state_dir, PathBuf::from("/tmp/s"));
        assert_eq!(cli.run.namespace.as_deref(), Some("ns"));
        assert_eq!(cli.run.workers, 4);
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
