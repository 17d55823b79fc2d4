//! `{{project_name}}`: the manager binary, kubebuilder's `cmd/main.go`. It only wires flags to
//! the library: each controller's `setup` and each kind's webhooks.
//!
//! ```text
//! cargo run -- --kubeconfig ~/.kube/config                # every namespace
//! cargo run -- --kubeconfig ~/.kube/config --namespace default --leader-elect
//! cargo run -- --help                                      # every flag
//! ```
//!
//! Install the CRDs first: `kubectl apply -k deploy/crd` (after `cargo run --bin manifests`).

#![forbid(unsafe_code)]

use clap::Parser;
use manager::{Manager, ManagerArgs};

/// The manager's name: its Events' source, its leader election Lease, its logs.
const NAME: &str = "{{project_name}}";

/// The {{project_name}} operator: runs the controllers (and, with --webhook-bind-address,
/// the admission webhooks) of the `{{domain}}` API groups.
#[derive(Debug, Parser)]
#[command(name = "{{project_name}}", version, about)]
struct Cli {
    /// The flags every manager has: --kubeconfig, --namespace, --workers,
    /// --leader-elect, --metrics-bind-address, --webhook-bind-address, ...
    #[command(flatten)]
    manager: ManagerArgs,
    // TODO(user): your own flags, e.g.
    // #[arg(long, env = "MAX_GUESTS", default_value_t = 10)]
    // max_guests: u32,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Logging, signals and the Tokio runtime, then `Manager::new`, this set-up, and
    // `Manager::run` until SIGTERM.
    manager::main(NAME, cli.manager, async |mgr: &mut Manager| {
        // +kcr:scaffold:controllers

        // The webhooks need a serving certificate, so they are served only when
        // --webhook-bind-address is set (the Deployment in a cluster sets it).
        if mgr
            .args()
            .webhook
            .webhook_bind_address
            .host_port()
            .is_some()
        {
            // +kcr:scaffold:webhooks
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_are_the_managers() {
        let cli = Cli::try_parse_from(["{{project_name}}", "--namespace", "default"]).unwrap();
        assert_eq!(cli.manager.run.namespace.as_deref(), Some("default"));
        assert!(
            cli.manager
                .webhook
                .webhook_bind_address
                .host_port()
                .is_none()
        );
    }
}
