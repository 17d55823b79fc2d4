//! What the [`Manager`] hands the controllers it runs: controller-runtime's
//! `ctrl.NewControllerManagedBy(mgr)`.
//!
//! Four settings of every controller come from the process's flags, never from the
//! controller: the namespace (`--namespace`), the workers (`--workers`), the loop's
//! options and the staleness guard they make (`--freshness-timeout`, `--fifo-queue`,
//! `--client-go-backoff`), and the shard (`--shard-group`). Passed one by one, each
//! binary repeated them for each controller; here the manager hands them over at once,
//! to a builder ([`Manager::controller_managed_by`]) or, for a hand-wired controller, as
//! one value its options convert from ([`Manager::controller_options`]).

use builder::{Builder, NoFor};
use controller::ControllerOptions;
use sharding::Shard;

use crate::Manager;

impl Manager {
    /// The settings every controller of this process takes from its flags
    /// (`--namespace`, `--workers`, [`RunArgs::loop_options`](crate::RunArgs::loop_options))
    /// and from the manager (its [`shard`](Self::shard), with `--shard-group`), as one
    /// value: a hand-wired controller's options convert from it, e.g.
    /// `FooControllerOptions::from(mgr.controller_options())`, and a builder takes it
    /// with [`Builder::with_options`].
    pub fn controller_options(&self) -> ControllerOptions<Shard> {
        let run = &self.args().run;
        ControllerOptions {
            namespace: run.namespace.clone(),
            workers: run.workers.into(),
            loop_options: run.loop_options(),
            shard: self.shard().cloned(),
        }
    }

    /// A [`Builder`] for the controller `name` on this manager's client and shared
    /// informer factory, already set with [`controller_options`](Self::controller_options):
    /// the namespace, the workers, the loop options, the staleness guard they make
    /// (for the reconciler: [`Builder::freshness_guard`]) and the shard.
    /// controller-runtime's `ctrl.NewControllerManagedBy(mgr).Named(name)`: what is
    /// left to write is the controller's own part, its watches and its reconciler.
    ///
    /// ```no_run
    /// use builder::{Action, Reconciler, Request};
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// use manager::{Manager, ManagerArgs};
    ///
    /// struct Reconcile;
    /// impl Reconciler for Reconcile {
    ///     type Error = kube::Error;
    ///     async fn reconcile(&self, _: &Request) -> Result<Action, kube::Error> {
    ///         Ok(Action::Done)
    ///     }
    /// }
    ///
    /// # fn run(args: ManagerArgs) -> Result<(), manager::ManagerError> {
    /// manager::main("deployments", args, async |mgr: &mut Manager| {
    ///     // ctrl.NewControllerManagedBy(mgr).For(&Deployment{}).Owns(&ReplicaSet{}).Complete(r)
    ///     let deployments = mgr
    ///         .controller_managed_by("deployments")
    ///         .for_::<Deployment>()
    ///         .owns::<ReplicaSet>()
    ///         .complete(Reconcile);
    ///     mgr.add(deployments)
    /// })
    /// # }
    /// ```
    pub fn controller_managed_by(&self, name: impl Into<String>) -> Builder<NoFor> {
        Builder::new(name, self.client().clone(), self.factory())
            .with_options(self.controller_options())
    }
}
