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
    ConfigMap, Container, ContainerPort, Namespace, PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, MicroTime};
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
    let log = ResponseLog::new();
    let client = kube::client::ClientBuilder::try_from(env.config().clone())?
        .with_layer(&log)
        .build();
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
