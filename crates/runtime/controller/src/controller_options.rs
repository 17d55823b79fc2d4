//! What every controller of a process takes from the process, as one value:
//! [`ControllerOptions`].
//!
//! Each controller here has its own options struct (`FooControllerOptions`,
//! `VirtualMachineControllerOptions`, ...), but four of their fields are never the
//! controller's choice: which namespace the process watches (`--namespace`), how many
//! workers it runs (`--workers`), how its loops treat staleness, order and backoff
//! (`--freshness-timeout`, `--fifo-queue`, `--client-go-backoff`) and which shard of
//! a group it is (`--shard-group`). Passed one by one, every binary repeats the same
//! four lines per controller, and a fifth setting would mean editing all of them.
//! controller-runtime hands them over once (`ctrl.NewControllerManagedBy(mgr)` reads
//! them from the manager); here `manager::Manager::controller_options` returns them
//! as this struct, each controller's options convert from it (`From`), and the
//! builder takes it whole (`builder::Builder::with_options`).
//!
//! It lives in this crate, below the manager, so that controller crates can accept it
//! without depending on the manager (whose flags, servers and leader election a
//! controller's tests do not need).

use crate::LoopOptions;

/// The settings a process gives each of its controllers (see the [module
/// docs](self)).
///
/// `S` is the shard membership, `sharding::Shard` in every controller here: a type
/// parameter only because the `sharding` crate depends on this one, so this crate
/// cannot name its type.
///
/// ```
/// use controller::{ControllerOptions, LoopOptions};
///
/// // What a manager without flags hands over: every namespace, one worker, every
/// // fix of the loop on, no shard.
/// let options = ControllerOptions::<()>::default();
/// assert_eq!(options.namespace, None);
/// assert_eq!(options.workers, 1);
/// assert_eq!(options.loop_options, LoopOptions::default());
/// assert!(options.shard.is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ControllerOptions<S> {
    /// Watch only this namespace (`None`: every namespace): objects elsewhere are
    /// invisible to the controller.
    pub namespace: Option<String>,
    /// How many keys are synced at once (client-go's "threadiness",
    /// controller-runtime's `MaxConcurrentReconciles`), at least 1.
    pub workers: usize,
    /// The loop's staleness guard, queue order and backoff; its
    /// [`freshness`](LoopOptions::freshness) is the guard the controller's loop and
    /// its sync both hold.
    pub loop_options: LoopOptions,
    /// This replica's shard membership, when the process runs as one of N active
    /// replicas (`--shard-group`): the controller caches and syncs only its slice.
    pub shard: Option<S>,
}

impl<S> Default for ControllerOptions<S> {
    /// Every namespace, one worker, [`LoopOptions::default`], no shard: what a
    /// controller built outside a manager (a test, an example) gets.
    fn default() -> Self {
        Self {
            namespace: None,
            workers: 1,
            loop_options: LoopOptions::default(),
            shard: None,
        }
    }
}
