//! Installing webhook configurations, waiting until they are called, and removing them (see the [module docs](super)).

use std::fmt;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, Config};

use super::*;
use crate::error::{Error, Result};
use crate::namespace::random_name;
use crate::wait::{Check, wait_for};

/// The webhook configurations [`install_webhooks`] created. Dropping it deletes them
/// (best effort, from a helper thread, like [`TestNamespace`](crate::TestNamespace));
/// the API server stops calling them a moment later.
pub struct WebhookGuard {
    pub(super) config: Config,
    pub(super) namespace: String,
    pub(super) validating: Option<String>,
    pub(super) mutating: Option<String>,
    /// (path, full webhook name), in the spec's order.
    pub(super) names: Vec<(String, String)>,
    /// Bumped by every [`set_ca_bundle`](WebhookGuard::set_ca_bundle): the probe label
    /// value of the configuration version to wait for.
    pub(super) generation: u32,
    pub(super) delete_on_drop: bool,
}

impl fmt::Debug for WebhookGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookGuard")
            .field("validating", &self.validating)
            .field("mutating", &self.mutating)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Creates the ValidatingWebhookConfiguration and/or MutatingWebhookConfiguration of
/// `spec` with the cluster admin credentials of `config`, and waits (up to
/// [`ACTIVATION_TIMEOUT`] each) until the API server calls them (see the
/// [module docs](super)). Returns the guard that deletes them.
///
/// Each webhook gets: name `<label>.<configuration>.kube-controllers-rs.test`,
/// `clientConfig.url = https://<address><path>` with `caBundle` = the spec's CA, its
/// rules, `namespaceSelector` = the spec's namespace only, failure policy, timeout,
/// `sideEffects: None`, `admissionReviewVersions: ["v1"]`, and an object selector
/// excluding [`PROBE_LABEL`] (plus its own, if set).
///
/// Takes the [`Config`] rather than a client because the guard needs one to delete the
/// configurations from its own thread on drop (a client is tied to the runtime it was
/// made on); [`TestEnv::install_webhooks`](crate::TestEnv::install_webhooks) passes it.
///
/// Errors: [`Error::InvalidRequest`] for a spec without webhooks or with a name that is
/// not a DNS label, [`Error::Kube`] when the API server refuses a configuration (the
/// message names the field), [`Error::Timeout`] when it never calls them.
pub async fn install_webhooks(config: &Config, spec: &WebhookSpec) -> Result<WebhookGuard> {
    if spec.webhooks.is_empty() {
        return Err(Error::InvalidRequest(
            "install_webhooks: the spec has no webhooks".into(),
        ));
    }
    let client = Client::try_from(config.clone())?;
    // At most 40 + 9 characters: the probe label value below must stay within 63.
    let prefix: String = spec.namespace.chars().take(40).collect();
    let configuration = random_name(&prefix);
    let domain = format!("{configuration}.{WEBHOOK_NAME_SUFFIX}");

    let mut names: Vec<(String, String)> = Vec::new();
    let mut validating = Vec::new();
    let mut mutating = Vec::new();
    for webhook in &spec.webhooks {
        let label = match &webhook.name {
            Some(label) => {
                if !is_dns_label(label) {
                    return Err(Error::InvalidRequest(format!(
                        "webhook name {label:?} is not a DNS label (lower-case alphanumerics and '-', at most 63)"
                    )));
                }
                label.clone()
            }
            None => label_from_path(&webhook.path),
        };
        let mut name = format!("{label}.{domain}");
        // Unique within the configuration (two webhooks on one path, say).
        let mut n = 1;
        while names.iter().any(|(_, taken)| *taken == name) || name.starts_with("testenv-probe.") {
            n += 1;
            name = format!("{label}-{n}.{domain}");
        }
        names.push((webhook.path.clone(), name.clone()));
        let common = Common {
            name,
            client_config: WebhookClientConfig {
                url: Some(spec.url(&webhook.path)),
                ca_bundle: Some(ByteString(spec.ca_pem.clone().into_bytes())),
                service: None,
            },
            rules: webhook.rules.clone(),
            failure_policy: webhook.failure_policy,
            timeout_seconds: webhook.timeout_seconds,
            namespace_selector: namespace_selector(&spec.namespace),
            object_selector: without_probe(webhook.object_selector.clone()),
        };
        match webhook.kind {
            WebhookKind::Validating => validating.push(common.validating()),
            WebhookKind::Mutating => mutating.push(common.mutating()),
        }
    }

    let mut guard = WebhookGuard {
        config: config.clone(),
        namespace: spec.namespace.clone(),
        validating: None,
        mutating: None,
        names,
        generation: 0,
        delete_on_drop: true,
    };
    let probe = probe_webhook(&spec.namespace, &configuration, &spec.ca_pem, 0);
    let pp = PostParams::default();
    if !validating.is_empty() {
        validating.push(probe.validating());
        let object = ValidatingWebhookConfiguration {
            metadata: meta(&configuration),
            webhooks: Some(validating),
        };
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&pp, &object)
            .await?;
        guard.validating = Some(configuration.clone());
    }
    if !mutating.is_empty() {
        mutating.push(probe.mutating());
        let object = MutatingWebhookConfiguration {
            metadata: meta(&configuration),
            webhooks: Some(mutating),
        };
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&pp, &object)
            .await?;
        guard.mutating = Some(configuration.clone());
    }
    guard.wait_until_called(&client).await?;
    Ok(guard)
}

impl WebhookGuard {
    /// The ValidatingWebhookConfiguration's name, if the spec had validating webhooks.
    pub fn validating_configuration(&self) -> Option<&str> {
        self.validating.as_deref()
    }

    /// The MutatingWebhookConfiguration's name, if the spec had mutating webhooks.
    pub fn mutating_configuration(&self) -> Option<&str> {
        self.mutating.as_deref()
    }

    /// The full names of the webhooks, in the spec's order (the API server's messages
    /// quote them: `admission webhook "<name>" denied the request: ...`).
    pub fn webhook_names(&self) -> Vec<&str> {
        self.names.iter().map(|(_, name)| name.as_str()).collect()
    }

    /// The full name of the (first) webhook serving `path`.
    pub fn webhook_name(&self, path: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, name)| name.as_str())
    }

    /// Replaces every webhook's `caBundle` with `ca_pem` (after
    /// [`WebhookCerts::rotate_with_new_ca`]) and waits until the API server uses the
    /// updated configurations.
    pub async fn set_ca_bundle(&mut self, ca_pem: &str) -> Result<()> {
        let client = Client::try_from(self.config.clone())?;
        self.generation += 1;
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let configuration = self.validating.clone().or_else(|| self.mutating.clone());
        let probe = probe_webhook(
            &self.namespace,
            configuration.as_deref().unwrap_or_default(),
            ca_pem,
            self.generation,
        );
        let pp = PostParams::default();
        if let Some(name) = &self.validating {
            let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
            let mut object = api.get(name).await?;
            let mut webhooks = object.webhooks.take().unwrap_or_default();
            webhooks.retain(|w| !is_probe(&w.name));
            for webhook in &mut webhooks {
                webhook.client_config.ca_bundle = Some(bundle.clone());
            }
            webhooks.push(probe.validating());
            object.webhooks = Some(webhooks);
            api.replace(name, &pp, &object).await?;
        }
        if let Some(name) = &self.mutating {
            let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
            let mut object = api.get(name).await?;
            let mut webhooks = object.webhooks.take().unwrap_or_default();
            webhooks.retain(|w| !is_probe(&w.name));
            for webhook in &mut webhooks {
                webhook.client_config.ca_bundle = Some(bundle.clone());
            }
            webhooks.push(probe.mutating());
            object.webhooks = Some(webhooks);
            api.replace(name, &pp, &object).await?;
        }
        self.wait_until_called(&client).await
    }

    /// Deletes the configurations now (instead of on drop) and reports errors.
    pub async fn delete(mut self) -> Result<()> {
        self.delete_on_drop = false;
        let client = Client::try_from(self.config.clone())?;
        delete_configurations(&client, self.validating.take(), self.mutating.take()).await
    }

    /// Keeps the configurations after the test (for debugging).
    pub fn keep(mut self) {
        self.delete_on_drop = false;
    }

    /// Dry-runs the create of each configuration's probe ConfigMap until the API server
    /// refuses it naming the current probe webhook.
    async fn wait_until_called(&self, client: &Client) -> Result<()> {
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &self.namespace);
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        for (kind, name) in [
            ("validating", &self.validating),
            ("mutating", &self.mutating),
        ] {
            let Some(name) = name else { continue };
            let probe = probe_name(name);
            let value = probe_value(name, kind, self.generation);
            let object = ConfigMap {
                metadata: ObjectMeta {
                    name: Some("testenv-webhook-probe".into()),
                    labels: Some([(PROBE_LABEL.to_string(), value)].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            wait_for(
                &format!("the API server to call the {kind} webhook configuration {name}"),
                ACTIVATION_TIMEOUT,
                || async {
                    Ok::<_, String>(match config_maps.create(&dry_run, &object).await {
                        Err(kube::Error::Api(status)) if status.message.contains(&probe) => {
                            Check::Ready(())
                        }
                        Ok(_) => {
                            Check::Pending("a probe object was admitted without a call".into())
                        }
                        Err(e) => Check::Pending(format!("probe refused otherwise: {e}")),
                    })
                },
            )
            .await?;
        }
        Ok(())
    }
}

impl Drop for WebhookGuard {
    fn drop(&mut self) {
        if !self.delete_on_drop || (self.validating.is_none() && self.mutating.is_none()) {
            return;
        }
        let (validating, mutating) = (self.validating.take(), self.mutating.take());
        let config = self.config.clone();
        // Own thread + runtime: we may be inside (and blocking) a runtime.
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let client = Client::try_from(config).ok()?;
                let names = format!("{validating:?}/{mutating:?}");
                let delete = delete_configurations(&client, validating, mutating);
                match tokio::time::timeout(Duration::from_secs(10), delete).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(configurations = %names, error = %e, "deleting webhook configurations")
                    }
                    Err(_) => {
                        tracing::warn!(configurations = %names, "timed out deleting webhook configurations")
                    }
                }
                Some(())
            })
        });
        let _ = handle.join();
    }
}

pub(super) async fn delete_configurations(
    client: &Client,
    validating: Option<String>,
    mutating: Option<String>,
) -> Result<()> {
    let dp = DeleteParams::default();
    if let Some(name) = validating {
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .delete(&name, &dp)
            .await?;
    }
    if let Some(name) = mutating {
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .delete(&name, &dp)
            .await?;
    }
    Ok(())
}

/// The fields validating and mutating webhooks share.
pub(super) struct Common {
    pub(super) name: String,
    pub(super) client_config: WebhookClientConfig,
    pub(super) rules: Vec<RuleWithOperations>,
    pub(super) failure_policy: FailurePolicy,
    pub(super) timeout_seconds: i32,
    pub(super) namespace_selector: LabelSelector,
    pub(super) object_selector: LabelSelector,
}

impl Common {
    fn validating(&self) -> ValidatingWebhook {
        ValidatingWebhook {
            name: self.name.clone(),
            client_config: self.client_config.clone(),
            rules: Some(self.rules.clone()),
            failure_policy: Some(self.failure_policy.as_str().into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(self.timeout_seconds),
            namespace_selector: Some(self.namespace_selector.clone()),
            object_selector: Some(self.object_selector.clone()),
            ..ValidatingWebhook::default()
        }
    }

    fn mutating(&self) -> MutatingWebhook {
        MutatingWebhook {
            name: self.name.clone(),
            client_config: self.client_config.clone(),
            rules: Some(self.rules.clone()),
            failure_policy: Some(self.failure_policy.as_str().into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(self.timeout_seconds),
            namespace_selector: Some(self.namespace_selector.clone()),
            object_selector: Some(self.object_selector.clone()),
            ..MutatingWebhook::default()
        }
    }
}

pub(super) fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some([("testenv".to_string(), "true".to_string())].into()),
        ..ObjectMeta::default()
    }
}

/// Matches only `namespace`, by the label the API server sets on every namespace.
pub(super) fn namespace_selector(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(
            [(
                "kubernetes.io/metadata.name".to_string(),
                namespace.to_string(),
            )]
            .into(),
        ),
        match_expressions: None,
    }
}

/// `selector` (or everything) minus the objects carrying [`PROBE_LABEL`].
pub(super) fn without_probe(selector: Option<LabelSelector>) -> LabelSelector {
    let mut selector = selector.unwrap_or_default();
    selector
        .match_expressions
        .get_or_insert_with(Vec::new)
        .push(LabelSelectorRequirement {
            key: PROBE_LABEL.to_string(),
            operator: "DoesNotExist".to_string(),
            values: None,
        });
    selector
}

pub(super) fn probe_name(configuration: &str) -> String {
    format!("testenv-probe.{configuration}.{WEBHOOK_NAME_SUFFIX}")
}

pub(super) fn is_probe(name: &str) -> bool {
    name.starts_with("testenv-probe.")
}

/// The probe label value of one configuration version (at most 63 characters: the
/// configuration name is at most 49).
pub(super) fn probe_value(configuration: &str, kind: &str, generation: u32) -> String {
    format!("{configuration}-{}{generation}", &kind[..1])
}

/// The probe webhook of `configuration` (at `generation`): ConfigMap creates carrying
/// its label, sent to a closed port, failure policy Fail. The label value differs per
/// kind, so the mutating and the validating probe are waited for separately.
pub(super) struct Probe {
    pub(super) common: Common,
    pub(super) configuration: String,
    pub(super) generation: u32,
}

impl Probe {
    fn validating(&self) -> ValidatingWebhook {
        let mut webhook = self.common.validating();
        webhook.object_selector = Some(self.selector("validating"));
        webhook
    }

    fn mutating(&self) -> MutatingWebhook {
        let mut webhook = self.common.mutating();
        webhook.object_selector = Some(self.selector("mutating"));
        webhook
    }

    fn selector(&self, kind: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(
                [(
                    PROBE_LABEL.to_string(),
                    probe_value(&self.configuration, kind, self.generation),
                )]
                .into(),
            ),
            match_expressions: None,
        }
    }
}

pub(super) fn probe_webhook(
    namespace: &str,
    configuration: &str,
    ca_pem: &str,
    generation: u32,
) -> Probe {
    Probe {
        common: Common {
            name: probe_name(configuration),
            client_config: WebhookClientConfig {
                url: Some(PROBE_URL.to_string()),
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                service: None,
            },
            rules: vec![RuleWithOperations {
                api_groups: Some(vec![String::new()]),
                api_versions: Some(vec!["v1".into()]),
                resources: Some(vec!["configmaps".into()]),
                operations: Some(vec!["CREATE".into()]),
                scope: None,
            }],
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 2,
            namespace_selector: namespace_selector(namespace),
            // Replaced by the kind's selector.
            object_selector: LabelSelector::default(),
        },
        configuration: configuration.to_string(),
        generation,
    }
}

pub(super) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS label from a webhook path: `/validate--v1-configmap` -> `validate--v1-configmap`.
pub(super) fn label_from_path(path: &str) -> String {
    let mut label: String = path
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    label.truncate(63);
    let label = label.trim_matches('-');
    if label.is_empty() {
        "webhook".to_string()
    } else {
        label.to_string()
    }
}
