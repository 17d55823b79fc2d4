//! `myweb-operator`: the MyWeb operator binary, the Operator101 tutorial's
//! `cmd/main.go`. It only wires flags to crates: the operator is
//! `crates/controllers/myweb-operator` (built with `crates/runtime/builder`), everything around it
//! (client, informers, Events, metrics, health, leader election, signals) is
//! `manager::Manager`, opened by `manager::main`.
//!
//! ```text
//! myweb-operator --kubeconfig ~/.kube/config --workers 2 --leader-elect
//! ```

#![forbid(unsafe_code)]

use clap::Parser;
use manager::{Manager, ManagerArgs};
use myweb_operator::CONTROLLER_NAME;

/// The MyWeb operator: serves each MyWeb's page (operator.k8s-summit.org/v1) with a
/// ConfigMap, an nginx Deployment and a NodePort Service.
#[derive(Debug, Parser)]
#[command(name = "myweb-operator", version, about)]
struct Cli {
    #[command(flatten)]
    manager: ManagerArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let args = &cli.manager;
    manager::main(CONTROLLER_NAME, args.clone(), async |mgr: &mut Manager| {
        // Served only with --webhook-bind-address (deploy/ sets it). Node ports are
        // cluster-wide, so the webhook reads every MyWeb, whatever --namespace says;
        // that informer is started only when the webhook is.
        if args.webhook.webhook_bind_address != metrics::BindAddress::Disabled {
            let all_webs = mgr.factory().informer_for::<apis::operator::v1::MyWeb>();
            myweb_operator::webhook::register(mgr.webhook_server(), all_webs)?;
        }
        // ctrl.NewControllerManagedBy(mgr): --namespace, --workers, the loop's flags
        // and the shard come with the builder; the operator adds its watches.
        let webs =
            myweb_operator::setup(mgr.controller_managed_by(CONTROLLER_NAME), mgr.recorder());
        // A builder's controller is a manager::Runnable as it is.
        mgr.add(webs)?;
        Ok(())
    })
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
