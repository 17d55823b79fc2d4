//! The API types of this project: one module per kind and version, kubebuilder's
//! `api/<version>/<kind>_types.go`.
//!
//! Each module defines a kind with kube's `#[derive(CustomResource)]`, which gives the
//! typed object (e.g. `Guestbook`: `metadata`, `spec`, `status`), its `kube::Resource` impl
//! (group, version, plural: what `kube::Api<Guestbook>` and the informers need) and its
//! CustomResourceDefinition (`Guestbook::crd()`, which `cargo run --bin manifests`
//! writes to `deploy/crd/`). Serde replaces Go's deep-copy and JSON code, and the
//! generic informers, listers and `kube::Api<K>` replace client-go's generated
//! clientsets, informers and listers.
//!
//! After changing a type, run `cargo run --bin manifests` to regenerate the CRDs.

pub mod guestbook_v1;
pub mod memcached_v1alpha1;
// +kcr:scaffold:api-modules
