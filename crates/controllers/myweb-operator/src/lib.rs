//! The Operator101 tutorial's MyWeb operator, built with the `builder` crate: a MyWeb
//! (`operator.k8s-summit.org/v1`, see the `apis` crate) is a web page served by nginx,
//! and this operator keeps three objects in line with it, each named after the MyWeb
//! and controlled by it:
//!
//! - a ConfigMap with `index.html` = `spec.pageContentHtml`;
//! - a Deployment running `spec.image` with that ConfigMap mounted at nginx's html
//!   root, and the page's checksum in its pod template (a new page rolls the pods);
//! - a Service of type NodePort on `spec.nodePortNumber`, selecting those pods.
//!
//! | kubebuilder (Go) | here |
//! |---|---|
//! | `SetupWithManager`: `For(&MyWeb{}).Owns(...).Complete(r)` | [`setup`] on `mgr.controller_managed_by(..)`, or [`new_controller`] without a manager ([`controller`](mod@controller)) |
//! | `Reconcile(ctx, req)` | [`reconcile`] ([`MyWebReconciler`]) |
//! | `configMapForMyWeb`, `deploymentForMyWeb`, `serviceForMyWeb` | [`objects`] |
//! | status conditions (`meta.SetStatusCondition`) | [`status`] |
//! | `cmd/main.go` | `cmd/myweb-operator` |
//!
//! Read [`reconcile`] first, then put crates/controllers/foo-controller next to it: the Foo
//! controller wires its informers and handlers by hand and updates with
//! read-modify-write; this one declares its watches and applies.

#![forbid(unsafe_code)]

pub mod controller;
pub mod error;
pub mod objects;
pub mod reconcile;
pub mod status;
pub mod webhook;

pub use controller::{MyWebController, MyWebControllerOptions, new_controller, setup};
pub use error::{Error, Result};
pub use reconcile::{Listers, MyWebReconciler};

/// The controller's name: in logs, as the work queue's metrics name, as the Event
/// source component and as the leader election Lease's name.
pub const CONTROLLER_NAME: &str = "myweb-operator";
/// The field manager of every write (server-side apply, creates, status).
pub const FIELD_MANAGER: &str = "myweb-operator";
/// Warning Event reason (and `Ready=False` reason): an object of the MyWeb's name
/// exists and is not controlled by it (sample-controller's `ErrResourceExists`).
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Warning Event reason (and `Ready=False` reason): the API server refused a write, e.g.
/// a node port another Service holds.
pub const ERR_APPLY_FAILED: &str = "ApplyFailed";
/// Normal Event reason when the page becomes served.
pub const REASON_READY: &str = "Ready";
