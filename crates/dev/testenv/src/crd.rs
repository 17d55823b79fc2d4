//! Installing CustomResourceDefinitions into the test control plane, envtest's
//! `CRDInstallOptions` / `InstallCRDs`.
//!
//! A test that creates custom objects first needs their CRDs, and needs them
//! *usable*: right after a CRD is created the API server still has to accept
//! its names (`NamesAccepted`), mark it `Established` and start serving the new
//! resource. Creating a Foo in that window fails with a 404.
//! [`install_crds`](crate::crd::install_crds) therefore waits for both the
//! `Established` condition and a successful list of the new resource, like
//! envtest's `WaitForCRDs`.
//!
//! # Idempotent and concurrent
//!
//! Several test binaries may share one control plane and install the same
//! CRDs at the same time. Each CRD is written with **server-side apply**, a
//! fixed field manager ([`FIELD_MANAGER`](crate::crd::FIELD_MANAGER)) and
//! `force`: applying the same object twice is a no-op, two concurrent applies
//! of the same object both succeed (no create-vs-exists race, no
//! resourceVersion conflicts), and a CRD left over from an older run is
//! updated to the new schema.
//!
//! # Conversion as a cluster has it
//!
//! A CRD whose versions differ in shape converts by webhook; a test serves that webhook
//! on 127.0.0.1 and points the CRD at it with
//! [`with_conversion_webhook_at`](crate::crd::with_conversion_webhook_at).
//! [`install_crds`](crate::crd::install_crds) refuses such a CRD with the conversion
//! switched off ([`lossy_conversion`](crate::crd::lossy_conversion)): the API server would
//! then prune every object written through the other version.

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion, WebhookClientConfig,
};
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};

use crate::error::{Error, Result};
use crate::wait::{Check, wait_for};

/// The field manager of every apply made by [`install_crds`].
pub const FIELD_MANAGER: &str = "testenv-install-crds";

/// How long [`install_crds`] waits for each CRD to be established and served.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Server-side apply each CRD, then wait (up to [`INSTALL_TIMEOUT`] each) until
/// it is `Established` and a list of its resource succeeds.
///
/// Errors: [`Error::InvalidRequest`] for a CRD without `metadata.name` or
/// without a version, or one whose versions differ in shape but are not converted
/// by a webhook ([`lossy_conversion`]; nothing is applied then), [`Error::Kube`]
/// when the API server refuses an apply (e.g. an invalid schema: the message names
/// the field), [`Error::Timeout`] when a CRD is not usable in time (the last seen
/// conditions are included, e.g. `NamesAccepted=False` for a name clash).
///
/// ```no_run
/// # async fn example(client: kube::Client, foo_crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition) -> testenv::Result<()> {
/// testenv::crd::install_crds(&client, &[foo_crd]).await?;
/// // Foo objects can be created now.
/// # Ok(()) }
/// ```
pub async fn install_crds(client: &Client, crds: &[CustomResourceDefinition]) -> Result<()> {
    if let Some(why) = crds.iter().find_map(lossy_conversion) {
        return Err(Error::InvalidRequest(why));
    }
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for crd in crds {
        let name = crd_name(crd)?;
        // Server-side apply needs apiVersion and kind in the body; a CRD built
        // by hand (or `Default`) may not have them set.
        let mut body = serde_json::to_value(crd)
            .map_err(|e| Error::InvalidRequest(format!("CRD {name}: {e}")))?;
        body["apiVersion"] = "apiextensions.k8s.io/v1".into();
        body["kind"] = "CustomResourceDefinition".into();
        api.patch(name, &params, &Patch::Apply(&body)).await?;
    }
    for crd in crds {
        wait_until_served(client, &api, crd).await?;
    }
    Ok(())
}

/// `crds` with each conversion webhook served at `addr` over TLS: the
/// `clientConfig` of every CRD that converts by webhook becomes the `url`
/// `https://<addr><path>` (the path its Service reference named, else `/convert`) with
/// `ca_pem` as its `caBundle`, as envtest's `WebhookInstallOptions` does for a test's
/// own webhook server. The rest of each CRD is left as it is.
///
/// Why a test needs this: a multi-version CRD converts by webhook because its versions
/// differ in shape, and a cluster runs that webhook (its `clientConfig` names the
/// in-cluster Service). A test control plane has no such Service, so the test serves the
/// webhook itself (on `127.0.0.1`, with a certificate from
/// [`WebhookCerts`](crate::webhook::WebhookCerts)) and points the CRD at it. Switching
/// the conversion off instead is not an option: with `strategy: None` the API server
/// only relabels `apiVersion`, so every write through the other version (the namespace
/// controller and `kubectl delete` use the preferred one) prunes what only the stored
/// version has; [`install_crds`] refuses such a CRD ([`lossy_conversion`]).
///
/// ```
/// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
///     CustomResourceConversion, CustomResourceDefinition, ServiceReference,
///     WebhookClientConfig, WebhookConversion,
/// };
/// let mut crd = CustomResourceDefinition::default();
/// crd.spec.conversion = Some(CustomResourceConversion {
///     strategy: "Webhook".into(),
///     webhook: Some(WebhookConversion {
///         client_config: Some(WebhookClientConfig {
///             service: Some(ServiceReference {
///                 namespace: "system".into(),
///                 name: "webhook-service".into(),
///                 path: Some("/convert".into()),
///                 port: Some(443),
///             }),
///             ..Default::default()
///         }),
///         conversion_review_versions: vec!["v1".into()],
///     }),
/// });
/// let addr = "127.0.0.1:9443".parse().unwrap();
/// let crds = testenv::crd::with_conversion_webhook_at(vec![crd], addr, "CA PEM");
/// let webhook = crds[0].spec.conversion.as_ref().unwrap().webhook.as_ref().unwrap();
/// let client = webhook.client_config.as_ref().unwrap();
/// assert_eq!(client.url.as_deref(), Some("https://127.0.0.1:9443/convert"));
/// assert_eq!(client.ca_bundle.as_ref().unwrap().0, b"CA PEM");
/// assert!(client.service.is_none());
/// ```
pub fn with_conversion_webhook_at(
    mut crds: Vec<CustomResourceDefinition>,
    addr: SocketAddr,
    ca_pem: &str,
) -> Vec<CustomResourceDefinition> {
    for crd in &mut crds {
        let Some(conversion) = crd.spec.conversion.as_mut() else {
            continue;
        };
        if conversion.strategy != "Webhook" {
            continue;
        }
        let webhook = conversion.webhook.get_or_insert_with(Default::default);
        let path = webhook
            .client_config
            .as_ref()
            .and_then(|c| c.service.as_ref())
            .and_then(|s| s.path.clone())
            .unwrap_or_else(|| "/convert".to_string());
        webhook.client_config = Some(WebhookClientConfig {
            url: Some(format!("https://{addr}{path}")),
            ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
            service: None,
        });
    }
    crds
}

/// Why installing `crd` would lose data, or `None` if it would not: a CRD with more
/// than one version whose schemas differ, converted by anything but a webhook
/// (`strategy: None`, or no `conversion` at all, which the API server defaults to
/// `None`).
///
/// With `strategy: None` the API server converts between versions by relabelling
/// `apiVersion` only. An object written through a version that lacks the stored
/// version's fields is pruned to that version's schema and stored so: a VirtualMachine
/// (v1alpha1 stored, `spec.resource`) touched through v1beta1 (`spec.compute`,
/// `spec.rootDisk`) - a label, or the `deletionTimestamp` that `kubectl delete` and the
/// namespace controller set through the preferred version - is stored as `spec: {}`,
/// which no v1alpha1 client can decode. [`install_crds`] refuses such a CRD, and the
/// repository's check (crates/controllers/apis/tests/lossy_crds.rs) fails on a manifest
/// or a harness that installs one.
///
/// ```
/// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
///     CustomResourceDefinition, CustomResourceDefinitionVersion, CustomResourceValidation,
///     JSONSchemaProps,
/// };
/// let version = |name: &str, description: &str| CustomResourceDefinitionVersion {
///     name: name.into(),
///     served: true,
///     storage: name == "v1",
///     schema: Some(CustomResourceValidation {
///         open_api_v3_schema: Some(JSONSchemaProps {
///             description: Some(description.into()),
///             ..Default::default()
///         }),
///     }),
///     ..Default::default()
/// };
/// let mut crd = CustomResourceDefinition::default();
/// crd.metadata.name = Some("things.example.com".into());
/// crd.spec.versions = vec![version("v1", "same"), version("v2", "same")];
/// assert_eq!(testenv::crd::lossy_conversion(&crd), None, "same shape: relabelling is enough");
/// crd.spec.versions[1] = version("v2", "another shape");
/// let why = testenv::crd::lossy_conversion(&crd).unwrap();
/// assert!(why.contains("things.example.com") && why.contains("v2"), "{why}");
/// ```
pub fn lossy_conversion(crd: &CustomResourceDefinition) -> Option<String> {
    let strategy = crd
        .spec
        .conversion
        .as_ref()
        .map_or("None", |c| c.strategy.as_str());
    if strategy == "Webhook" || crd.spec.versions.len() < 2 {
        return None;
    }
    let schema =
        |v: &CustomResourceDefinitionVersion| serde_json::to_value(&v.schema).unwrap_or_default();
    let reference = crd
        .spec
        .versions
        .iter()
        .find(|v| v.storage)
        .unwrap_or(&crd.spec.versions[0]);
    let differing: Vec<&str> = crd
        .spec
        .versions
        .iter()
        .filter(|v| schema(v) != schema(reference))
        .map(|v| v.name.as_str())
        .collect();
    if differing.is_empty() {
        return None;
    }
    let name = crd.metadata.name.as_deref().unwrap_or("(no name)");
    Some(format!(
        "CRD {name}: the schema of {} differs from {}'s, but the conversion strategy is {strategy}, \
         which only relabels apiVersion: a write through one version would prune what only the \
         other has. Serve its conversion webhook (testenv::crd::with_conversion_webhook_at) instead",
        differing.join(", "),
        reference.name,
    ))
}

/// Wait until `crd` is Established and a list of its resource succeeds.
async fn wait_until_served(
    client: &Client,
    api: &Api<CustomResourceDefinition>,
    crd: &CustomResourceDefinition,
) -> Result<()> {
    let name = crd_name(crd)?;
    wait_for(
        &format!("CRD {name} to be Established"),
        INSTALL_TIMEOUT,
        || async {
            let current = api.get(name).await?;
            let conditions = current
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default();
            let established = conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True");
            let seen: Vec<String> = conditions
                .iter()
                .map(|c| {
                    let message = c.message.as_deref().unwrap_or("");
                    format!("{}={} ({message})", c.type_, c.status)
                })
                .collect();
            Ok::<_, kube::Error>(Check::ready_if(established, (), seen.join(", ")))
        },
    )
    .await?;

    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.served)
        .ok_or_else(|| Error::InvalidRequest(format!("CRD {name} serves no version")))?;
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let objects = Api::<DynamicObject>::all_with(client.clone(), &resource);
    wait_for(
        &format!("{} to be served", crd.spec.names.plural),
        INSTALL_TIMEOUT,
        || async {
            objects
                .list_metadata(&ListParams::default().limit(1))
                .await?;
            Ok::<_, kube::Error>(Check::Ready(()))
        },
    )
    .await
}

/// `metadata.name`, which server-side apply needs.
fn crd_name(crd: &CustomResourceDefinition) -> Result<&str> {
    crd.metadata
        .name
        .as_deref()
        .ok_or_else(|| Error::InvalidRequest("a CRD without metadata.name".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CRD of two versions, `v1` (stored) and `v2`, whose schemas differ when
    /// `same_shape` is false, converted as `strategy` says (`None`: no `conversion`).
    fn two_versions(same_shape: bool, strategy: Option<&str>) -> CustomResourceDefinition {
        let version = |name: &str, field: &str| {
            serde_json::from_value(serde_json::json!({
                "name": name, "served": true, "storage": name == "v1",
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}},
            }))
            .unwrap()
        };
        let mut crd = CustomResourceDefinition::default();
        crd.metadata.name = Some("things.example.com".into());
        crd.spec.versions = vec![
            version("v1", "size"),
            version("v2", if same_shape { "size" } else { "capacity" }),
        ];
        crd.spec.conversion = strategy.map(|strategy| {
            serde_json::from_value(serde_json::json!({"strategy": strategy})).unwrap()
        });
        crd
    }

    #[test]
    fn differing_versions_without_a_conversion_webhook_are_lossy() {
        for strategy in [None, Some("None")] {
            let why = lossy_conversion(&two_versions(false, strategy)).expect("lossy");
            assert!(
                why.contains("things.example.com")
                    && why.contains("the schema of v2 differs from v1's")
                    && why.contains("strategy is None"),
                "{why}"
            );
        }
        assert_eq!(
            lossy_conversion(&two_versions(false, Some("Webhook"))),
            None
        );
        assert_eq!(lossy_conversion(&two_versions(true, Some("None"))), None);
        assert_eq!(lossy_conversion(&two_versions(true, None)), None);
        let mut one = two_versions(false, None);
        one.spec.versions.truncate(1);
        assert_eq!(lossy_conversion(&one), None);
    }

    #[tokio::test]
    async fn a_lossy_crd_is_refused_before_any_request() {
        // Nothing listens on port 1: any request would fail with a Kube error.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let crds = [two_versions(true, None), two_versions(false, Some("None"))];
        let err = install_crds(&client, &crds).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidRequest(m) if m.contains("only relabels apiVersion")),
            "{err}"
        );
    }

    #[test]
    fn the_webhook_is_pointed_at_the_address_and_the_rest_is_kept() {
        let addr = "127.0.0.1:4443".parse().unwrap();
        let mut webhook = two_versions(false, Some("Webhook"));
        webhook.spec.conversion.as_mut().unwrap().webhook = None;
        let crds =
            with_conversion_webhook_at(vec![webhook.clone(), two_versions(true, None)], addr, "CA");
        let client = crds[0]
            .spec
            .conversion
            .as_ref()
            .unwrap()
            .webhook
            .as_ref()
            .unwrap();
        let client = client.client_config.as_ref().unwrap();
        assert_eq!(
            client.url.as_deref(),
            Some("https://127.0.0.1:4443/convert")
        );
        assert_eq!(crds[0].spec.versions, webhook.spec.versions);
        assert_eq!(crds[1], two_versions(true, None), "no webhook: left alone");
    }

    #[tokio::test]
    async fn a_crd_without_a_name_is_refused_before_any_request() {
        // Nothing listens on port 1: any request would fail with a Kube error.
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let err = install_crds(&client, &[CustomResourceDefinition::default()])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidRequest(m) if m.contains("metadata.name")),
            "{err}"
        );
    }
}
