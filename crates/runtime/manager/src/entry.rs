//! The opening every controller binary shares, in one call: [`main`].
//!
//! A kubebuilder `cmd/main.go` is flags, `ctrl.SetLogger`, `ctrl.NewManager`, the
//! controllers' `SetupWithManager(mgr)`, `mgr.Start(ctrl.SetupSignalHandler())`. Here
//! the same sequence, plus what Rust adds (the heap set-up before any thread starts,
//! and the Tokio runtime), is written once, so a binary's `main.rs` is only its flags
//! and the controllers it adds:
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
//! fn main() -> Result<(), manager::ManagerError> {
//!     let cli = Cli::parse();
//!     manager::main("my-controller", cli.manager, async |mgr: &mut Manager| {
//!         // Build controllers on mgr.client(), mgr.factory(), mgr.recorder() and
//!         // mgr.add(..) each of them.
//!         Ok(())
//!     })
//! }
//! ```
//!
//! The binaries return `anyhow::Result` (their own errors, e.g. a driver that cannot
//! start, next to the manager's); [`main`] returns whatever error type the set-up
//! closure does, as long as a [`ManagerError`] converts into it.

use tracing::info;

use crate::heap::grow_heap_in_large_steps;
use crate::logging::init_logging;
use crate::manager::{Manager, ManagerArgs, ManagerError};
use crate::signals::setup_signal_handler;

/// Runs a controller binary named `name` with the flags `args`:
///
/// 1. makes the heap grow in large steps ([`crate::heap`]), before any thread exists;
/// 2. builds the Tokio runtime (`--runtime-threads` worker threads, one by default:
///    see [`RunArgs::runtime_threads`](crate::RunArgs::runtime_threads)) and, on it,
/// 3. sets up logging (`--log-format`, `RUST_LOG`) and the SIGTERM/SIGINT handler
///    (the first signal shuts down gracefully, a second exits at once);
/// 4. builds the [`Manager`] ([`Manager::new`]) and hands it to `setup`, which builds
///    the controllers and [`add`](Manager::add)s them (and registers webhooks);
/// 5. [`run`](Manager::run)s the manager until the first signal, and logs "stopped".
///
/// Returns the first error: the manager's (converted into `E`) or `setup`'s.
pub fn main<E>(
    name: &str,
    args: ManagerArgs,
    setup: impl AsyncFnOnce(&mut Manager) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<ManagerError>,
{
    // Before the runtime's threads allocate: their heaps then grow in large steps.
    grow_heap_in_large_steps();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if args.run.runtime_threads > 0 {
        builder.worker_threads(args.run.runtime_threads);
    }
    let runtime = builder
        .enable_all()
        .build()
        .map_err(ManagerError::Runtime)?;
    runtime.block_on(async {
        init_logging(args.run.log_format).map_err(ManagerError::from)?;
        // First SIGTERM/SIGINT: graceful shutdown; second: exit at once.
        let shutdown = setup_signal_handler();
        let mut manager = Manager::new(name, args).await?;
        setup(&mut manager).await?;
        manager.run(shutdown).await?;
        info!("stopped");
        Ok(())
    })
}
