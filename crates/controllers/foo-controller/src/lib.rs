//! kubernetes/sample-controller in Rust: a Foo custom resource whose controller owns a
//! Deployment.
//!
//! A Foo (`samplecontroller.k8s.io/v1alpha1`, see the `apis` crate) says "run
//! `spec.replicas` copies of nginx in a Deployment named `spec.deploymentName`". This
//! crate is the controller that makes it so, built from the workspace's client-go
//! parts exactly the way sample-controller is built from client-go's:
//!
//! | sample-controller (Go) | here |
//! |---|---|
//! | `NewController`: informers, handlers, queue | [`new_controller`] ([`controller`](mod@controller)) |
//! | `enqueueFoo`, `handleObject` | [`handlers`] |
//! | `Run`, `runWorker`, `processNextWorkItem` | the `controller` crate's `Controller` |
//! | `syncHandler` | [`sync`] ([`FooSyncer`]) |
//! | `newDeployment` | [`deployment`] |
//! | `main.go`: flags, clients, signals | `cmd/sample-controller` |
//!
//! Read [`sync`] first: it is the part that is specific to Foos, narrated step by step.
//! Where it deliberately differs from the Go original, the comment starts with "Better:".

#![forbid(unsafe_code)]

pub mod controller;
pub mod deployment;
pub mod error;
pub mod handlers;
pub mod sync;
pub mod webhook;

pub use controller::{CONTROLLER_NAME, FooController, FooControllerOptions, new_controller};
pub use deployment::{NGINX_IMAGE, new_deployment, trim_deployment};
pub use error::{Error, Result};
pub use handlers::{DeploymentHandler, FooHandler};
pub use sync::{
    ERR_DEPLOYMENT_NAME_MISSING, ERR_INVALID_DEPLOYMENT, ERR_RESOURCE_EXISTS, FIELD_MANAGER,
    FooSyncer, MESSAGE_RESOURCE_SYNCED, SUCCESS_SYNCED,
};
