//! Wiring: informer -> handler -> queue -> workers -> [`VirtualMachineSyncer`].
//! controller101's `New` and `Run`.

use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::VirtualMachine;
use cache::{InformerOptions, SharedInformerFactory};
use controller::{Controller, InformerSynced, LoopOptions};
use kube::Api;
use record::EventRecorder;
use tokio_util::sync::CancellationToken;
use vm_driver::Driver;
use workqueue::RateLimitingQueue;

use crate::handlers::VirtualMachineHandler;
use crate::sync::{DEFAULT_USAGE_PERIOD, VirtualMachineSyncer};

/// The controller's name: in logs, as the work queue's metrics name, and as the Event
/// source component.
pub const CONTROLLER_NAME: &str = "vm-controller";

/// How the VirtualMachine controller is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualMachineControllerOptions {
    /// How often an `Active` VirtualMachine's usage is refreshed
    /// ([`DEFAULT_USAGE_PERIOD`]).
    pub usage_period: Duration,
    /// Watch only this namespace (`None`: every namespace).
    pub namespace: Option<String>,
    /// The loop's staleness guard, queue order and backoff (every fix on by
    /// default; the binary's flags choose).
    pub loop_options: LoopOptions,
}

impl Default for VirtualMachineControllerOptions {
    fn default() -> Self {
        Self {
            usage_period: DEFAULT_USAGE_PERIOD,
            namespace: None,
            loop_options: LoopOptions::default(),
        }
    }
}

/// The VirtualMachine controller, assembled.
///
/// [`new`](Self::new) asks the factory for the VirtualMachine informer (shared with
/// any other controller in the process) and registers the handler; [`run`](Self::run)
/// waits for the handler to have seen the initial list, then runs the workers. Start
/// the factory (`factory.start(&cancel)`) after `new`.
///
/// One controller must own a driver's servers: run one replica, or (with the
/// production-operation issue) several with leader election.
pub struct VirtualMachineController {
    controller: Controller<VirtualMachineSyncer>,
    synced: Vec<InformerSynced>,
}

impl VirtualMachineController {
    /// Builds the controller on `factory`'s VirtualMachine informer, writing through
    /// `client`, creating servers with `driver` and reporting through `recorder`.
    pub fn new(
        client: kube::Client,
        factory: &SharedInformerFactory,
        recorder: EventRecorder,
        driver: Arc<dyn Driver>,
        options: VirtualMachineControllerOptions,
    ) -> Self {
        let api: Api<VirtualMachine> = match &options.namespace {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::all(client.clone()),
        };
        let informer = factory.informer_for_api(api, InformerOptions::default());

        // A named queue, so its metrics carry the controller's name.
        let queue = options.loop_options.new_queue(CONTROLLER_NAME);
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
        let mut controller = Controller::new(CONTROLLER_NAME, queue, syncer);
        if let Some(freshness) = freshness {
            controller = controller.with_freshness(freshness);
        }
        Self {
            controller,
            // Synced = listed AND our handler has processed the list: the first sync
            // sees every VirtualMachine that existed at start.
            synced: vec![controller::registration_synced(registration)],
        }
    }

    /// The work queue (for metrics and tests).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        self.controller.queue()
    }

    /// The generic loop this controller runs on.
    pub fn controller(&self) -> &Controller<VirtualMachineSyncer> {
        &self.controller
    }

    /// Whether the event handler has processed the informer's initial list (for a
    /// readiness probe).
    pub fn has_synced(&self) -> bool {
        self.synced.iter().all(|synced| synced())
    }

    /// Runs `workers` workers until `cancel` fires, then drains the queue. See
    /// [`Controller::run`].
    pub async fn run(&self, workers: usize, cancel: CancellationToken) -> controller::Result<()> {
        self.controller
            .run(workers, self.synced.clone(), cancel)
            .await
    }
}
