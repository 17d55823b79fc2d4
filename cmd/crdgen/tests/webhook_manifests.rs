//! The admission webhook manifests of `deploy/sample-controller`, `deploy/vm-controller`
//! and `deploy/myweb-operator`, checked against the code and against each other, the way
//! `kubectl apply -k` would put them together (no cluster, no kubectl: YAML into typed
//! k8s-openapi objects).
//!
//! For each directory: every file its kustomization.yaml lists exists and holds known
//! objects, each a typed object that serialises back to exactly the YAML (a misspelt or
//! misplaced field fails); then the chain the API server follows when it calls a webhook:
//!
//! ```text
//! webhook configuration ─ rules (group/version/plural/scope of the CRD in crates/controllers/apis),
//!   │                     failurePolicy Fail, sideEffects None, the controller's namespace
//!   │                     not selected, cert-manager.io/inject-ca-from = the Certificate
//!   ├ clientConfig.service.path == webhook::{validate,mutate}_path::<K>()
//!   └ clientConfig.service ──► Service (selector = the pod template's labels)
//!                                 └ targetPort ──► containerPort == --webhook-bind-address port
//! Certificate (dnsNames = the Service's) ── secretName ──► Secret volume mounted at the
//!                                                           --webhook-cert-dir the flags give
//! ```
//!
//! Lives in crdgen (the binary that writes deploy/crds) rather than in one of the
//! controllers: it checks all three directories, and needs none of the controller
//! binaries built.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use apis::cloudnative::v1alpha1::VirtualMachine;
use apis::operator::v1::MyWeb;
use apis::samplecontroller::v1alpha1::Foo;
use clap::{CommandFactory, Parser};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The annotation cert-manager's cainjector reads: `<namespace>/<Certificate name>`.
const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";

#[test]
fn sample_controller_webhook_manifests() {
    check(
        "sample-controller",
        &[expect::<Foo>(
            Type::Validating,
            "vfoo.samplecontroller.k8s.io",
            &["CREATE", "UPDATE"],
        )],
    );
}

#[test]
fn vm_controller_webhook_manifests() {
    check(
        "vm-controller",
        &[
            expect::<VirtualMachine>(
                Type::Mutating,
                "mvirtualmachine.cloudnative.tw",
                &["CREATE"],
            ),
            expect::<VirtualMachine>(
                Type::Validating,
                "vvirtualmachine.cloudnative.tw",
                &["CREATE", "UPDATE"],
            ),
        ],
    );
}

#[test]
fn myweb_operator_webhook_manifests() {
    check(
        "myweb-operator",
        &[expect::<MyWeb>(
            Type::Validating,
            "vmyweb.operator.k8s-summit.org",
            &["CREATE", "UPDATE"],
        )],
    );
}

/// The loader refuses what `kubectl apply -k` would refuse: a listed file that does not
/// exist, and an object it does not know or that has a field its type lacks.
#[test]
fn broken_kustomizations_are_refused() {
    let dir = std::env::temp_dir().join(format!("webhook-manifests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write(
        "namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
    );

    write(
        "kustomization.yaml",
        "resources:\n  - namespace.yaml\n  - webhook.yaml\n",
    );
    let err = load(&dir).unwrap_err();
    assert!(
        format!("{err:#}").contains("webhook.yaml"),
        "a missing file must be named: {err:#}"
    );

    write(
        "webhook.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  selectr: {}\n",
    );
    let err = load(&dir).unwrap_err();
    assert!(
        format!("{err:#}").contains("selectr"),
        "a misspelt field must be reported: {err:#}"
    );

    write(
        "webhook.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    assert!(load(&dir).is_err(), "an unknown kind must be refused");

    write(
        "webhook.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
    );
    assert_eq!(load(&dir).unwrap().services.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Which configuration a webhook belongs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Type {
    Validating,
    Mutating,
}

/// One webhook as the code serves it.
#[derive(Debug)]
struct Expected {
    kind: Type,
    name: &'static str,
    /// `webhook::validate_path::<K>()` or `webhook::mutate_path::<K>()`.
    path: String,
    group: String,
    version: String,
    plural: String,
    operations: &'static [&'static str],
}

fn expect<K: kube::Resource<DynamicType = ()>>(
    kind: Type,
    name: &'static str,
    operations: &'static [&'static str],
) -> Expected {
    Expected {
        kind,
        name,
        path: match kind {
            Type::Validating => webhook::validate_path::<K>(),
            Type::Mutating => webhook::mutate_path::<K>(),
        },
        group: K::group(&()).into_owned(),
        version: K::version(&()).into_owned(),
        plural: K::plural(&()).into_owned(),
        operations,
    }
}

/// A webhook of either configuration, with what the checks need.
struct Webhook<'a> {
    kind: Type,
    name: &'a str,
    configuration: &'a ObjectMeta,
    service: Option<&'a ServiceReference>,
    url: Option<&'a str>,
    rules: Option<&'a Vec<RuleWithOperations>>,
    failure_policy: Option<&'a str>,
    side_effects: &'a str,
    admission_review_versions: &'a [String],
    timeout_seconds: Option<i32>,
    match_policy: Option<&'a str>,
    namespace_selector: Option<&'a LabelSelector>,
}

fn check(component: &str, expected: &[Expected]) {
    let dir = deploy_dir().join(component);
    let m = load(&dir).unwrap_or_else(|err| panic!("{}: {err:#}", dir.display()));

    let [namespace] = &m.namespaces[..] else {
        panic!("{component}: expected one Namespace");
    };
    let ns = namespace.metadata.name.as_deref().expect("namespace name");
    let [deployment] = &m.deployments[..] else {
        panic!("{component}: expected one Deployment");
    };
    assert_eq!(deployment.metadata.namespace.as_deref(), Some(ns));
    let deployment_spec = &deployment.spec;
    let pod_labels = deployment_spec
        .template
        .metadata
        .as_ref()
        .and_then(|meta| meta.labels.clone())
        .unwrap_or_default();
    let pod = deployment_spec.template.spec.as_ref().expect("pod spec");
    let [container] = &pod.containers[..] else {
        panic!("{component}: expected one container");
    };

    // The webhook server as the container's flags configure it (webhook::WebhookArgs).
    let flags = webhook_flags(container);
    let (_, bind_port) = flags.webhook_bind_address.host_port().unwrap_or_else(|| {
        panic!("{component}: the webhook server is disabled (--webhook-bind-address)")
    });
    let webhook_port = container
        .ports
        .iter()
        .flatten()
        .find(|port| port.container_port == i32::from(bind_port))
        .unwrap_or_else(|| panic!("{component}: no containerPort {bind_port}"));
    assert_eq!(bind_port, 9443, "{component}: kubebuilder's webhook port");
    assert_eq!(webhook_port.name.as_deref(), Some("webhook-server"));
    assert_eq!(webhook_port.protocol.as_deref().unwrap_or("TCP"), "TCP");

    // Its certificate: the Certificate's Secret, mounted read-only where the flags look.
    let server = flags.server();
    let cert_dir = server.cert_path().parent().unwrap().to_path_buf();
    assert_eq!(server.key_path().parent(), Some(cert_dir.as_path()));
    let [certificate] = &m.certificates[..] else {
        panic!("{component}: expected one Certificate");
    };
    let certificate_name = certificate.metadata.name.as_deref().unwrap();
    assert_eq!(certificate.metadata.namespace.as_deref(), Some(ns));
    let mount = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|mount| Path::new(&mount.mount_path) == cert_dir)
        .unwrap_or_else(|| panic!("{component}: nothing mounted at {}", cert_dir.display()));
    assert_eq!(
        mount.read_only,
        Some(true),
        "{component}: the key is read-only"
    );
    assert_eq!(mount.sub_path, None);
    let volume = pod
        .volumes
        .iter()
        .flatten()
        .find(|volume| volume.name == mount.name)
        .unwrap_or_else(|| panic!("{component}: no volume {}", mount.name));
    let secret = volume
        .secret
        .as_ref()
        .unwrap_or_else(|| panic!("{component}: volume {} is not a Secret", mount.name));
    assert_eq!(
        secret.secret_name.as_deref(),
        Some(certificate.spec.secret_name.as_str()),
        "{component}: the mounted Secret is the Certificate's"
    );
    // cert-manager's kubernetes.io/tls Secret holds tls.crt and tls.key; no remapping.
    assert_eq!(secret.items, None);
    let file_name = |path: PathBuf| path.file_name().unwrap().to_str().unwrap().to_owned();
    assert_eq!(file_name(server.cert_path()), "tls.crt");
    assert_eq!(file_name(server.key_path()), "tls.key");

    // The Certificate is issued by an Issuer of this directory.
    let issuer_ref = &certificate.spec.issuer_ref;
    assert_eq!(issuer_ref.kind.as_deref().unwrap_or("Issuer"), "Issuer");
    assert_eq!(
        issuer_ref.group.as_deref().unwrap_or("cert-manager.io"),
        "cert-manager.io"
    );
    let issuer = m
        .issuers
        .iter()
        .find(|issuer| issuer.metadata.name.as_deref() == Some(issuer_ref.name.as_str()))
        .unwrap_or_else(|| panic!("{component}: no Issuer {}", issuer_ref.name));
    assert_eq!(issuer.metadata.namespace.as_deref(), Some(ns));
    assert!(
        issuer.spec.self_signed.is_some() || issuer.spec.ca.is_some(),
        "{component}: the Issuer is selfSigned or ca"
    );

    // Every webhook, checked against what the code serves; none unaccounted for.
    let webhooks: Vec<Webhook<'_>> = m
        .validating
        .iter()
        .flat_map(|config| {
            config.webhooks.iter().flatten().map(|w| Webhook {
                kind: Type::Validating,
                name: &w.name,
                configuration: &config.metadata,
                service: w.client_config.service.as_ref(),
                url: w.client_config.url.as_deref(),
                rules: w.rules.as_ref(),
                failure_policy: w.failure_policy.as_deref(),
                side_effects: &w.side_effects,
                admission_review_versions: &w.admission_review_versions,
                timeout_seconds: w.timeout_seconds,
                match_policy: w.match_policy.as_deref(),
                namespace_selector: w.namespace_selector.as_ref(),
            })
        })
        .chain(m.mutating.iter().flat_map(|config| {
            config.webhooks.iter().flatten().map(|w| Webhook {
                kind: Type::Mutating,
                name: &w.name,
                configuration: &config.metadata,
                service: w.client_config.service.as_ref(),
                url: w.client_config.url.as_deref(),
                rules: w.rules.as_ref(),
                failure_policy: w.failure_policy.as_deref(),
                side_effects: &w.side_effects,
                admission_review_versions: &w.admission_review_versions,
                timeout_seconds: w.timeout_seconds,
                match_policy: w.match_policy.as_deref(),
                namespace_selector: w.namespace_selector.as_ref(),
            })
        }))
        .collect();
    let found: BTreeSet<String> = webhooks
        .iter()
        .map(|w| format!("{:?} {}", w.kind, w.name))
        .collect();
    let wanted: BTreeSet<String> = expected
        .iter()
        .map(|e| format!("{:?} {}", e.kind, e.name))
        .collect();
    assert_eq!(found, wanted, "{component}: the webhooks in the manifests");
    let crds = apis::crds();
    for want in expected {
        let w = webhooks
            .iter()
            .find(|w| w.kind == want.kind && w.name == want.name)
            .unwrap();
        let what = format!("{component}: {:?} webhook {}", w.kind, w.name);

        // cert-manager injects the caBundle from this directory's Certificate.
        assert_eq!(
            w.configuration
                .annotations
                .as_ref()
                .and_then(|a| a.get(INJECT_CA_FROM))
                .map(String::as_str),
            Some(format!("{ns}/{certificate_name}").as_str()),
            "{what}: {INJECT_CA_FROM}"
        );

        // Called at the code's path, through the Service in front of the Deployment.
        assert_eq!(w.url, None, "{what}: called through its Service");
        let service_ref = w
            .service
            .unwrap_or_else(|| panic!("{what}: no clientConfig.service"));
        assert_eq!(
            service_ref.path.as_deref(),
            Some(want.path.as_str()),
            "{what}"
        );
        assert_eq!(service_ref.namespace, ns, "{what}: the Service's namespace");
        let service = m
            .services
            .iter()
            .find(|s| s.metadata.name.as_deref() == Some(service_ref.name.as_str()))
            .unwrap_or_else(|| panic!("{what}: no Service {}", service_ref.name));
        assert_eq!(service.metadata.namespace.as_deref(), Some(ns));
        let service_spec = service.spec.as_ref().expect("service spec");
        let selector = service_spec
            .selector
            .as_ref()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| panic!("{what}: the Service selects no Pods"));
        for (key, value) in selector {
            assert_eq!(
                pod_labels.get(key),
                Some(value),
                "{what}: the Service's selector {key}={value} on the Deployment's Pods"
            );
        }
        let port = service_ref.port.unwrap_or(443);
        let service_port = service_spec
            .ports
            .iter()
            .flatten()
            .find(|p| p.port == port)
            .unwrap_or_else(|| panic!("{what}: the Service has no port {port}"));
        assert_eq!(service_port.name.as_deref(), Some("webhook-server"));
        match &service_port.target_port {
            Some(IntOrString::Int(target)) => assert_eq!(*target, webhook_port.container_port),
            Some(IntOrString::String(target)) => {
                assert_eq!(Some(target), webhook_port.name.as_ref())
            }
            None => assert_eq!(port, webhook_port.container_port),
        }

        // The Certificate is valid for the name the API server dials.
        let host = format!("{}.{ns}.svc", service_ref.name);
        for name in [host.clone(), format!("{host}.cluster.local")] {
            assert!(
                certificate.spec.dns_names.contains(&name),
                "{what}: the Certificate's dnsNames lack {name}"
            );
        }

        // The rule: the CRD's group, a served version, its plural (not /status), scope.
        let [rule] = w.rules.map(Vec::as_slice).unwrap_or_default() else {
            panic!("{what}: expected one rule");
        };
        assert_eq!(rule.api_groups.as_deref(), Some(&[want.group.clone()][..]));
        assert_eq!(
            rule.api_versions.as_deref(),
            Some(&[want.version.clone()][..])
        );
        assert_eq!(rule.resources.as_deref(), Some(&[want.plural.clone()][..]));
        let operations: BTreeSet<&str> = rule
            .operations
            .iter()
            .flatten()
            .map(String::as_str)
            .collect();
        assert_eq!(
            operations,
            want.operations.iter().copied().collect(),
            "{what}: operations"
        );
        let crd = crds
            .iter()
            .find(|crd| crd.spec.group == want.group && crd.spec.names.plural == want.plural)
            .unwrap_or_else(|| panic!("{what}: no CRD for {}.{}", want.plural, want.group));
        assert!(
            crd.spec
                .versions
                .iter()
                .any(|v| v.name == want.version && v.served),
            "{what}: {} is not served",
            want.version
        );
        assert_eq!(
            rule.scope.as_deref(),
            Some(crd.spec.scope.as_str()),
            "{what}"
        );

        // The API server's behaviour around the call.
        assert_eq!(w.failure_policy, Some("Fail"), "{what}: failurePolicy");
        assert_eq!(w.side_effects, "None", "{what}: sideEffects");
        assert_eq!(w.admission_review_versions, ["v1"], "{what}");
        assert_eq!(w.timeout_seconds, Some(10), "{what}: timeoutSeconds");
        assert_eq!(w.match_policy, Some("Equivalent"), "{what}: matchPolicy");

        // Every namespace but the controller's own (labelled by the API server).
        let selector = w
            .namespace_selector
            .unwrap_or_else(|| panic!("{what}: no namespaceSelector"));
        let namespace_labels =
            |name: &str| BTreeMap::from([("kubernetes.io/metadata.name".into(), name.into())]);
        assert!(
            !selects(selector, &namespace_labels(ns)),
            "{what}: selects its own namespace {ns}"
        );
        for other in ["default", "kube-system", "team-a"] {
            assert!(
                selects(selector, &namespace_labels(other)),
                "{what}: does not select namespace {other}"
            );
        }
    }
}

/// `deploy/`.
fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// The flags of a webhook server (the binaries flatten `webhook::WebhookArgs`).
#[derive(Debug, Parser)]
struct Flags {
    #[command(flatten)]
    webhook: webhook::WebhookArgs,
}

/// The container's webhook settings as the binary would resolve them: a flag in `args`,
/// else its environment variable in `env`, else clap's default. Taken from the flags'
/// definitions, so that a renamed flag or variable fails here. (Not the test process's
/// own environment: every value is passed explicitly.)
fn webhook_flags(container: &Container) -> webhook::WebhookArgs {
    let args = container.args.clone().unwrap_or_default();
    let command = Flags::command();
    let known: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    for arg in &args {
        if let Some(flag) = arg.strip_prefix("--webhook-") {
            let long = format!("webhook-{}", flag.split('=').next().unwrap());
            assert!(
                known.contains(&long.as_str()),
                "{arg}: not a flag of webhook::WebhookArgs ({known:?})"
            );
        }
    }
    let mut argv = vec!["controller".to_owned()];
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if !arg.get_action().takes_values() {
            continue;
        }
        let flag = format!("--{long}");
        let from_args = args.iter().enumerate().find_map(|(i, a)| {
            if a == &flag {
                args.get(i + 1).cloned()
            } else {
                a.strip_prefix(&format!("{flag}=")).map(str::to_owned)
            }
        });
        let from_env = arg.get_env().and_then(|name| {
            container.env.iter().flatten().find_map(|var| {
                (var.name.as_str() == name).then(|| {
                    var.value
                        .clone()
                        .expect("a literal value for a webhook setting")
                })
            })
        });
        let default = arg
            .get_default_values()
            .first()
            .map(|v| v.to_string_lossy().into_owned());
        if let Some(value) = from_args.or(from_env).or(default) {
            argv.push(format!("{flag}={value}"));
        }
    }
    Flags::try_parse_from(&argv)
        .unwrap_or_else(|err| panic!("{argv:?}: {err}"))
        .webhook
}

/// Whether `selector` selects an object with `labels` (metav1.LabelSelectorAsSelector).
fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions_match = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        match (e.operator.as_str(), labels.get(&e.key)) {
            ("In", Some(value)) => values.contains(value),
            ("In", None) => false,
            ("NotIn", Some(value)) => !values.contains(value),
            ("NotIn", None) => true,
            ("Exists", found) => found.is_some(),
            ("DoesNotExist", found) => found.is_none(),
            (operator, _) => panic!("unknown selector operator {operator}"),
        }
    });
    labels_match && expressions_match
}

/// cert-manager's `Issuer` and `Certificate` (cert-manager.io/v1), the fields used here;
/// any other field fails the round trip in [`load`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertManager<Spec> {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    spec: Spec,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssuerSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    self_signed: Option<BTreeMap<String, serde_yaml::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ca: Option<CaIssuer>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CaIssuer {
    secret_name: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateSpec {
    dns_names: Vec<String>,
    issuer_ref: IssuerRef,
    secret_name: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssuerRef {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<String>,
}

/// The objects of one kustomization, by kind.
#[derive(Debug, Default)]
struct Manifests {
    namespaces: Vec<Namespace>,
    deployments: Vec<Deployment>,
    services: Vec<Service>,
    validating: Vec<ValidatingWebhookConfiguration>,
    mutating: Vec<MutatingWebhookConfiguration>,
    issuers: Vec<CertManager<IssuerSpec>>,
    certificates: Vec<CertManager<CertificateSpec>>,
}

/// Every object of every file `dir/kustomization.yaml` lists, typed.
fn load(dir: &Path) -> anyhow::Result<Manifests> {
    let path = dir.join("kustomization.yaml");
    let kustomization: serde_yaml::Value = serde_yaml::from_str(
        &std::fs::read_to_string(&path).with_context(|| path.display().to_string())?,
    )
    .with_context(|| path.display().to_string())?;
    let resources = kustomization["resources"]
        .as_sequence()
        .context("kustomization.yaml: no resources")?;
    let mut m = Manifests::default();
    for resource in resources {
        let file = resource
            .as_str()
            .context("a resource that is not a string")?;
        let path = dir.join(file);
        ensure!(
            path.is_file(),
            "kustomization.yaml lists {file}, which does not exist"
        );
        let text = std::fs::read_to_string(&path)?;
        for (i, document) in serde_yaml::Deserializer::from_str(&text).enumerate() {
            let object = serde_yaml::Value::deserialize(document)
                .with_context(|| format!("{file}: document {i}"))?;
            if object.is_null() {
                continue; // an empty document (a leading or trailing `---`)
            }
            let kind = object["kind"].as_str().unwrap_or_default().to_owned();
            let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
            let what = format!("{file}: {api_version} {kind} (document {i})");
            match (api_version.as_str(), kind.as_str()) {
                ("v1", "Namespace") => m.namespaces.push(typed(object, &what)?),
                ("v1", "Service") => m.services.push(typed(object, &what)?),
                ("v1", "ServiceAccount") => {
                    typed::<ServiceAccount>(object, &what)?;
                }
                ("apps/v1", "Deployment") => m.deployments.push(typed(object, &what)?),
                ("rbac.authorization.k8s.io/v1", "ClusterRole") => {
                    typed::<ClusterRole>(object, &what)?;
                }
                ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
                    typed::<ClusterRoleBinding>(object, &what)?;
                }
                ("rbac.authorization.k8s.io/v1", "Role") => {
                    typed::<Role>(object, &what)?;
                }
                ("rbac.authorization.k8s.io/v1", "RoleBinding") => {
                    typed::<RoleBinding>(object, &what)?;
                }
                ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
                    m.validating.push(typed(object, &what)?)
                }
                ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
                    m.mutating.push(typed(object, &what)?)
                }
                ("cert-manager.io/v1", "Issuer") => m.issuers.push(typed(object, &what)?),
                ("cert-manager.io/v1", "Certificate") => m.certificates.push(typed(object, &what)?),
                _ => bail!("{what}: not a kind this test knows"),
            }
        }
    }
    Ok(m)
}

/// `object` as a `T`, which must serialise back to exactly `object`: a field `T` does not
/// have (misspelt, or at the wrong level) would otherwise be dropped without a word, as
/// the API server drops it.
fn typed<T: DeserializeOwned + Serialize>(
    object: serde_yaml::Value,
    what: &str,
) -> anyhow::Result<T> {
    let typed: T = serde_yaml::from_value(object.clone()).with_context(|| what.to_owned())?;
    let back = serde_yaml::to_value(&typed)?;
    if back != object {
        bail!(
            "{what}: fields that are not in the type, or are spelt differently:\n{}",
            difference(&object, &back, "").join("\n")
        );
    }
    Ok(typed)
}

/// Where `written` and `typed` differ, as `.a.b[2].c: written / typed` lines.
fn difference(written: &serde_yaml::Value, typed: &serde_yaml::Value, at: &str) -> Vec<String> {
    use serde_yaml::Value::{Mapping, Sequence};
    match (written, typed) {
        (Mapping(a), Mapping(b)) => {
            let keys: BTreeSet<String> = a
                .keys()
                .chain(b.keys())
                .map(|k| k.as_str().unwrap_or("?").to_owned())
                .collect();
            keys.into_iter()
                .flat_map(|key| {
                    let null = serde_yaml::Value::Null;
                    let x = a.get(key.as_str()).unwrap_or(&null);
                    let y = b.get(key.as_str()).unwrap_or(&null);
                    difference(x, y, &format!("{at}.{key}"))
                })
                .collect()
        }
        (Sequence(a), Sequence(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .flat_map(|(i, (x, y))| difference(x, y, &format!("{at}[{i}]")))
            .collect(),
        (a, b) if a == b => vec![],
        (a, b) => vec![format!("{at}: written {a:?} / typed {b:?}")],
    }
}
