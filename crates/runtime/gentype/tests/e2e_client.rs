//! e2e: the typed client on a real kube-apiserver (crates/dev/testenv). On the protobuf
//! wire a built-in type's create and replace bodies are protobuf and every answer
//! (errors included) comes back in protobuf; a patch body stays JSON; what the server
//! stores is what a JSON client reads back; a type without a codec, and the JSON wire,
//! speak JSON. The wire of every request is read off the HTTP exchange itself
//! (`testenv::inject::ResponseLog`), not taken from the client's word.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, Namespace, PodSpec, PodTemplateSpec, Service, ServicePort,
    ServiceSpec, ServiceStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use testenv::TestEnv;
use testenv::inject::{LoggedResponse, ResponseLog};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([("app".into(), "web".into())])),
        annotations: Some(BTreeMap::from([("note".into(), "".into())])),
        ..ObjectMeta::default()
    }
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name),
        data: Some(BTreeMap::from([(
            "index.html".into(),
            "<h1>hi</h1>".into(),
        )])),
        binary_data: Some(BTreeMap::from([(
            "blob".into(),
            ByteString(vec![0, 159, 255]),
        )])),
        ..ConfigMap::default()
    }
}

fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    Deployment {
        metadata: meta(name),
        spec: DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:1.27".into()),
                        ports: Some(vec![ContainerPort {
                            container_port: 80,
                            ..ContainerPort::default()
                        }]),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

fn service(name: &str) -> Service {
    Service {
        metadata: meta(name),
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([("app".to_string(), name.to_string())])),
            ports: Some(vec![ServicePort {
                port: 80,
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// A client on `env`'s control plane whose every exchange `log` records.
fn logged_client(env: &TestEnv) -> anyhow::Result<(ResponseLog, kube::Client)> {
    let log = ResponseLog::new();
    let client = kube::client::ClientBuilder::try_from(env.config().clone())?
        .with_layer(&log)
        .build();
    Ok((log, client))
}

/// The wires of the last exchange: (request body's content type, answer's).
fn last(log: &ResponseLog) -> LoggedResponse {
    log.entries().pop().expect("a request was made")
}

fn is(content_type: &Option<String>, media: &str) -> bool {
    content_type
        .as_deref()
        .is_some_and(|c| c.split(';').next() == Some(media))
}

#[tokio::test]
async fn built_in_types_go_over_protobuf_and_read_back_as_json_gives_the_same() -> anyhow::Result<()>
{
    let env = TestEnv::with_prefix("gentype").await?;
    let ns = env.namespace();
    let (log, client) = logged_client(&env)?;
    let json = env.client().clone();
    let post = PostParams::default();

    // A create: protobuf out, protobuf back, stored as sent.
    let cms = gentype::Client::new(Api::<ConfigMap>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Protobuf);
    let created = cms.create(&post, &config_map("page")).await?;
    let exchange = last(&log);
    assert!(is(&exchange.request_content_type, PROTOBUF), "{exchange:?}");
    assert!(is(&exchange.content_type, PROTOBUF), "{exchange:?}");
    let read: ConfigMap = Api::namespaced(json.clone(), ns).get("page").await?;
    assert_eq!(
        created, read,
        "the answer decoded from protobuf = the JSON read"
    );
    assert_eq!(read.data, config_map("page").data);
    assert_eq!(read.binary_data, config_map("page").binary_data);
    assert_eq!(read.metadata.labels, meta("page").labels);
    assert_eq!(read.metadata.annotations, meta("page").annotations);

    // Errors on the protobuf wire: a 409 is a 409, a 404 a None.
    let err = cms.create(&post, &config_map("page")).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );
    assert!(
        is(&last(&log).content_type, PROTOBUF),
        "the error came in protobuf"
    );
    assert_eq!(cms.get_opt("absent").await?, None);

    // A replace: a stale resourceVersion is a Conflict, the current one writes.
    let mut stale = created.clone();
    stale.metadata.resource_version = Some("1".into());
    let err = cms.replace("page", &post, &stale).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409),
        "{err:?}"
    );
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([(
        "index.html".into(),
        "<h1>bye</h1>".into(),
    )]));
    let replaced = cms.replace("page", &post, &changed).await?;
    assert!(is(&last(&log).request_content_type, PROTOBUF));
    assert_eq!(replaced.data, changed.data);
    assert_eq!(cms.get("page").await?, replaced);

    // A Deployment created in protobuf, then patched: the patch body is JSON, the
    // answer protobuf.
    let deployments = gentype::Client::new(Api::<Deployment>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Protobuf);
    let created = deployments.create(&post, &deployment("web")).await?;
    let stored: Deployment = Api::namespaced(json.clone(), ns).get("web").await?;
    assert_eq!(
        created.spec, stored.spec,
        "the server stored the spec sent in protobuf"
    );
    let scale = Patch::Merge(serde_json::json!({ "spec": { "replicas": 3 } }));
    let patched = deployments
        .patch("web", &PatchParams::default(), &scale)
        .await?;
    let exchange = last(&log);
    assert!(
        is(
            &exchange.request_content_type,
            "application/merge-patch+json"
        ),
        "{exchange:?}"
    );
    assert!(is(&exchange.content_type, PROTOBUF), "{exchange:?}");
    assert_eq!(patched.spec.replicas, Some(3));

    // A Lease, with micro times (leader election's writes).
    let leases = gentype::Client::new(Api::<Lease>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Protobuf);
    let at = Timestamp::from_microsecond(1_790_000_000_123_456)?;
    let lease = Lease {
        metadata: meta("leader"),
        spec: Some(LeaseSpec {
            holder_identity: Some("replica-0".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(at)),
            renew_time: Some(MicroTime(at)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        }),
    };
    let created = leases.create(&post, &lease).await?;
    let stored: Lease = Api::namespaced(json.clone(), ns).get("leader").await?;
    assert_eq!(created, stored);
    assert_eq!(
        stored.spec, lease.spec,
        "micro times and zeros survive protobuf"
    );

    // The JSON wire, and a type without a codec on the protobuf wire, speak JSON.
    let json_cms = gentype::Client::new(Api::<ConfigMap>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Json);
    json_cms.create(&post, &config_map("json")).await?;
    let exchange = last(&log);
    assert!(
        is(&exchange.request_content_type, "application/json"),
        "{exchange:?}"
    );
    assert!(
        is(&exchange.content_type, "application/json"),
        "{exchange:?}"
    );
    let namespaces = gentype::Client::new(Api::<Namespace>::all(client.clone()))
        .with_wire(gentype::Wire::Protobuf);
    let own = namespaces.get(ns).await?;
    assert_eq!(own.metadata.name.as_deref(), Some(ns));
    assert!(is(&last(&log).content_type, "application/json"));
    Ok(())
}

/// Whether `exchange` asked for a metadata-only answer on `wire` and got one in
/// `media` (the server names the conversion in the body's kind, not in its
/// `Content-Type`: [`server_converts`] checks that part).
fn asked_partial(exchange: &LoggedResponse, wire: gentype::Wire, media: &str) -> bool {
    exchange.accept.as_deref() == Some(gentype::metadata::accept(wire))
        && is(&exchange.content_type, media)
}

/// What the server answers a create asked for with `accept`: its `kind` (from the
/// protobuf envelope or the JSON).
async fn kind_answered(client: &kube::Client, ns: &str, accept: &str) -> anyhow::Result<String> {
    let body = serde_json::to_vec(&config_map("probe"))?;
    let request = http::Request::post(format!("/api/v1/namespaces/{ns}/configmaps"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, accept)
        .body(body)?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    let kind = match protowire::envelope::decode(&bytes) {
        Ok(unknown) => unknown.type_meta.kind.to_string(),
        Err(_) => serde_json::from_slice::<serde_json::Value>(&bytes)?["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .delete("probe", &Default::default())
        .await?;
    Ok(kind)
}

#[tokio::test]
async fn writes_that_read_back_only_metadata_get_the_servers_metadata() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("gentype-meta").await?;
    let ns = env.namespace();
    let (log, client) = logged_client(&env)?;
    let json = env.client().clone();
    let post = PostParams::default();

    // A create on the protobuf wire: the body is protobuf, the answer the server's
    // PartialObjectMetadata in protobuf, its metadata the stored object's. A Service:
    // no controller of this control plane writes a ClusterIP Service after its create,
    // so the resourceVersions compared below are not raced (a Deployment's are, by
    // kube-controller-manager's status writes: this test's first version failed a CI
    // run with a 409 on the status write).
    let services = gentype::Client::new(Api::<Service>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Protobuf);
    let meta = services.create_metadata(&post, &service("web")).await?;
    let exchange = last(&log);
    assert!(is(&exchange.request_content_type, PROTOBUF), "{exchange:?}");
    assert!(
        asked_partial(&exchange, gentype::Wire::Protobuf, PROTOBUF),
        "{exchange:?}"
    );
    let stored: Service = Api::namespaced(json.clone(), ns).get("web").await?;
    assert_eq!(meta.uid, stored.metadata.uid);
    assert_eq!(meta.resource_version, stored.metadata.resource_version);
    assert_eq!(meta.labels, meta_labels("web"));
    assert!(
        stored.metadata.managed_fields.is_some() && meta.managed_fields.is_none(),
        "managedFields are left out of the answer read"
    );
    assert_eq!(
        stored.spec.and_then(|s| s.ports).map(|p| p[0].port),
        Some(80),
        "the whole object was written"
    );

    // The status subresource, read back as metadata: the write went through.
    let mut with_status: Service = Api::namespaced(json.clone(), ns).get("web").await?;
    with_status.status = Some(ServiceStatus {
        conditions: Some(vec![Condition {
            type_: "Checked".into(),
            status: "True".into(),
            reason: "ByTheTest".into(),
            message: String::new(),
            last_transition_time: Time(Timestamp::from_second(1_790_000_000)?),
            observed_generation: None,
        }]),
        ..ServiceStatus::default()
    });
    let meta = services
        .replace_status_metadata("web", &post, &with_status)
        .await?;
    assert!(asked_partial(
        &last(&log),
        gentype::Wire::Protobuf,
        PROTOBUF
    ));
    let stored: Service = Api::namespaced(json.clone(), ns).get("web").await?;
    assert_eq!(meta.resource_version, stored.metadata.resource_version);
    assert_eq!(
        stored
            .status
            .and_then(|s| s.conditions)
            .map(|c| c[0].reason.clone()),
        Some("ByTheTest".into()),
        "the status was written"
    );

    // An error is still the server's Status: a 409 on a second create.
    let err = services
        .create_metadata(&post, &service("web"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );

    // The Foo controller's use, a Deployment's create: its uid, and no managedFields.
    let deployments = gentype::Client::new(Api::<Deployment>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Protobuf);
    let meta = deployments
        .create_metadata(&post, &deployment("app"))
        .await?;
    let stored: Deployment = Api::namespaced(json.clone(), ns).get("app").await?;
    assert_eq!(meta.uid, stored.metadata.uid);
    assert!(meta.managed_fields.is_none());

    // The JSON wire asks for the same conversion in JSON.
    let cms = gentype::Client::new(Api::<ConfigMap>::namespaced(client.clone(), ns))
        .with_wire(gentype::Wire::Json);
    let meta = cms.create_metadata(&post, &config_map("page")).await?;
    assert!(asked_partial(
        &last(&log),
        gentype::Wire::Json,
        "application/json"
    ));
    let stored: ConfigMap = Api::namespaced(json.clone(), ns).get("page").await?;
    assert_eq!(meta.uid, stored.metadata.uid);
    assert!(meta.managed_fields.is_none());
    assert_eq!(stored.data, config_map("page").data);

    // And the server does convert what those headers ask for, on both wires.
    for wire in [gentype::Wire::Protobuf, gentype::Wire::Json] {
        let kind = kind_answered(&client, ns, gentype::metadata::accept(wire)).await?;
        assert_eq!(kind, "PartialObjectMetadata", "{wire:?}");
    }
    Ok(())
}

fn meta_labels(name: &str) -> Option<BTreeMap<String, String>> {
    meta(name).labels
}
