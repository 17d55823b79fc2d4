//! The finalizer that makes deletion clean up the real server.
//!
//! A VirtualMachine owns something Kubernetes cannot see: a server behind a driver.
//! Owner references and the garbage collector do nothing for it, so without help a
//! `kubectl delete vm` would remove the object at once and leave the server running,
//! forever, with nobody knowing it exists. A **finalizer** is that help: while
//! `metadata.finalizers` is not empty, a delete only sets `deletionTimestamp`; the
//! object stays until every finalizer is removed. The controller sees the timestamp,
//! deletes the server, and only then removes [`FINALIZER`].
//!
//! Two rules make it leak-proof, and controller101 breaks both:
//!
//! 1. **The finalizer is on the object before the server exists.** If it were added
//!    after `create_server` (or in the same write as the `Active` status, as
//!    controller101 does), a delete arriving in between - or a crash, or a failed
//!    status write - would let the object vanish while its server lives on.
//! 2. **Metadata is written as metadata.** The finalizer is added and removed with a
//!    JSON merge patch of `metadata` only, carrying the `resourceVersion` we read: the
//!    API server treats it as a precondition, so a concurrent edit of the object (a
//!    user's label, another controller's finalizer) yields 409 Conflict and a retry
//!    instead of being overwritten with our stale copy. controller101 changes the
//!    finalizers and the status in one full-object `Update`, which on a CRD with a
//!    status subresource silently drops the status half (or, without one, lets a
//!    status write clobber metadata).

use apis::cloudnative::v1alpha1::VirtualMachine;
use controller::ApiError;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::server::{ANNOTATION_RESOURCES, resources_annotation};
use crate::sync::{FIELD_MANAGER, VirtualMachineSyncer};

/// The finalizer this controller puts on every VirtualMachine whose server it may
/// create.
pub const FINALIZER: &str = "cloudnative.tw/vm-cleanup";

/// Whether `vm` carries [`FINALIZER`].
pub fn has_finalizer(vm: &VirtualMachine) -> bool {
    vm.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// The JSON merge patch that sets `vm`'s finalizers to `finalizers` (a merge patch
/// replaces a list as a whole), optionally sets the resources annotation (maps merge
/// key by key, so other annotations are untouched), and carries `vm`'s
/// resourceVersion as a precondition.
pub fn metadata_patch(
    vm: &VirtualMachine,
    finalizers: Vec<String>,
    record_resources: bool,
) -> Value {
    let mut metadata = json!({ "finalizers": finalizers });
    if let Some(rv) = &vm.metadata.resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    if record_resources {
        metadata["annotations"] =
            json!({ ANNOTATION_RESOURCES: resources_annotation(&vm.spec.resource) });
    }
    json!({ "metadata": metadata })
}

impl VirtualMachineSyncer {
    /// Adds [`FINALIZER`] if missing and, with `record_resources`, records
    /// `spec.resource` in the resources annotation if it differs, in one metadata
    /// patch. Returns `vm` with the metadata the API server answered (new
    /// resourceVersion), or `vm` unchanged when nothing needed writing.
    pub(crate) async fn ensure_metadata(
        &self,
        mut vm: VirtualMachine,
        record_resources: bool,
    ) -> Result<VirtualMachine> {
        let record_resources =
            record_resources && crate::server::recorded_matches_spec(&vm) != Some(true);
        if has_finalizer(&vm) && !record_resources {
            return Ok(vm);
        }
        let mut finalizers = vm.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == FINALIZER) {
            finalizers.push(FINALIZER.to_string());
        }
        let patch = metadata_patch(&vm, finalizers, record_resources);
        self.patch_metadata(&mut vm, "add finalizer", patch).await?;
        Ok(vm)
    }

    /// Removes [`FINALIZER`] (the last step of a deletion). A 404 means the object is
    /// already gone: done.
    pub(crate) async fn remove_finalizer(&self, mut vm: VirtualMachine) -> Result<()> {
        let finalizers: Vec<String> = vm
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f != FINALIZER)
            .collect();
        let patch = metadata_patch(&vm, finalizers, false);
        match self
            .patch_metadata(&mut vm, "remove finalizer", patch)
            .await
        {
            Err(Error::Api(e)) if e.is_not_found() => Ok(()),
            other => other,
        }
    }

    /// Sends a metadata merge patch and copies what it changed (finalizers,
    /// annotations) and the new resourceVersion into `vm`, so the next write of this
    /// sync passes the precondition.
    async fn patch_metadata(
        &self,
        vm: &mut VirtualMachine,
        action: &'static str,
        patch: Value,
    ) -> Result<()> {
        let namespace = vm.metadata.namespace.clone().unwrap_or_default();
        let name = vm.metadata.name.clone().unwrap_or_default();
        let api: Api<VirtualMachine> = Api::namespaced(self.client.clone(), &namespace);
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        let answered = api
            .patch_metadata(&name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|source| ApiError::new(action, &namespace, &name, source))?;
        self.wrote(
            &namespace,
            &name,
            answered.metadata.resource_version.as_deref(),
        );
        vm.metadata.resource_version = answered.metadata.resource_version;
        vm.metadata.finalizers = answered.metadata.finalizers;
        if answered.metadata.annotations.is_some() {
            vm.metadata.annotations = answered.metadata.annotations;
        }
        Ok(())
    }
}
