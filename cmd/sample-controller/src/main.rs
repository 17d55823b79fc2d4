//! `sample-controller`: the Foo controller binary, kubernetes/sample-controller's
//! `main.go`. It only wires flags to crates: the controller is `crates/controllers/foo-controller`,
//! everything around it (client, informers, Events, metrics, health, leader election,
//! signals) is `manager::Manager`.
//!
//! ```text
//! sample-controller --kubeconfig ~/.kube/config --workers 2 --leader-elect
//! sample-controller --events-api core/v1   # core/v1 Events instead of events.k8s.io/v1
//! ```

#![forbid(unsafe_code)]

use anyhow::Context;
use clap::Parser;
use foo_controller::{CONTROLLER_NAME, FooControllerOptions};
use manager::{Manager, ManagerArgs};

/// The Foo controller: keeps a Deployment per Foo (samplecontroller.k8s.io/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version, about)]
struct Cli {
    #[command(flatten)]
    manager: ManagerArgs,
}

fn main() -> anyhow::Result<()> {
    // Before the runtime's threads allocate: their heaps then grow in large steps.
    manager::heap::grow_heap_in_large_steps();
    tokio::runtime::Runtime::new()?.block_on(run(Cli::parse()))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    manager::init_logging(cli.manager.run.log_format).map_err(|e| anyhow::anyhow!(e))?;
    // First SIGTERM/SIGINT: graceful shutdown; second: exit at once.
    let shutdown = manager::setup_signal_handler();

    let mut manager = Manager::new(CONTROLLER_NAME, cli.manager.clone())
        .await
        .context("starting sample-controller")?;
    // Served only with --webhook-bind-address (deploy/ sets it).
    foo_controller::webhook::register(manager.webhook_server())?;
    let options = FooControllerOptions {
        namespace: cli.manager.run.namespace.clone(),
        loop_options: cli.manager.run.loop_options(),
        // Only this controller reads the process's Deployment informer.
        trim_deployment_cache: true,
    };
    let foos = foo_controller::new_controller(
        manager.client().clone(),
        manager.factory(),
        manager.recorder(),
        options,
    );
    let synced = foos.clone();
    manager
        .health()
        .add_readyz_check("informers-synced", move || synced.has_synced())?;

    let workers = cli.manager.run.workers.into();
    manager
        .run(
            shutdown,
            |stop| async move { foos.run(workers, stop).await },
        )
        .await
        .context("sample-controller")?;
    tracing::info!("stopped");
    Ok(())
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
}
