//! `sample-controller`: the Foo controller binary, kubernetes/sample-controller's
//! `main.go`. It only wires flags to crates; the controller is `crates/foo-controller`.
//!
//! ```text
//! sample-controller --kubeconfig ~/.kube/config --workers 2
//! ```

use std::time::Duration;

use anyhow::Context;
use cache::SharedInformerFactory;
use clap::Parser;
use controller::{ClientArgs, RunArgs};
use foo_controller::{CONTROLLER_NAME, FooController};
use record::{BroadcasterOptions, EventBroadcaster};
use tracing::info;

/// How long shutdown waits for queued Events to be written.
const EVENT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The Foo controller: keeps a Deployment per Foo (samplecontroller.k8s.io/v1alpha1).
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version, about)]
struct Cli {
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    run: RunArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    controller::init_logging(cli.run.log_format).map_err(|e| anyhow::anyhow!(e))?;

    // First SIGTERM/SIGINT: graceful shutdown; second: exit at once.
    let shutdown = controller::setup_signal_handler();

    let client = cli
        .client
        .client()
        .await
        .context("building the Kubernetes client")?;
    let factory = SharedInformerFactory::new(client.clone(), cli.run.resync_period);

    // Events: a broadcaster writing core/v1 Events, recorded as "sample-controller".
    let events = EventBroadcaster::new(BroadcasterOptions::default());
    events
        .start_recording_to_sink(client.clone())
        .context("starting the event broadcaster")?;
    let recorder = events.new_recorder(CONTROLLER_NAME, hostname());

    let foos =
        FooController::for_namespace(client, &factory, cli.run.namespace.as_deref(), recorder);
    factory.start(&shutdown);
    info!(workers = cli.run.workers, "starting the Foo controller");
    let result = foos.run(cli.run.workers.into(), shutdown).await;

    events.shutdown(EVENT_FLUSH_TIMEOUT).await;
    result.context("running the Foo controller")?;
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
