//! The VirtualMachine controller: [controller101](https://github.com/cloud-native-taiwan/controller101)
//! in Rust, with its mistakes fixed.
//!
//! A VirtualMachine (`cloudnative.tw/v1alpha1`, see the `apis` crate) asks for a server
//! with `spec.resource.cpu` CPUs, `memory` and a `rootDisk`. This controller creates
//! that server through a VM driver (the `vm-driver` crate: an in-memory fake, or real
//! QEMU processes), reports it in `.status` (phase, server id and state, CPU and
//! memory usage refreshed every `--usage-period`), and deletes it when the object is
//! deleted, using a finalizer so that no server can outlive its object.
//!
//! Controllers that own things *outside* Kubernetes are where operators most often get
//! finalizers, idempotency and restarts wrong. The rules this one follows:
//!
//! * **The finalizer before the server** ([`finalizer`]): added with a metadata patch
//!   before the driver is called, removed only after `delete_server` succeeded.
//! * **Idempotent all the way down** ([`server`], [`sync`]): the server's name is
//!   derived from the object's UID, and the driver's create of an existing name returns
//!   the existing server, so a crash between "create" and "status written" costs
//!   nothing: the next sync gets the same server back.
//! * **Status through the status subresource** ([`status`]), with the resourceVersion
//!   read (409 -> retry through the queue), and only when it changed, apart from the
//!   usage refresh.
//! * **Usage by requeue, not by resync**: an `Active` sync returns
//!   `Action::requeue_after(--usage-period).with_priority(LOW)` (behind users' changes).
//! * **Failures are reported and retried** ([`error`]): a driver failure writes
//!   `Failed` (or `Unknown`) with the reason and a Warning Event, then the key is
//!   retried with exponential backoff until the driver recovers.
//! * **Resizing is refused, visibly**: a `spec.resource` edit after creation is
//!   reported as `ResizeUnsupported` (status reason and Warning Event) and the server
//!   is left as it is; see [`server`] for why and how.
//!
//! | controller101 (Go) | here |
//! |---|---|
//! | `controller.New`: informer, handlers, queue | [`new_controller`] ([`controller`](mod@controller)) |
//! | `enqueue` on add/update | [`handlers`] |
//! | `Run`, `runWorker`, `processNextWorkItem` | the `controller` crate's `Controller` |
//! | `syncHandler` and its phase functions | [`sync`] ([`VirtualMachineSyncer`]), [`status`], [`finalizer`] |
//! | the server name (`vm.Name`) | [`server_name`] (`<name>-<uid>`) |
//! | `cmd/main.go`: flags, driver, clients | `cmd/vm-controller` |
//! | (kubebuilder) the admission and conversion webhooks | [`webhook`], [`conversion`](mod@conversion) |
//!
//! Read [`sync`] first: the lifecycle, narrated step by step. Where it deliberately
//! differs from the Go original, the comment starts with "Better:".
//!
//! # Example
//!
//! The controller in a process, with the fake driver (what `cmd/vm-controller` does
//! with `--vm-driver fake`):
//!
//! ```no_run
//! use std::sync::Arc;
//! use cache::SharedInformerFactory;
//! use record::{BroadcasterOptions, EventBroadcaster};
//! use tokio_util::sync::CancellationToken;
//! use vm_controller::{CONTROLLER_NAME, VirtualMachineControllerOptions, new_controller};
//!
//! # async fn run(client: kube::Client) -> anyhow::Result<()> {
//! let factory = SharedInformerFactory::new(client.clone(), std::time::Duration::ZERO);
//! let events = EventBroadcaster::new(BroadcasterOptions::default());
//! events.start_recording_to_sink(client.clone())?;
//! let recorder = events.new_recorder(CONTROLLER_NAME, "my-host");
//! let vms = new_controller(
//!     client,
//!     &factory,
//!     recorder,
//!     Arc::new(vm_driver::FakeDriver::new()),
//!     VirtualMachineControllerOptions::default(),
//! );
//! let cancel = CancellationToken::new();
//! factory.start(&cancel);
//! vms.run(2, cancel).await?;
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod controller;
pub mod conversion;
pub mod error;
pub mod finalizer;
pub mod handlers;
pub mod limits;
pub mod server;
pub mod status;
pub mod sync;
pub mod webhook;

pub use controller::{
    CONTROLLER_NAME, VirtualMachineController, VirtualMachineControllerOptions, new_controller,
};
pub use error::{Error, Result};
pub use finalizer::{FINALIZER, has_finalizer};
pub use handlers::VirtualMachineHandler;
pub use server::{ANNOTATION_RESOURCES, server_name, server_spec};
pub use sync::{
    Clock, DEFAULT_USAGE_PERIOD, FIELD_MANAGER, REASON_CREATE_FAILED, REASON_CREATED,
    REASON_DELETE_FAILED, REASON_DELETED, REASON_INVALID_SPEC, REASON_RESIZE_UNSUPPORTED,
    REASON_SERVER_VANISHED, REASON_STATUS_FAILED, VirtualMachineSyncer,
};
