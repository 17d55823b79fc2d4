//! Sieve for this repository's controllers (issue 46): test a controller at every point
//! where its view of the cluster can go wrong, not at random ones. A dev/test tool: no
//! library crate depends on it.
//!
//! The chaos soak (`crates/tools/chaos`) throws random faults at random times; a random
//! fault rarely lands on a given step of a given reconcile. Sieve (Xudong Sun et al.,
//! "Automatic Reliability Testing for Cluster Management Controllers", OSDI 2022,
//! <https://www.usenix.org/conference/osdi22/presentation/sun>) found 46 bugs in 10
//! production controllers by perturbing what a controller sees in three ways, each at
//! every point a learning run shows:
//!
//! - **intermediate state**: the controller crashes right after one of its writes took
//!   effect, and its successor finds the work half done (a Deployment created, the status
//!   not written yet). One plan per write the server accepted: SIGKILL after it, restart.
//! - **unobserved state**: the controller misses a state, because watch events are
//!   coalesced or a relist skips over it. One plan per watch event of an object that has
//!   a later one: withhold it, deliver only the next. Level-triggered code must not care.
//! - **stale state**: the controller talks to an API server that lags (one of several
//!   behind a load balancer, or a watch cache that has not caught up), and acts on
//!   history it had already acted on. One plan per workload step after the first:
//!   restart it and serve its lists at the resourceVersion of the end of the previous
//!   step (`resourceVersionMatch=Exact`), its writes still going to the live server.
//!
//! A run of the tool: **learn** (run a [`workload`] unperturbed through the recording
//! [`proxy`]: the [`trace`] of writes, watch events and step boundaries, and the end state,
//! the reference), **plan** (the [`plan`]s of that trace), **run** each plan from a fresh
//! namespace and compare its end state with the reference ([`diff`]) and check the
//! [`invariants`] over its trace and end state, then **report** per plan.
//!
//! # The pieces
//!
//! | piece | module |
//! |---|---|
//! | the workload format and its validation (`workloads/` has the Foo, VirtualMachine and MyWeb ones) | [`workload`] |
//! | workloads derived from a CRD's OpenAPI schema and a sample, as Acto (SOSP'23) does (`sieve derive`) | [`derive`](mod@derive) |
//! | the controller under test: presets and placeholders | [`target`] |
//! | the trace format | [`trace`] |
//! | the planner | [`plan`] |
//! | the proxy between the controller and kube-apiserver (on `crates/dev/apiproxy`): records writes and watch events, calls the crash hook after the k-th write, withholds one event, serves lists at an old resourceVersion | [`proxy`] |
//! | the runner: namespace, proxy, controller, steps, quiescence, kill and restart, end state, clean-up | [`runner`] |
//! | the end-state comparison, and what it ignores (`--ignore`, `--ignore-file`, the defaults) | [`diff`], [`ignore`] |
//! | the invariants | [`invariants`] |
//! | the controller's own complaints (a Warning Event, `Ready=False`) on a spec the API server accepted | [`complaints`] |
//! | the verdicts and the report | [`report`] |
//! | a target and a workload on a control plane: learn, plans side by side (`--jobs`), the differential oracle | [`session`] |
//! | a kcr project as a target (`kcr sieve`): its manager, a control plane, workloads derived from its samples and CRDs | [`project`] |
//!
//! `sieve test` runs it all; `hack/sieve.sh` starts a control plane and runs it on this
//! repository's three controllers (what `.ci/run` runs), and docs/reliability.md has the
//! figures, the Go sample-controller's among them.
//!
//! The tool's own test is a controller that is wrong on purpose: `sieve-broken-foo`
//! (`src/bin/sieve-broken-foo.rs`, a test fixture), a Foo controller with one classic bug
//! per `--mode` (a non-idempotent create, edge triggering, a blind write from a stale
//! cache). `hack/sieve.sh` requires each mode to be caught by the perturbation it is
//! named after (the presets `broken-foo-intermediate`, `-unobserved`, `-stale`).

#![forbid(unsafe_code)]

pub mod complaints;
pub mod derive;
pub mod diff;
pub mod ignore;
pub mod invariants;
pub mod plan;
pub mod project;
pub mod proxy;
pub mod report;
pub mod runner;
pub mod session;
pub mod target;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod testing;
