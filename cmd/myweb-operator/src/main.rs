//! `myweb-operator`: the MyWeb operator binary, the Operator101 tutorial's
//! `cmd/main.go`. It only wires flags to crates: the operator is
//! `crates/controllers/myweb-operator` (built with `crates/runtime/builder`), everything around it
//! (client, informers, Events, metrics, health, leader election, signals) is
//! `manager::Manager`.
//!
//! ```text
//! myweb-operator --kubeconfig ~/.kube/config --workers 2 --leader-elect
//! ```

#![forbid(unsafe_code)]

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use manager::{Manager, ManagerArgs};
use myweb_operator::{CONTROLLER_NAME, MyWebControllerOptions};

/// The MyWeb operator: serves each MyWeb's page (operator.k8s-summit.org/v1) with a
/// ConfigMap, an nginx Deployment and a NodePort Service.
#[derive(Debug, Parser)]
#[command(name = "myweb-operator", version, about)]
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
        .context("starting myweb-operator")?;
    // Served only with --webhook-bind-address (deploy/ sets it). Node ports are
    // cluster-wide, so the webhook reads every MyWeb, whatever --namespace says; that
    // informer is started only when the webhook is.
    if cli.manager.webhook.webhook_bind_address != metrics::BindAddress::Disabled {
        let all_webs = manager
            .factory()
            .informer_for::<apis::operator::v1::MyWeb>();
        myweb_operator::webhook::register(manager.webhook_server(), all_webs)?;
    }
    let options = MyWebControllerOptions {
        namespace: cli.manager.run.namespace.clone(),
        workers: cli.manager.run.workers.into(),
        loop_options: cli.manager.run.loop_options(),
    };
    let webs = Arc::new(myweb_operator::new_controller(
        manager.client().clone(),
        manager.factory(),
        manager.recorder(),
        options,
    ));
    let synced = Arc::clone(&webs);
    manager
        .health()
        .add_readyz_check("informers-synced", move || synced.has_synced())?;

    manager
        .run(shutdown, |stop| async move { webs.run(stop).await })
        .await
        .context("myweb-operator")?;
    tracing::info!("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_the_managers() {
        let cli = Cli::try_parse_from(["myweb-operator"]).unwrap();
        assert_eq!(cli.manager.run.namespace, None);
        assert_eq!(cli.manager.run.workers, 2);
        assert!(!cli.manager.leader_election.leader_elect);
        assert_eq!(cli.manager.events_api, manager::EventsApi::EventsV1);
        let cli = Cli::try_parse_from([
            "myweb-operator",
            "--events-api",
            "core/v1",
            "--namespace",
            "web",
            "--workers",
            "4",
            "--leader-elect",
        ])
        .unwrap();
        assert_eq!(cli.manager.run.namespace.as_deref(), Some("web"));
        assert_eq!(cli.manager.run.workers, 4);
        assert!(cli.manager.leader_election.leader_elect);
        assert_eq!(cli.manager.events_api, manager::EventsApi::CoreV1);
    }
}
