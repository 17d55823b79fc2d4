//! `{{project_name}}`: the operator binary, kubebuilder's `cmd/main.go`. It only wires
//! flags to the manager and registers each controller and webhook; `kcr create` adds
//! their lines above the `+kcr:scaffold` markers (keep the markers).
//!
//! ```text
//! {{project_name}} --kubeconfig ~/.kube/config --workers 2 --leader-elect
//! ```

use clap::Parser;
use manager::{Manager, ManagerArgs};

/// The {{project_name}} operator.
#[derive(Debug, Parser)]
#[command(name = "{{project_name}}", version, about)]
struct Cli {
    /// The manager's flags: API client, workers and namespace, leader election, secure
    /// metrics and health probes, Events, webhook server, shard group, wire format.
    #[command(flatten)]
    manager: ManagerArgs,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    manager::main("{{project_name}}", cli.manager, async |mgr: &mut Manager| {
        // Each controller: its informers, work queue and workers, run by the manager.
        // +kcr:scaffold:controllers
        // The admission webhooks, served with --webhook-bind-address (deploy/ sets it).
        {{crate_name}}::webhook::register(mgr.webhook_server())?;
        Ok::<(), anyhow::Error>(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_the_managers() {
        let cli = Cli::try_parse_from(["{{project_name}}", "--namespace", "demo", "--workers", "4"])
            .unwrap();
        assert_eq!(cli.manager.run.namespace.as_deref(), Some("demo"));
        assert_eq!(cli.manager.run.workers, 4);
    }
}
