//! Wiring: informer -> handler -> queue -> workers -> [`VirtualMachineSyncer`].
//! controller101's `New`; its `Run` is the generic loop's, [`Controller::run`].

use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::VirtualMachine;
use cache::{InformerOptions, SharedInformerFactory};
use controller::{Controller, ControllerOptions, LoopOptions, registration_synced};
use kube::Api;
use record::EventRecorder;
use vm_driver::Driver;

use crate::handlers::VirtualMachineHandler;
use crate::sync::{DEFAULT_USAGE_PERIOD, VirtualMachineSyncer};

/// The controller's name: in logs, as the work queue's metrics name, and as the Event
/// source component.
pub const CONTROLLER_NAME: &str = "vm-controller";

/// How the VirtualMachine controller is set up.
#[derive(Debug, Clone)]
pub struct VirtualMachineControllerOptions {
    /// How often an `Active` VirtualMachine's usage is refreshed
    /// ([`DEFAULT_USAGE_PERIOD`]).
    pub usage_period: Duration,
    /// Watch only this namespace (`None`: every namespace).
    pub namespace: Option<String>,
    /// The loop's staleness guard, queue order and backoff (every fix on by
    /// default; the binary's flags choose).
    pub loop_options: LoopOptions,
    /// This replica's shard membership (`--shard-group`): the informer caches, and
    /// the loop syncs, only the VirtualMachines whose UID hashes into its ranges.
    /// Each replica's driver then holds the servers of its own slice, so use it with
    /// a driver whose servers every replica reaches.
    pub shard: Option<sharding::Shard>,
}

impl Default for VirtualMachineControllerOptions {
    fn default() -> Self {
        Self {
            usage_period: DEFAULT_USAGE_PERIOD,
            namespace: None,
            loop_options: LoopOptions::default(),
            shard: None,
        }
    }
}

/// The process's settings ([`ControllerOptions`], a manager's
/// `mgr.controller_options()`) in one line, with the default
/// [`usage_period`](VirtualMachineControllerOptions::usage_period) (set it after, as
/// `VirtualMachineControllerOptions { usage_period, ..options.into() }`). `workers` is
/// not here: it is how the controller is run ([`Controller::run`]`(workers, cancel)`,
/// `manager::ControllerRunnable::new`).
impl From<ControllerOptions<sharding::Shard>> for VirtualMachineControllerOptions {
    fn from(options: ControllerOptions<sharding::Shard>) -> Self {
        Self {
            namespace: options.namespace,
            loop_options: options.loop_options,
            shard: options.shard,
            ..Self::default()
        }
    }
}

/// The VirtualMachine controller, assembled: the workspace's loop running a
/// [`VirtualMachineSyncer`]. Run it with [`Controller::run`]`(workers, cancel)`;
/// [`Controller::has_synced`] is its readiness.
///
/// One controller must own a driver's servers: run one replica, or several with
/// leader election (`--leader-elect`).
pub type VirtualMachineController = Controller<VirtualMachineSyncer>;

/// Builds the VirtualMachine controller on `factory`'s VirtualMachine informer (shared
/// with any other controller in the process), writing through `client`, reporting
/// through `recorder` and creating servers with `driver`: controller101's `New`.
/// Start the factory (`factory.start(&cancel)`) after this.
pub fn new_controller(
    client: kube::Client,
    factory: &SharedInformerFactory,
    recorder: EventRecorder,
    driver: Arc<dyn Driver>,
    options: VirtualMachineControllerOptions,
) -> VirtualMachineController {
    let api: Api<VirtualMachine> = match &options.namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    };
    // Sharded (the factory has shard ranges): only the VirtualMachines whose UID
    // hashes into this replica's ranges.
    let informer = factory.informer_for_api(
        api,
        InformerOptions {
            shard: factory.shard_ranges().map(|_| cache::shard::ShardBy::UID),
            ..InformerOptions::default()
        },
    );

    // A named queue, so its metrics carry the controller's name; in a shard group a
    // failed key is retried within a bounded time (see `LoopOptions::in_shard_group`).
    let queue = options
        .loop_options
        .in_shard_group(options.shard.is_some())
        .new_queue(CONTROLLER_NAME);
    let registration = informer.add_event_handler(VirtualMachineHandler::new(queue.clone()));
    // The staleness guard: the sync writes finalizers and statuses of the
    // VirtualMachines themselves.
    let freshness = options.loop_options.freshness();
    if let Some(freshness) = &freshness {
        freshness.track(&informer);
    }

    let syncer = VirtualMachineSyncer::new(client, informer.lister(), driver, recorder)
        .with_usage_period(options.usage_period)
        .with_freshness(freshness.clone());
    let gate = options
        .shard
        .as_ref()
        .map(|shard| shard.gate(&informer, queue.clone()));
    Controller::new(CONTROLLER_NAME, queue, syncer)
        // Synced = listed AND our handler has processed the list: the first sync sees
        // every VirtualMachine that existed at start.
        .with_synced(vec![registration_synced(registration)])
        .with_freshness(freshness)
        .with_reconcile_timeout(options.loop_options.reconcile_timeout)
        .with_gate(gate)
}
