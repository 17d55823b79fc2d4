//! From a VirtualMachine to what the driver is asked for: the server's **name** and
//! its [`ServerSpec`], and the annotation that remembers the size a server was
//! created with.
//!
//! # The server name
//!
//! The driver identifies servers by name only, so the name is what makes every driver
//! call idempotent across crashes and restarts: a controller that created a server and
//! died before writing the id into the status finds *the same* server on its next sync,
//! because it asks for the same name. The name must therefore be
//!
//! * **stable**: computed from the object alone, never from controller memory;
//! * **unique**: two VirtualMachines never share a server. `default/web` and
//!   `staging/web` differ, and so do a deleted `web` whose server is still being torn
//!   down and a new `web` created a moment later;
//! * **valid for every driver**: a DNS label of at most
//!   [`MAX_NAME_LEN`](vm_driver::MAX_NAME_LEN) characters (see
//!   [`vm_driver::validate_name`]).
//!
//! The object's UID (a UUID the API server assigns, unique over the cluster's lifetime)
//! gives all three. A short prefix of the object's name is kept in front of it so that
//! an operator looking at `ps` or the driver's state directory sees which object a
//! server belongs to: `<name, at most 16 characters>-<uid>`, e.g.
//! `test-vm-5c3d2f0e-8f1b-4c6a-9a53-0d2b1e7f4a10`.
//!
//! Better: controller101 names the server after `metadata.name` alone, so two
//! VirtualMachines of the same name in different namespaces fight over one server, and
//! a VirtualMachine re-created under the same name can adopt the previous one's server.
//!
//! # Resizing is not supported
//!
//! Drivers create a server with a size and never change it (see
//! [`Driver::create_server`](vm_driver::Driver::create_server)). A spec edit after the
//! server exists therefore cannot be applied in place, and recreating the server would
//! silently destroy its disk. The controller does neither: it reports the difference
//! (status reason and a `ResizeUnsupported` Warning Event) and keeps the server as it
//! is; delete and re-create the VirtualMachine to resize. To know the size a server was
//! created with, the controller writes the `spec.resource` it is about to create with
//! into the [`ANNOTATION_RESOURCES`] annotation (in the same metadata patch that adds the
//! finalizer, before the driver is called) and freezes it once the server is `Active`.

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource};
use vm_driver::{ServerSpec, validate_name};

use crate::error::{Error, Result};
use crate::limits::checked;

/// The annotation holding the `spec.resource` (as JSON) the server was created with.
pub const ANNOTATION_RESOURCES: &str = "cloudnative.tw/server-resources";

/// How many characters of the object's name lead the server name.
const NAME_PREFIX_LEN: usize = 16;

/// The driver's name for `vm`'s server: `<name prefix>-<uid>`. See the
/// [module docs](self).
///
/// Fails with [`Error::ServerName`] when the object has no UID (it was not read from
/// the API server) or the result is not a valid driver name.
///
/// ```
/// use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
///
/// let mut vm = VirtualMachine::new(
///     "a-rather-long-virtual-machine-name",
///     VirtualMachineSpec { resource: VirtualMachineResource::new("1", "64Mi", "1Gi") },
/// );
/// vm.metadata.uid = Some("5c3d2f0e-8f1b-4c6a-9a53-0d2b1e7f4a10".into());
/// assert_eq!(
///     vm_controller::server_name(&vm).unwrap(),
///     "a-rather-long-vi-5c3d2f0e-8f1b-4c6a-9a53-0d2b1e7f4a10"
/// );
/// ```
pub fn server_name(vm: &VirtualMachine) -> Result<String> {
    let object = vm.metadata.name.as_deref().unwrap_or_default();
    let uid = vm
        .metadata
        .uid
        .as_deref()
        .filter(|uid| !uid.is_empty())
        .ok_or_else(|| Error::ServerName {
            name: object.to_string(),
            reason: "the object has no metadata.uid".to_string(),
        })?;
    // Object names are DNS subdomains (lowercase, digits, '-', '.'); cut, then make
    // sure the prefix still ends with a letter or digit.
    let prefix: String = object.chars().take(NAME_PREFIX_LEN).collect();
    let prefix = prefix.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    let name = if prefix.is_empty() {
        uid.to_ascii_lowercase()
    } else {
        format!("{prefix}-{}", uid.to_ascii_lowercase())
    };
    validate_name(&name).map_err(|err| Error::ServerName {
        name: object.to_string(),
        reason: err.to_string(),
    })?;
    Ok(name)
}

/// The [`ServerSpec`] for `vm`'s `spec.resource`, named `name`.
///
/// A size that is not a quantity or is outside the controller's limits
/// ([`crate::limits`], the webhook's, with the webhook's messages) is
/// [`Error::InvalidSpec`]: permanent until the user edits the object (the webhook and
/// the API server's CEL rules refuse most such values before they are stored). The
/// limits govern *creating* a server: for a VirtualMachine whose server already exists
/// (`status.server`), only the quantities must be readable, so a server created before
/// a limit was lowered is still observed and can still be deleted, and a resize beyond
/// the limit is reported as `ResizeUnsupported`, which is what it is.
pub fn server_spec(vm: &VirtualMachine, name: &str) -> Result<ServerSpec> {
    let has_server = vm.status.as_ref().is_some_and(|s| s.server.is_some());
    let parsed = if has_server {
        vm.spec
            .resource
            .parse()
            .map_err(|err| Error::InvalidSpec(err.to_string()))?
    } else {
        checked(&vm.spec.resource).map_err(|err| Error::InvalidSpec(err.to_string()))?
    };
    let spec = ServerSpec::new(
        name,
        parsed.cpu_cores,
        parsed.memory_bytes,
        parsed.root_disk_bytes,
    );
    spec.validate()
        .map_err(|err| Error::InvalidSpec(err.to_string()))?;
    Ok(spec)
}

/// The value of [`ANNOTATION_RESOURCES`] for `resource`.
pub fn resources_annotation(resource: &VirtualMachineResource) -> String {
    // Serialising a struct of three strings cannot fail.
    serde_json::to_string(resource).unwrap_or_default()
}

/// The resources recorded in `vm`'s [`ANNOTATION_RESOURCES`], if present and readable.
pub fn recorded_resources(vm: &VirtualMachine) -> Option<VirtualMachineResource> {
    let value = vm
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_RESOURCES)?;
    serde_json::from_str(value).ok()
}

/// Whether `vm`'s annotation records the same size as its spec (compared as numbers,
/// so `cpu: 1` and `cpu: 1000m` are the same). `None` when there is no annotation.
pub fn recorded_matches_spec(vm: &VirtualMachine) -> Option<bool> {
    let recorded = recorded_resources(vm)?;
    Some(match (recorded.parse(), vm.spec.resource.parse()) {
        (Ok(recorded), Ok(wanted)) => recorded == wanted,
        _ => recorded == vm.spec.resource,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::cloudnative::v1alpha1::VirtualMachineSpec;

    fn vm(name: &str, uid: Option<&str>) -> VirtualMachine {
        let mut vm = VirtualMachine::new(
            name,
            VirtualMachineSpec {
                resource: VirtualMachineResource::new("1", "64Mi", "1Gi"),
            },
        );
        vm.metadata.uid = uid.map(str::to_string);
        vm
    }

    const UID: &str = "5c3d2f0e-8f1b-4c6a-9a53-0d2b1e7f4a10";

    #[test]
    fn names_are_prefix_and_uid_and_always_valid() {
        assert_eq!(
            server_name(&vm("web", Some(UID))).unwrap(),
            format!("web-{UID}")
        );
        // A cut that ends in '-' or '.' is trimmed back to a letter or digit.
        assert_eq!(
            server_name(&vm("abcdefghijklmno-pqr", Some(UID))).unwrap(),
            format!("abcdefghijklmno-{UID}")
        );
        assert_eq!(
            server_name(&vm("a.b.c.d.e.f.g.h.i.j", Some(UID))).unwrap(),
            format!("a.b.c.d.e.f.g.h-{UID}")
        );
        let longest = server_name(&vm(&"x".repeat(253), Some(UID))).unwrap();
        assert!(longest.len() <= vm_driver::MAX_NAME_LEN, "{longest}");
    }

    #[test]
    fn same_name_different_uid_is_a_different_server() {
        let a = server_name(&vm("web", Some(UID))).unwrap();
        let b = server_name(&vm("web", Some("00000000-0000-0000-0000-000000000001"))).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn no_uid_or_a_bad_uid_is_an_error() {
        assert!(matches!(
            server_name(&vm("web", None)),
            Err(Error::ServerName { .. })
        ));
        assert!(matches!(
            server_name(&vm("web", Some(""))),
            Err(Error::ServerName { .. })
        ));
        assert!(matches!(
            server_name(&vm("web", Some("../../etc"))),
            Err(Error::ServerName { .. })
        ));
    }

    #[test]
    fn spec_numbers_come_from_the_quantities() {
        let spec = server_spec(&vm("web", Some(UID)), "n").unwrap();
        assert_eq!(spec, ServerSpec::new("n", 1, 64 << 20, 1 << 30));
        let mut bad = vm("web", Some(UID));
        bad.spec.resource.memory =
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("lots".into());
        assert!(
            matches!(server_spec(&bad, "n"), Err(Error::InvalidSpec(m)) if m.contains("memory"))
        );
        let mut tiny = vm("web", Some(UID));
        tiny.spec.resource.memory =
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Ki".into());
        assert!(
            matches!(server_spec(&tiny, "n"), Err(Error::InvalidSpec(m)) if m.contains("memory_bytes"))
        );
    }

    /// The message of the status reason and the Warning Event, when the webhook did not
    /// refuse the size first: the controller's limit, not the integer type's.
    #[test]
    fn a_new_server_gets_the_webhooks_limits_and_messages() {
        let with_cpu = |cpu: &str| {
            let mut v = vm("web", Some(UID));
            v.spec.resource.cpu =
                k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.into());
            v
        };
        for (cpu, value) in [("99999999999", "\"99999999999\""), ("65", "\"65\"")] {
            let Err(err) = server_spec(&with_cpu(cpu), "n") else {
                panic!("{cpu} CPUs accepted");
            };
            assert_eq!(
                err.to_string(),
                format!(
                    "invalid spec.resource: spec.resource.cpu: Invalid value: {value}: must be at most 64"
                )
            );
        }
        assert_eq!(server_spec(&with_cpu("64"), "n").unwrap().cpus, 64);

        // A server that exists keeps being observed: the limits are for creating.
        let mut existing = with_cpu("65");
        existing.status = Some(crate::status::new_status(
            apis::cloudnative::v1alpha1::VirtualMachinePhase::Active,
            None,
            Some(apis::cloudnative::v1alpha1::ServerStatus {
                id: "id-1".into(),
                state: "running".into(),
                usage: apis::cloudnative::v1alpha1::ResourceUsage {
                    cpu: 0.0,
                    memory: 0.0,
                },
            }),
        ));
        assert_eq!(server_spec(&existing, "n").unwrap().cpus, 65);
    }

    #[test]
    fn the_annotation_compares_sizes_not_spellings() {
        let mut v = vm("web", Some(UID));
        assert_eq!(recorded_matches_spec(&v), None);
        let same_size = VirtualMachineResource::new("1000m", "65536Ki", "1Gi");
        v.metadata.annotations = Some(
            [(
                ANNOTATION_RESOURCES.to_string(),
                resources_annotation(&same_size),
            )]
            .into(),
        );
        assert_eq!(recorded_resources(&v), Some(same_size));
        assert_eq!(recorded_matches_spec(&v), Some(true));
        v.spec.resource.cpu = k8s_openapi::apimachinery::pkg::api::resource::Quantity("2".into());
        assert_eq!(recorded_matches_spec(&v), Some(false));
        v.metadata.annotations =
            Some([(ANNOTATION_RESOURCES.to_string(), "not json".to_string())].into());
        assert_eq!(recorded_matches_spec(&v), None);
    }
}
