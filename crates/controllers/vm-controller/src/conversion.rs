//! The VirtualMachine conversion webhook: v1alpha1 <-> v1beta1 for the API server.
//!
//! The CRD stores v1alpha1 and serves both versions
//! (`apis::crds::virtual_machine_crd`); whenever a client reads or writes v1beta1,
//! the API server sends the objects here (`/convert`, a `ConversionReview`) and
//! this answers with [`conversion()`]: v1alpha1 is the hub, v1beta1 a spoke, and the
//! two functions are the `apis` crate's `Convertible` impl, so what is tested there
//! is what runs here.
//!
//! **The controller itself only ever sees v1alpha1**: its informer lists and
//! watches v1alpha1, the stored version, so none of its reads or writes needs the
//! webhook; a VirtualMachine a client created as v1beta1 reaches it as v1alpha1
//! like any other. Only clients of v1beta1 (and the API server's own callers of the
//! preferred version: `kubectl get vm`, the namespace controller, the garbage
//! collector) depend on this webhook being up.
//!
//! ```
//! use serde_json::json;
//! use webhook::Conversion;
//!
//! let alpha = json!({
//!     "apiVersion": "cloudnative.tw/v1alpha1", "kind": "VirtualMachine",
//!     "metadata": {"name": "web", "namespace": "default"},
//!     "spec": {"resource": {"cpu": "2", "memory": "4Gi", "rootDisk": "20Gi"}},
//! });
//! let beta = vm_controller::conversion::conversion().convert(&alpha, "cloudnative.tw/v1beta1").unwrap();
//! assert_eq!(beta["spec"], json!({"compute": {"cpus": 2, "memory": "4Gi"}, "rootDisk": {"size": "20Gi"}}));
//! ```

use apis::cloudnative::{v1alpha1, v1beta1};
use apis::conversion::Convertible;
use webhook::{HubConversion, WebhookServer};

/// VirtualMachine's versions as hub (v1alpha1) and spoke (v1beta1).
pub fn conversion() -> HubConversion<v1alpha1::VirtualMachine> {
    HubConversion::new().spoke::<v1beta1::VirtualMachine, _, _, _>(
        |vm| vm.convert_to(),
        v1beta1::VirtualMachine::convert_from,
    )
}

/// Serves [`conversion()`] at the CRD's conversion path
/// ([`apis::crds::CONVERSION_PATH`], `/convert`), which it returns.
pub fn register(server: &mut WebhookServer) -> webhook::Result<String> {
    let path = apis::crds::CONVERSION_PATH.to_string();
    server.register_conversion(path.clone(), conversion())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_the_crds() {
        let crd = apis::crds::virtual_machine_crd();
        let service = crd
            .spec
            .conversion
            .and_then(|c| c.webhook)
            .and_then(|w| w.client_config)
            .and_then(|c| c.service)
            .expect("a service");
        let mut server = WebhookServer::new("127.0.0.1:0".parse().unwrap(), "/certs");
        assert_eq!(register(&mut server).unwrap(), service.path.unwrap());
        assert_eq!(server.paths(), ["/convert"]);
    }

    #[test]
    fn converts_between_the_crds_versions() {
        let crd = apis::crds::virtual_machine_crd();
        let versions: Vec<String> = crd
            .spec
            .versions
            .iter()
            .map(|v| format!("{}/{}", crd.spec.group, v.name))
            .collect();
        assert_eq!(conversion().versions(), versions);
    }
}
