//! `apis`: the API types of this workspace's controllers, and the
//! CustomResourceDefinitions generated from them.
//!
//! In a Go controller these are the `pkg/apis/<group>/<version>/types.go`
//! files that code-generator turns into deep-copy functions, clientsets,
//! informers and listers, and that controller-gen turns into CRD YAML. In
//! Rust, `kube`'s `#[derive(CustomResource)]` covers the first part (the typed
//! object, its `kube::Resource` impl and its CRD), serde replaces deep-copy and
//! the JSON codecs, and the generic `kube::Api<K>` and this workspace's `cache`
//! crate replace the generated clientsets, informers and listers.
//!
//! | Go package | Rust module | kind |
//! |---|---|---|
//! | sample-controller `pkg/apis/samplecontroller/v1alpha1` | [`samplecontroller::v1alpha1`] | [`Foo`](samplecontroller::v1alpha1::Foo) |
//! | controller101 `pkg/apis/cloudnative/v1alpha1` | [`cloudnative::v1alpha1`] | [`VirtualMachine`](cloudnative::v1alpha1::VirtualMachine) (storage version, hub) |
//! | (a second version, kubebuilder's multi-version tutorial) | [`cloudnative::v1beta1`] | [`VirtualMachine`](cloudnative::v1beta1::VirtualMachine) (converted through the hub: [`conversion`]) |
//! | Operator101 (kubebuilder) `api/v1` | [`operator::v1`] | [`MyWeb`](operator::v1::MyWeb) |
//!
//! The crate is types only (the bottom of the dependency graph): no client
//! calls. [`crds()`] returns every CRD; `cmd/crdgen` writes them to
//! `deploy/crds` (run `hack/update-crds.sh` after changing a type;
//! `hack/verify-crds.sh` fails while the checked-in files are stale).
//!
//! Validation lives in the schema so that the **API server** enforces it,
//! before anything is stored: Foo's `replicas` is 1..=10 and defaults to 1;
//! VirtualMachine's quantities are checked by CEL rules; MyWeb's image must be
//! non-empty and its node port in 30000..=32767. Controllers can rely
//! on stored objects being valid, and users get a 422 naming the field.
//!
//! ```
//! let names: Vec<_> = apis::crds().into_iter().map(|crd| crd.metadata.name.unwrap()).collect();
//! assert_eq!(
//!     names,
//!     ["foos.samplecontroller.k8s.io", "virtualmachines.cloudnative.tw", "mywebs.operator.k8s-summit.org"]
//! );
//! ```

#![forbid(unsafe_code)]

pub mod cloudnative;
pub mod conversion;
pub mod crds;
pub mod operator;
pub mod quantity;
pub mod samplecontroller;

pub use crds::{crd_file_name, crd_files, crd_yaml, crds};
