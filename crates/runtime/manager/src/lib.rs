//! What every controller binary shares around its controllers: controller-runtime's
//! `pkg/manager`, or the body of kube-controller-manager's `Run`.
//!
//! A controller (the `controller` crate's sync loop plus your `SyncHandler`) only
//! needs a queue and some informers. A *process* that runs controllers needs more: an
//! API client built from flags and throttled, logs, graceful shutdown on SIGTERM, an
//! Event recorder, `/metrics`, `/healthz` and `/readyz`, the admission webhook server,
//! and leader election so that only one replica writes. That is this crate; a binary
//! under `cmd/` is its flags, [`main`] and a [`Manager::add`] per controller.
//!
//! # Why "manager"
//!
//! controller-runtime calls this part the manager (`ctrl.NewManager(cfg, opts)`,
//! `mgr.Start(ctx)`), and a kubebuilder `cmd/main.go` is built around it; Go readers
//! recognise it under that name. The sync loop stays in the `controller` crate, which
//! depends only on the `workqueue`, `cache` and `pipeline` crates and Kubernetes types, so it can be
//! read, tested and reused without anything a binary needs.
//!
//! # Modules
//!
//! - [`manager`]: [`Manager`] and [`ManagerArgs`], every flag a binary shares;
//!   [`Manager::add`] and [`Manager::run`]: servers, informers, leader election, drain,
//!   Event flush. [`Manager::controller_managed_by`] (controller-runtime's
//!   `ctrl.NewControllerManagedBy(mgr)`) and [`Manager::controller_options`] hand each
//!   controller the namespace, workers, loop options and shard in one go.
//! - [`runnable`]: what a manager runs, [`Runnable`] (controller-runtime's
//!   `manager.Runnable`, `NeedLeaderElection` and a readiness check in one trait), for
//!   a builder's controllers as they are and hand-wired ones through
//!   [`ControllerRunnable`].
//! - [`entry`]: [`main`], a binary's opening (heap, runtime, logs, signals, manager,
//!   run) in one call.
//! - [`options`]: [`ClientArgs`] (`--kubeconfig`, `--master`, `--kube-api-qps`, ...:
//!   client-go's `clientcmd.BuildConfigFromFlags` plus `rest.Config{QPS, Burst}`) and
//!   [`RunArgs`] (`--workers`, `--resync-period`, `--namespace`, `--log-format` and the
//!   loop's switches, [`RunArgs::loop_options`]).
//! - [`client`], [`throttle`]: the API client over HTTP/2 (as client-go's) and its
//!   client-side token bucket.
//! - [`events`]: which Events API the process writes (`--events-api`, [`EventsApi`]).
//! - [`logging`], [`signals`], [`heap`]: text or JSON logs, graceful shutdown on
//!   SIGTERM (sample-controller's `pkg/signals`), and a heap reserved in 64 MiB steps.
//!
//! # A binary
//!
//! A kubebuilder `cmd/main.go`, in Rust: the flags, then the controllers built on the
//! manager's client, informer factory and Event recorder, each added to the manager.
//! [`main`] does the rest (and returns when the process should exit):
//!
//! ```no_run
//! use clap::Parser;
//! use manager::{ControllerRunnable, Manager, ManagerArgs};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     manager: ManagerArgs,
//! }
//!
//! # struct Noop;
//! # impl controller::SyncHandler for Noop {
//! #     type Error = String;
//! #     async fn sync(&self, _: &str) -> Result<controller::Action, String> { Ok(controller::Action::Done) }
//! # }
//! # fn new_controller(mgr: &Manager) -> controller::Controller<Noop> {
//! #     let queue = mgr.controller_options().loop_options.new_queue("my-controller");
//! #     controller::Controller::new("my-controller", queue, Noop)
//! # }
//! fn main() -> Result<(), manager::ManagerError> {
//!     let cli = Cli::parse();
//!     manager::main("my-controller", cli.manager, async |mgr: &mut Manager| {
//!         // Informers from mgr.factory(), writes through mgr.client(), Events
//!         // through mgr.recorder(), namespace, loop options and shard from
//!         // mgr.controller_options(): see crates/controllers/foo-controller.
//!         let controller = new_controller(mgr);
//!         // Runs while this replica leads; /readyz/my-controller once it has synced.
//!         let workers = mgr.controller_options().workers;
//!         mgr.add(ControllerRunnable::new(controller, workers))?;
//!         Ok(())
//!     })
//! }
//! ```

// `unsafe` only where an item allows it and says why: glibc's `mallopt` (heap.rs).
#![deny(unsafe_code)]

pub mod client;
pub mod entry;
pub mod events;
mod group;
pub mod heap;
pub mod logging;
mod managed;
pub mod manager;
pub mod options;
pub mod runnable;
pub mod signals;
pub mod throttle;

pub use entry::main;
pub use events::EventsApi;
pub use logging::{LogFormat, LoggingError, init_logging};
pub use manager::{Manager, ManagerArgs, ManagerError};
pub use options::{ClientArgs, ClientConfigError, RunArgs};
pub use runnable::{ControllerRunnable, Runnable};
pub use signals::setup_signal_handler;
pub use throttle::{ThrottleLayer, ThrottleStats};
