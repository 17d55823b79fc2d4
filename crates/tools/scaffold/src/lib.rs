//! `kcr`'s scaffolder: kubebuilder's `init`, `create api` and `create webhook`, writing
//! a project on this repository's runtime crates (the `kcr-*` packages).
//!
//! | kubebuilder | here | writes |
//! |---|---|---|
//! | `kubebuilder init --domain D --repo R` | [`init`] | Cargo workspace, `src/main.rs` on `manager::main`, the `manifests` generator, `deploy/` (kustomize), Dockerfile, README, `hack/test.sh`, PROJECT |
//! | `kubebuilder create api --group G --version V --kind K` | [`create_api`] | the types, a reconciler on the builder, its RBAC, unit and e2e tests, a sample, editor/viewer roles |
//! | `... --plugins deploy-image/v1-alpha --image I` | [`create_api`] with [`ApiOptions::image`] | a reconciler that owns a Deployment running the image |
//! | `kubebuilder create webhook --defaulting --programmatic-validation` | [`create_webhook`] | a Defaulter and a Validator, their tests, deploy/'s webhook configuration with cert-manager CA injection |
//! | `make manifests` (controller-gen) | the project's own `cargo run --bin manifests` | CRDs and the manager's ClusterRole, from the code |
//!
//! Every command checks everything before it writes anything ([`plan`]): a bad flag, a
//! kind that exists, a file the user edited each refuse the whole command with an
//! error that says what to change ([`ScaffoldError`]).

#![forbid(unsafe_code)]

mod api;
pub mod envtest;
mod error;
mod init;
pub mod names;
pub mod plan;
pub mod project;
pub mod render;
mod webhook;

pub use api::{ApiOptions, create_api};
pub use error::ScaffoldError;
pub use init::{InitOptions, RuntimeSource, init};
pub use plan::Applied;
pub use project::{Project, Resource, Runtime, Webhooks};
pub use webhook::{WebhookOptions, create_webhook};

/// The repository this `kcr` was built from, when it is still there: the default
/// `--runtime-path` of `kcr init`, and where `kcr envtest` finds
/// `hack/control-plane.sh`.
pub fn source_repository() -> Option<std::path::PathBuf> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    repo.join("crates/runtime/manager/Cargo.toml")
        .is_file()
        .then(|| repo.canonicalize().unwrap_or(repo))
}
