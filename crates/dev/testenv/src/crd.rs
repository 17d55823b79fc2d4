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

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
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
/// without a version, [`Error::Kube`] when the API server refuses an apply
/// (e.g. an invalid schema: the message names the field), [`Error::Timeout`]
/// when a CRD is not usable in time (the last seen conditions are included,
/// e.g. `NamesAccepted=False` for a name clash).
///
/// ```no_run
/// # async fn example(client: kube::Client, foo_crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition) -> testenv::Result<()> {
/// testenv::crd::install_crds(&client, &[foo_crd]).await?;
/// // Foo objects can be created now.
/// # Ok(()) }
/// ```
pub async fn install_crds(client: &Client, crds: &[CustomResourceDefinition]) -> Result<()> {
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

/// `crds` for a control plane where no conversion webhook runs: each CRD that
/// converts by webhook converts with `strategy: None` instead (the API server only
/// relabels `apiVersion`).
///
/// Why a test needs this: the API server calls a CRD's conversion webhook for every
/// read of a version other than the stored one, and the namespace controller and the
/// garbage collector read the *preferred* version (`v1beta1` beats `v1alpha1`). With a
/// webhook that never answers, a namespace holding such objects stays `Terminating`
/// and the garbage collector's workers stop at its next resync of the resources
/// (kubernetes/kubernetes#118357). A test of the conversion itself points the CRD at
/// its own webhook server instead (a `url` and a `caBundle`, as envtest's
/// `WebhookInstallOptions` does); every other test only uses the stored version, for
/// which nothing is converted either way.
///
/// ```
/// use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
///     CustomResourceConversion, CustomResourceDefinition, WebhookConversion,
/// };
/// let mut crd = CustomResourceDefinition::default();
/// crd.spec.conversion = Some(CustomResourceConversion {
///     strategy: "Webhook".into(),
///     webhook: Some(WebhookConversion::default()),
/// });
/// let crds = testenv::crd::without_conversion_webhook(vec![crd]);
/// let conversion = crds[0].spec.conversion.as_ref().unwrap();
/// assert_eq!((conversion.strategy.as_str(), conversion.webhook.is_none()), ("None", true));
/// ```
pub fn without_conversion_webhook(
    mut crds: Vec<CustomResourceDefinition>,
) -> Vec<CustomResourceDefinition> {
    for crd in &mut crds {
        if let Some(conversion) = crd.spec.conversion.as_mut()
            && conversion.strategy == "Webhook"
        {
            conversion.strategy = "None".to_string();
            conversion.webhook = None;
        }
    }
    crds
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
