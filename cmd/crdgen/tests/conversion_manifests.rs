//! The VirtualMachine CRD's conversion webhook, checked against `deploy/vm-controller`:
//! the API server must reach `/convert` of the vm-controller Pod through the Service
//! the admission webhooks use, and trust it through the Certificate cert-manager
//! injects.
//!
//! ```text
//! CRD spec.conversion.webhook.clientConfig.service ─► webhook-service.yaml's Service, port 443
//!   path == vm_controller's registered path (apis::crds::CONVERSION_PATH, /convert)
//! CRD cert-manager.io/inject-ca-from ─► certificate.yaml's Certificate (namespace/name)
//! ```

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde::Deserialize;

/// Every document of `deploy/vm-controller/<file>`.
fn documents(file: &str) -> Vec<serde_yaml::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/vm-controller")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde_yaml::Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn one_of_kind(file: &str, kind: &str) -> serde_yaml::Value {
    let mut found: Vec<_> = documents(file)
        .into_iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .collect();
    assert_eq!(found.len(), 1, "{file}: one {kind}");
    found.remove(0)
}

#[test]
fn the_conversion_webhook_is_vm_controllers_service_and_certificate() {
    let crd = apis::crds::virtual_machine_crd();
    let conversion = crd.spec.conversion.as_ref().unwrap();
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.as_ref().unwrap();
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let client = webhook.client_config.as_ref().unwrap();
    assert_eq!(client.url, None, "called through the Service");
    let service_ref = client.service.as_ref().unwrap();
    assert_eq!(service_ref.path.as_deref(), Some(webhook::CONVERSION_PATH));

    let service = one_of_kind("webhook-service.yaml", "Service");
    assert_eq!(
        service["metadata"]["name"].as_str(),
        Some(service_ref.name.as_str())
    );
    assert_eq!(
        service["metadata"]["namespace"].as_str(),
        Some(service_ref.namespace.as_str())
    );
    let ports = service["spec"]["ports"].as_sequence().unwrap();
    assert!(
        ports
            .iter()
            .any(|p| p["port"].as_i64() == service_ref.port.map(i64::from)),
        "the Service has port {:?}",
        service_ref.port
    );

    let certificate = one_of_kind("certificate.yaml", "Certificate");
    let from = format!(
        "{}/{}",
        certificate["metadata"]["namespace"].as_str().unwrap(),
        certificate["metadata"]["name"].as_str().unwrap()
    );
    let annotations = crd.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations.get("cert-manager.io/inject-ca-from"),
        Some(&from)
    );
    // The Certificate is issued for the name the API server dials.
    let dns: Vec<&str> = certificate["spec"]["dnsNames"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    let dialled = format!("{}.{}.svc", service_ref.name, service_ref.namespace);
    assert!(dns.contains(&dialled.as_str()), "{dns:?} lacks {dialled}");
}
