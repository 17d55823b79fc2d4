//! What every controller binary shares around its controllers: controller-runtime's
//! `pkg/manager`, or the body of kube-controller-manager's `Run`.
//!
//! A controller (the `controller` crate's sync loop plus your `SyncHandler`) only
//! needs a queue and some informers. A *process* that runs controllers needs more: an
//! API client built from flags and throttled, logs, graceful shutdown on SIGTERM, an
//! Event recorder, `/metrics`, `/healthz` and `/readyz`, the admission webhook server,
//! and leader election so that only one replica writes. That is this crate; the
//! binaries under `cmd/` are little more than `Manager::new(..)` and `Manager::run(..)`.
//!
//! # Why "manager"
//!
//! controller-runtime calls this part the manager (`ctrl.NewManager(cfg, opts)`,
//! `mgr.Start(ctx)`), and a kubebuilder `cmd/main.go` is built around it; Go readers
//! recognise it under that name. The sync loop stays in the `controller` crate, which
//! depends only on the `workqueue` and `cache` crates and Kubernetes types, so it can be
//! read, tested and reused without anything a binary needs.
//!
//! # Modules
//!
//! - [`manager`]: [`Manager`] and [`ManagerArgs`], every flag a binary shares, and the
//!   run: servers, informers, leader election, drain, Event flush.
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
//! ```no_run
//! use clap::Parser;
//! use manager::{Manager, ManagerArgs};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     manager: ManagerArgs,
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let cli = Cli::parse();
//! manager::init_logging(cli.manager.run.log_format)?;
//! let shutdown = manager::setup_signal_handler();
//! let manager = Manager::new("my-controller", cli.manager.clone()).await?;
//! // Build controllers on manager.client(), manager.factory(), manager.recorder() ...
//! manager
//!     .run(shutdown, |stop| async move {
//!         // ... and run them until `stop` fires: controller.run(workers, stop).await
//!         stop.cancelled().await;
//!         Ok(())
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```

// `unsafe` only where an item allows it and says why: glibc's `mallopt` (heap.rs).
#![deny(unsafe_code)]

pub mod client;
pub mod events;
pub mod heap;
pub mod logging;
pub mod manager;
pub mod options;
pub mod signals;
pub mod throttle;

pub use events::EventsApi;
pub use logging::{LogFormat, init_logging};
pub use manager::{Manager, ManagerArgs, ManagerError};
pub use options::{ClientArgs, ClientConfigError, RunArgs};
pub use signals::setup_signal_handler;
pub use throttle::{ThrottleLayer, ThrottleStats};
