//! `sample-controller`: the Foo controller binary, kubernetes/sample-controller's
//! `main.go`. It only wires flags to crates: the controller is `crates/controllers/foo-controller`,
//! everything around it (client, informers, Events, metrics, health, leader election,
//! signals) is `manager::Manager`, opened by `manager::main`.
//!
//! ```text
//! sample-controller --kubeconfig ~/.kube/config --workers 2 --leader-elect
//! sample-controller --events-api core/v1   # core/v1 Events instead of events.k8s.io/v1
//! ```

#![forbid(unsafe_code)]

use clap::Parser;
use foo_controller::{CONTROLLER_NAME, FooControllerOptions};
use manager::{ControllerRunnable, Manager, ManagerArgs};

/// The Foo controller: keeps a Deployment per Foo (samplecontroller.k8s.io/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version, about)]
struct Cli {
    #[command(flatten)]
    manager: ManagerArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    manager::main(
        CONTROLLER_NAME,
        cli.manager.clone(),
        async |mgr: &mut Manager| {
            // Served only with --webhook-bind-address (deploy/ sets it).
            foo_controller::webhook::register(mgr.webhook_server())?;
            // --namespace, the loop's flags and, with --shard-group, the shard.
            let options = mgr.controller_options();
            let workers = options.workers;
            let options = FooControllerOptions {
                // Only this controller reads the process's Deployment informer.
                trim_deployment_cache: true,
                ..options.into()
            };
            let foos = foo_controller::new_controller(
                mgr.client().clone(),
                mgr.factory(),
                mgr.recorder(),
                options,
            );
            mgr.add(ControllerRunnable::new(foos, workers))?;
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use manager::EventsApi;

    #[test]
    fn events_api_flag() {
        let cli = Cli::try_parse_from(["sample-controller"]).unwrap();
        assert_eq!(cli.manager.events_api, EventsApi::EventsV1);
        let cli = Cli::try_parse_from(["sample-controller", "--events-api", "core/v1"]).unwrap();
        assert_eq!(cli.manager.events_api, EventsApi::CoreV1);
        let cli =
            Cli::try_parse_from(["sample-controller", "--events-api", "events.k8s.io/v1"]).unwrap();
        assert_eq!(cli.manager.events_api, EventsApi::EventsV1);
        assert!(Cli::try_parse_from(["sample-controller", "--events-api", "v2"]).is_err());
    }

    #[test]
    fn shard_flags() {
        let cli = Cli::try_parse_from(["sample-controller"]).unwrap();
        assert_eq!(cli.manager.sharding.shard_group, None);
        let cli = Cli::try_parse_from([
            "sample-controller",
            "--shard-group=foos",
            "--shard-lease-duration=6s",
            "--shard-renew-deadline=4s",
            "--shard-retry-period=1s",
            "--leader-elect-lease-duration=20s",
        ])
        .unwrap();
        let config = cli.manager.sharding.config("me").unwrap();
        assert_eq!(config.group, "foos");
        assert_eq!(config.lease_duration, std::time::Duration::from_secs(6));
        assert_eq!(config.renew_deadline, std::time::Duration::from_secs(4));
        assert_eq!(config.retry_period, std::time::Duration::from_secs(1));
        assert_eq!(
            cli.manager.leader_election.lease_duration,
            std::time::Duration::from_secs(20)
        );
    }
}
