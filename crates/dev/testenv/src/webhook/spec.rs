//! What to install: webhooks, their rules and policies (see the [module docs](super)).

use std::net::SocketAddr;

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

// ---------------------------------------------------------------- configurations --

/// Validating or mutating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    /// In a `ValidatingWebhookConfiguration`.
    Validating,
    /// In a `MutatingWebhookConfiguration`.
    Mutating,
}

/// What the API server does when it cannot call the webhook (or gets no valid answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse the request (kubebuilder's and this crate's default).
    #[default]
    Fail,
    /// Admit the request as if the webhook did not exist.
    Ignore,
}

impl FailurePolicy {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }
}

/// One webhook of a [`WebhookSpec`]: a path on the test's webhook server and the
/// requests routed to it. `sideEffects: None` and `admissionReviewVersions: ["v1"]`
/// always; failure policy `Fail` and a 5 s timeout unless set.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub(super) kind: WebhookKind,
    pub(super) path: String,
    pub(super) name: Option<String>,
    pub(super) rules: Vec<RuleWithOperations>,
    pub(super) failure_policy: FailurePolicy,
    pub(super) timeout_seconds: i32,
    pub(super) object_selector: Option<LabelSelector>,
}

impl Webhook {
    /// A validating webhook served at `path` (e.g. `webhook::validate_path::<K>()`).
    pub fn validating(path: impl Into<String>) -> Self {
        Self::new(WebhookKind::Validating, path.into())
    }

    /// A mutating webhook served at `path` (e.g. `webhook::mutate_path::<K>()`).
    pub fn mutating(path: impl Into<String>) -> Self {
        Self::new(WebhookKind::Mutating, path.into())
    }

    fn new(kind: WebhookKind, path: String) -> Self {
        Self {
            kind,
            path,
            name: None,
            rules: Vec::new(),
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 5,
            object_selector: None,
        }
    }

    /// Routes `operations` (`"CREATE"`, `"UPDATE"`, `"DELETE"`, `"CONNECT"` or `"*"`) on
    /// `resource` (plural, e.g. `"configmaps"`, `"foos/status"`) of `api_group`
    /// (`""` for core) / `api_version` to this webhook.
    pub fn rule(
        mut self,
        api_group: &str,
        api_version: &str,
        resource: &str,
        operations: &[&str],
    ) -> Self {
        let strings = |s: &[&str]| Some(s.iter().map(|s| s.to_string()).collect());
        self.rules.push(RuleWithOperations {
            api_groups: strings(&[api_group]),
            api_versions: strings(&[api_version]),
            resources: strings(&[resource]),
            operations: strings(operations),
            scope: None,
        });
        self
    }

    /// [`rule`](Self::rule) for `K`'s group, version and plural.
    pub fn for_resource<K: kube::Resource<DynamicType = ()>>(self, operations: &[&str]) -> Self {
        let (group, version, plural) = (K::group(&()), K::version(&()), K::plural(&()));
        self.rule(&group, &version, &plural, operations)
    }

    /// The first segment of the webhook's name (default: derived from the path), e.g.
    /// `vfoo` for `vfoo.<configuration>.kube-controllers-rs.test`. A DNS label.
    pub fn name(mut self, label: impl Into<String>) -> Self {
        self.name = Some(label.into());
        self
    }

    /// What the API server does when the call fails (default [`FailurePolicy::Fail`]).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.failure_policy = policy;
        self
    }

    /// How long the API server waits for an answer, 1 to 30 s (default 5).
    pub fn timeout_seconds(mut self, seconds: i32) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// Only objects matching `selector` are sent (needed to isolate webhooks on
    /// cluster-scoped resources, which the namespace selector does not filter).
    pub fn object_selector(mut self, selector: LabelSelector) -> Self {
        self.object_selector = Some(selector);
        self
    }

    /// Validating or mutating.
    pub fn kind(&self) -> WebhookKind {
        self.kind
    }

    /// The path on the webhook server.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// The webhooks one test installs: where its webhook server listens, the CA that signed
/// its certificate, the one namespace whose requests go to it, and the webhooks.
#[derive(Debug, Clone)]
pub struct WebhookSpec {
    pub(super) namespace: String,
    pub(super) address: SocketAddr,
    pub(super) ca_pem: String,
    pub(super) webhooks: Vec<Webhook>,
}

impl WebhookSpec {
    /// Webhooks for requests in `namespace`, served at `https://<address><path>` with a
    /// certificate `ca_pem` signed (e.g. [`WebhookCerts::ca_pem`](super::WebhookCerts::ca_pem)).
    pub fn new(
        namespace: impl Into<String>,
        address: SocketAddr,
        ca_pem: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            address,
            ca_pem: ca_pem.into(),
            webhooks: Vec::new(),
        }
    }

    /// Adds `webhook` (validating ones go to the ValidatingWebhookConfiguration, in
    /// order, mutating ones to the MutatingWebhookConfiguration).
    pub fn webhook(mut self, webhook: Webhook) -> Self {
        self.webhooks.push(webhook);
        self
    }

    /// The namespace whose requests are sent to the webhooks.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `https://<address><path>`: the URL the API server calls for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }
}
