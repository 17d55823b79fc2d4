//! The VirtualMachine admission webhook: refuse a size the controller cannot give,
//! and a resize it cannot do, before the API server stores it.
//!
//! * **Sizes.** `spec.resource` must parse with the project's quantity code (the one the
//!   controller uses) into at least 1 CPU and more than 0 bytes of memory and root
//!   disk, and stay within [`MAX_CPUS`], [`MAX_MEMORY_BYTES`] and
//!   [`MAX_ROOT_DISK_BYTES`] ([`crate::limits`], which the sync checks too, with the
//!   same messages: a value beyond any integer is "must be at most 64", not the
//!   integer type's maximum). The CRD's CEL rules already refuse non-quantities and
//!   zero sizes (they work even without the webhook); the upper limits are the
//!   controller's, because they are its policy, not the type's.
//! * **No resize.** `spec.resource` is immutable on update: the driver cannot resize
//!   a server. Without the webhook the new size is stored and the controller can only
//!   report `ResizeUnsupported` afterwards (a Warning, and the spec no longer tells the
//!   truth); with it, `kubectl apply` fails with this message and nothing changes.
//! * **Server names.** The object's name must give a valid driver server name
//!   ([`server_name`]); by construction every valid object name
//!   does, so this only guards against a future change of that construction.
//!
//! And a mutating webhook, [`VirtualMachineDefaulter`], fills omitted sizes on create:
//! `cpu` [`DEFAULT_CPU`], `memory` [`DEFAULT_MEMORY_PER_CPU_MIB`] MiB per CPU,
//! `rootDisk` [`DEFAULT_ROOT_DISK`]. Why a webhook and not the CRD's `default:`: the
//! memory default depends on the CPU count, which a schema default (a constant) cannot
//! say. Why a raw [`Handler`] and not a typed `Defaulter`: the fields are required in
//! the type (and in the schema, so a VirtualMachine without sizes is still refused when
//! the webhook is not installed), so the typed object cannot represent "omitted".
//! Mutating admission runs before the schema's validation, so the filled-in fields
//! satisfy `required`.

use apis::cloudnative::v1alpha1::VirtualMachine;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::core::admission::AdmissionResponse;
use serde_json::{Value, json};
use webhook::{Denied, Handler, Request, Validator, Warnings, WebhookServer};

use crate::limits::checked;
use crate::server_name;

pub use crate::limits::{MAX_CPUS, MAX_MEMORY_BYTES, MAX_ROOT_DISK_BYTES};

/// VirtualMachine's admission rules; see the [module docs](self).
///
/// ```
/// use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
/// use vm_controller::webhook::VirtualMachineValidator;
/// use webhook::Validator;
///
/// let vm = |cpu: &str| VirtualMachine::new(
///     "web",
///     VirtualMachineSpec { resource: VirtualMachineResource::new(cpu, "64Mi", "1Gi") },
/// );
/// assert!(VirtualMachineValidator.validate_create(&vm("2")).is_ok());
/// assert!(VirtualMachineValidator.validate_create(&vm("100")).is_err());
/// let resize = VirtualMachineValidator.validate_update(&vm("1"), &vm("2")).unwrap_err();
/// assert!(resize.message.contains("cannot be changed"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct VirtualMachineValidator;

impl Validator<VirtualMachine> for VirtualMachineValidator {
    fn validate_create(&self, vm: &VirtualMachine) -> Result<Warnings, Denied> {
        // The sync checks the same limits with the same messages (crate::limits).
        checked(&vm.spec.resource).map_err(|err| Denied::invalid(err.to_string()))?;
        // The UID is not always assigned yet at admission; any UID gives the same
        // verdict on the name part.
        let mut named = vm.clone();
        if named.metadata.uid.as_deref().is_none_or(str::is_empty) {
            named.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
        }
        server_name(&named).map_err(|err| Denied::invalid(format!("metadata.name: {err}")))?;
        Ok(Warnings::new())
    }

    fn validate_update(
        &self,
        old: &VirtualMachine,
        new: &VirtualMachine,
    ) -> Result<Warnings, Denied> {
        if old.spec.resource != new.spec.resource {
            let show = |vm: &VirtualMachine| {
                let r = &vm.spec.resource;
                format!(
                    "cpu={} memory={} rootDisk={}",
                    r.cpu.0, r.memory.0, r.root_disk.0
                )
            };
            return Err(Denied::invalid(format!(
                "spec.resource: Forbidden: cannot be changed from {} to {}: the VM driver \
                 cannot resize a server; create a new VirtualMachine with the new size instead",
                show(old),
                show(new)
            )));
        }
        // Deleting a VM whose size no longer passes (the limits changed) must still be
        // possible, and metadata/finalizer updates with it: only the size is checked.
        Ok(Warnings::new())
    }
}

/// The `cpu` of a VirtualMachine created without one.
pub const DEFAULT_CPU: &str = "1";
/// The `memory` of a VirtualMachine created without one, per CPU: 256 MiB.
pub const DEFAULT_MEMORY_PER_CPU_MIB: u64 = 256;
/// The `rootDisk` of a VirtualMachine created without one.
pub const DEFAULT_ROOT_DISK: &str = "1Gi";

/// Fills omitted `spec.resource` sizes on create; see the [module docs](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct VirtualMachineDefaulter;

impl Handler for VirtualMachineDefaulter {
    fn handle(&self, request: &Request) -> AdmissionResponse {
        if let Err(err) = request.check_kind::<VirtualMachine>() {
            return request.denied(&Denied::new(err.to_string()).with_reason("BadRequest", 400));
        }
        match request.raw_object() {
            // A patch cannot add fields under a value that is not an object: the API
            // server would fail the whole request on it. Say what is wrong instead.
            Some(object) => match not_an_object(object) {
                Some((field, kind)) => request.denied(&Denied::invalid(format!(
                    "{field}: Invalid value: {kind}: must be an object"
                ))),
                None => request.patched(default_patch(object)),
            },
            None => request.allowed(),
        }
    }
}

/// The first of the object, its `spec` and `spec.resource` that is present (not null)
/// but not a JSON object, and what it is instead.
fn not_an_object(object: &Value) -> Option<(&'static str, &'static str)> {
    let kind = |value: &Value| match value {
        Value::Null | Value::Object(_) => None,
        Value::Bool(_) => Some("a boolean"),
        Value::Number(_) => Some("a number"),
        Value::String(_) => Some("a string"),
        Value::Array(_) => Some("an array"),
    };
    if let Some(kind) = kind(object) {
        return Some(("object", kind));
    }
    let spec = object.get("spec");
    if let Some(kind) = spec.and_then(kind) {
        return Some(("spec", kind));
    }
    let resource = spec.and_then(|spec| spec.get("resource"));
    resource.and_then(kind).map(|kind| ("spec.resource", kind))
}

/// The JSON patch that adds the omitted sizes to a VirtualMachine as the API server
/// sent it (empty when nothing is omitted). The object, its `spec` and
/// `spec.resource` must be JSON objects where present (the defaulter refuses the
/// request otherwise): the patch adds fields under them.
///
/// ```
/// use serde_json::json;
/// use vm_controller::webhook::default_patch;
///
/// let mut vm = json!({"spec": {"resource": {"cpu": "2"}}});
/// let patch = default_patch(&vm);
/// json_patch::patch(&mut vm, &patch).unwrap();
/// assert_eq!(vm, json!({"spec": {"resource": {"cpu": "2", "memory": "512Mi", "rootDisk": "1Gi"}}}));
/// ```
pub fn default_patch(object: &Value) -> json_patch::Patch {
    let resource = object.pointer("/spec/resource").filter(|r| !r.is_null());
    let given = |field: &str| resource.and_then(|r| r.get(field)).filter(|v| !v.is_null());
    let cpu = given("cpu").cloned().unwrap_or_else(|| json!(DEFAULT_CPU));
    // Unparsable CPUs are the validator's to refuse; size the memory for one.
    let cpus = match &cpu {
        Value::String(s) => apis::quantity::cpu_cores(&Quantity(s.clone())).unwrap_or(1),
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(1),
        _ => 1,
    }
    .max(1);
    let memory = format!("{}Mi", u64::from(cpus) * DEFAULT_MEMORY_PER_CPU_MIB);
    let defaults = [
        ("cpu", cpu),
        ("memory", json!(memory)),
        ("rootDisk", json!(DEFAULT_ROOT_DISK)),
    ];
    let whole = || -> serde_json::Map<String, Value> {
        defaults
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let spec = object.get("spec").filter(|s| !s.is_null());
    let ops: Vec<Value> = match (spec, resource) {
        (None, _) => vec![json!({"op": "add", "path": "/spec", "value": {"resource": whole()}})],
        (Some(_), None) => vec![json!({"op": "add", "path": "/spec/resource", "value": whole()})],
        (Some(_), Some(_)) => defaults
            .iter()
            .filter(|(field, _)| given(field).is_none())
            .map(|(field, value)| {
                json!({"op": "add", "path": format!("/spec/resource/{field}"), "value": value})
            })
            .collect(),
    };
    serde_json::from_value(Value::Array(ops)).expect("well-formed JSON patch operations")
}

/// Registers the VirtualMachine webhooks on `server` (the defaulter at the mutate
/// path, the validator at the validate path); returns the paths, mutate first.
pub fn register(server: &mut WebhookServer) -> webhook::Result<Vec<String>> {
    let mutate = webhook::mutate_path::<VirtualMachine>();
    server.register(mutate.clone(), VirtualMachineDefaulter)?;
    Ok(vec![
        mutate,
        server.register_validator::<VirtualMachine, _>(VirtualMachineValidator)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::cloudnative::v1alpha1::{VirtualMachineResource, VirtualMachineSpec};
    use serde_json::json;

    fn vm(cpu: &str, memory: &str, disk: &str) -> VirtualMachine {
        VirtualMachine::new(
            "web",
            VirtualMachineSpec {
                resource: VirtualMachineResource::new(cpu, memory, disk),
            },
        )
    }

    fn denied(vm: &VirtualMachine) -> String {
        VirtualMachineValidator
            .validate_create(vm)
            .unwrap_err()
            .message
    }

    #[test]
    fn sizes_within_the_limits_pass() {
        for ok in [
            vm("1", "64Mi", "1Gi"),
            vm("1500m", "1Gi", "10Gi"),
            vm("64", "256Gi", "2Ti"),
        ] {
            assert!(
                VirtualMachineValidator.validate_create(&ok).is_ok(),
                "{ok:?}"
            );
        }
    }

    #[test]
    fn bad_and_oversized_sizes_name_the_field() {
        assert_eq!(
            denied(&vm("65", "1Gi", "1Gi")),
            "spec.resource.cpu: Invalid value: \"65\": must be at most 64"
        );
        // Beyond u32 (the quantity code's type): the real limit, not 4294967295.
        assert_eq!(
            denied(&vm("99999999999", "1Gi", "1Gi")),
            "spec.resource.cpu: Invalid value: \"99999999999\": must be at most 64"
        );
        assert!(
            denied(&vm("0", "1Gi", "1Gi")).starts_with("spec.resource.cpu: Invalid value: \"0\"")
        );
        assert!(
            denied(&vm("1", "257Gi", "1Gi"))
                .contains("spec.resource.memory: Invalid value: \"257Gi\": must be at most 256Gi")
        );
        assert!(
            denied(&vm("1", "0", "1Gi"))
                .contains("spec.resource.memory: Invalid value: \"0\": must be greater than 0")
        );
        assert!(denied(&vm("1", "1Gi", "3Ti")).contains("spec.resource.rootDisk"));
        assert!(denied(&vm("two", "1Gi", "1Gi")).starts_with("spec.resource.cpu"));
    }

    #[test]
    fn omitted_sizes_are_defaulted_and_given_ones_kept() {
        let patched = |mut object: Value| {
            let patch = default_patch(&object);
            json_patch::patch(&mut object, &patch).unwrap();
            object["spec"]["resource"].clone()
        };
        assert_eq!(
            patched(json!({"metadata": {"name": "a"}})),
            json!({"cpu": "1", "memory": "256Mi", "rootDisk": "1Gi"})
        );
        assert_eq!(
            patched(json!({"spec": {}})),
            json!({"cpu": "1", "memory": "256Mi", "rootDisk": "1Gi"})
        );
        assert_eq!(
            patched(json!({"spec": {"resource": {"cpu": 4, "rootDisk": "5Gi"}}})),
            json!({"cpu": 4, "memory": "1024Mi", "rootDisk": "5Gi"})
        );
        let full =
            json!({"spec": {"resource": {"cpu": "1500m", "memory": "64Mi", "rootDisk": "1Gi"}}});
        assert!(default_patch(&full).0.is_empty());
        // 1500m rounds up to 2 CPUs, as the controller counts them.
        assert_eq!(
            patched(json!({"spec": {"resource": {"cpu": "1500m"}}}))["memory"],
            json!("512Mi")
        );
    }

    /// Found by the `admission_review` fuzz target: for `"object": false` (or a
    /// `spec` or `spec.resource` that is not an object) the defaulter answered with a
    /// patch that cannot be applied, so the API server would fail the request with a
    /// patch error instead of a message about the object.
    #[test]
    fn an_object_or_spec_that_is_not_an_object_is_refused_not_patched() {
        let review = |object: Value| {
            Request::from_review(json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": "u-1",
                    "kind": {"group": "cloudnative.tw", "version": "v1alpha1", "kind": "VirtualMachine"},
                    "resource": {"group": "cloudnative.tw", "version": "v1alpha1", "resource": "virtualmachines"},
                    "operation": "CREATE",
                    "userInfo": {"username": "alice"},
                    "object": object,
                },
            }))
            .unwrap()
        };
        for (object, want) in [
            (
                json!(false),
                "object: Invalid value: a boolean: must be an object",
            ),
            (
                json!({"spec": "x"}),
                "spec: Invalid value: a string: must be an object",
            ),
            (
                json!({"spec": {"resource": [1]}}),
                "spec.resource: Invalid value: an array: must be an object",
            ),
        ] {
            let request = review(object.clone());
            let response = VirtualMachineDefaulter.handle(&request);
            assert!(!response.allowed, "{object}");
            assert!(response.patch.is_none(), "{object}");
            assert_eq!(response.result.code, 422, "{object}");
            assert_eq!(response.result.message, want);
            assert_eq!(response.uid, "u-1");
        }
        // Null is "omitted": defaulted, and the patch applies.
        for object in [json!({"spec": null}), json!({"spec": {"resource": null}})] {
            let request = review(object.clone());
            let response = VirtualMachineDefaulter.handle(&request);
            assert!(response.allowed, "{object}");
            let patch: json_patch::Patch =
                serde_json::from_slice(&response.patch.expect("a patch")).unwrap();
            let mut patched = object.clone();
            json_patch::patch(&mut patched, &patch).unwrap();
            assert_eq!(
                patched["spec"]["resource"],
                json!({"cpu": "1", "memory": "256Mi", "rootDisk": "1Gi"})
            );
        }
    }

    #[test]
    fn a_resize_is_refused_and_other_updates_pass() {
        let before = vm("1", "64Mi", "1Gi");
        let denied = VirtualMachineValidator
            .validate_update(&before, &vm("2", "64Mi", "1Gi"))
            .unwrap_err();
        assert!(denied.message.starts_with("spec.resource: Forbidden: cannot be changed from cpu=1 memory=64Mi rootDisk=1Gi to cpu=2"), "{denied}");
        let mut labelled = before.clone();
        labelled.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
        assert!(
            VirtualMachineValidator
                .validate_update(&before, &labelled)
                .is_ok()
        );
    }
}
