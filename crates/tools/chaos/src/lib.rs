//! The chaos soak (issue 18): the controllers must stay correct while faults overlap
//! under load. A dev/test tool: no library crate depends on it.
//!
//! `hack/chaos.sh` starts a fresh control plane and runs the `chaos` binary, which:
//!
//! 1. starts a fault-injecting HTTPS [`proxy`] in front of kube-apiserver and
//!    [`processes`]: two or three replicas of `sample-controller`, `vm-controller` (the
//!    shared [`FileDriver`](vm_driver::FileDriver)) and `myweb-operator`, with leader
//!    election, talking to the API server only through the proxy;
//! 2. creates the [`load`] (Foos, VirtualMachines, MyWebs) and waits for it to converge;
//! 3. runs writers (creates, updates, deletes, recreates) and the [`nemesis`] (a seeded
//!    schedule of overlapping faults) together, while [`observe`] watches owned objects,
//!    Nodes, control-plane processes, leaders and memory;
//! 4. after the last fault, waits for convergence ([`check`]), reads the logs
//!    ([`logs`]), stops every replica with SIGTERM, and writes the [`report`].
//!
//! docs/reliability.md has the faults, the invariants, figures and how to replay a seed.

#![forbid(unsafe_code)]

pub mod check;
pub mod cluster;
pub mod error;
pub mod load;
pub mod logs;
pub mod nemesis;
pub mod net;
pub mod observe;
pub mod processes;
pub mod proxy;
pub mod recovery;
pub mod report;
pub mod soak;

pub use error::ChaosError;
pub use soak::{SoakArgs, run};
