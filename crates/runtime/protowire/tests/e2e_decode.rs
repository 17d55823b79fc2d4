//! e2e: objects read from a real kube-apiserver (crates/dev/testenv) as protobuf decode
//! to exactly the struct the same object read as JSON gives: every field the Go side
//! writes (empty strings and zeros included, managedFields with its JSON inside, micro
//! times, bytes, IntOrString ports, quantities, conditions), for each generated root
//! type. A decoder that kept an empty Go string where JSON has none, dropped a field, or
//! read a time differently fails here.

use std::collections::BTreeMap;

use http_body_util::BodyExt;
use k8s_openapi::ByteString;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Pod, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use protowire::{MediaType, Message};
use serde::de::DeserializeOwned;
use testenv::{Check, TestEnv, wait_for};

/// GET `path` with `accept`; the answer's Content-Type and body.
async fn get(client: &kube::Client, path: &str, accept: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    anyhow::ensure!(
        response.status().is_success(),
        "GET {path}: {}",
        response.status()
    );
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.into_body().collect().await?.to_bytes().to_vec();
    Ok((content_type, body))
}

/// The object at `path` read over both wires: (from JSON, from protobuf), read again
/// (up to 10 times) while the two reads saw different resourceVersions: the controllers
/// and kwok keep writing the workloads' status.
async fn both_wires<T>(client: &kube::Client, path: &str) -> anyhow::Result<(T, T)>
where
    T: Message + DeserializeOwned + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    let mut attempt = 0;
    loop {
        let (json_type, json) = get(client, path, "application/json").await?;
        assert_eq!(protowire::media_type(Some(&json_type)), MediaType::Json);
        let from_json: T = serde_json::from_slice(&json)?;

        let (proto_type, proto) = get(client, path, protowire::ACCEPT).await?;
        assert_eq!(
            protowire::media_type(Some(&proto_type)),
            MediaType::Protobuf,
            "{path} answered {proto_type}"
        );
        let unknown = protowire::envelope::decode(&proto)?;
        let from_proto: T = protowire::decode(unknown.raw)?;
        attempt += 1;
        if from_json.metadata().resource_version == from_proto.metadata().resource_version
            || attempt == 10
        {
            return Ok((from_json, from_proto));
        }
    }
}

/// An owner reference to `owner`, which exists (so the garbage collector leaves the
/// object alone: a change between the two reads would fail the comparison).
fn owned_by(owner: &ConfigMap) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap_or_default(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

#[tokio::test]
async fn config_maps_secrets_and_leases_decode_as_their_json_does() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("protowire").await?;
    let ns = env.namespace();
    let client = env.client().clone();

    // A bare ConfigMap (a name only), and one with every kind of field: labels,
    // annotations, an owner (the bare one), data with an empty value, binary data,
    // immutable.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let bare = ConfigMap {
        metadata: ObjectMeta {
            name: Some("bare".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let bare = config_maps.create(&PostParams::default(), &bare).await?;
    let full = ConfigMap {
        metadata: ObjectMeta {
            name: Some("full".into()),
            labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            annotations: Some(BTreeMap::from([("note".into(), String::new())])),
            owner_references: Some(vec![owned_by(&bare)]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("index.html".into(), "<h1>hi</h1>".into()),
            ("empty".into(), String::new()),
        ])),
        binary_data: Some(BTreeMap::from([(
            "blob".into(),
            ByteString(vec![0, 1, 2, 255]),
        )])),
        immutable: Some(true),
    };
    config_maps.create(&PostParams::default(), &full).await?;

    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
    secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some("token".into()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([(
                    "key".into(),
                    ByteString(b"s3cr3t".to_vec()),
                )])),
                type_: Some("Opaque".into()),
                ..Secret::default()
            },
        )
        .await?;

    // A Lease with micro times that have sub-microsecond digits (the server keeps
    // microseconds) and a zero transition count (a pointer in Go: kept).
    let now = Timestamp::now();
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    leases
        .create(
            &PostParams::default(),
            &Lease {
                metadata: ObjectMeta {
                    name: Some("leader".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some("replica-0".into()),
                    lease_duration_seconds: Some(15),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            },
        )
        .await?;

    for name in ["full", "bare"] {
        let path = format!("/api/v1/namespaces/{ns}/configmaps/{name}");
        let (json, proto) = both_wires::<ConfigMap>(&client, &path).await?;
        assert_eq!(proto, json, "{path}");
        assert!(json.metadata.creation_timestamp.is_some());
    }
    // The check has teeth: the full object really carries what the JSON path reads
    // (a ConfigMap with nothing but a name has no managedFields).
    let (json, _) =
        both_wires::<ConfigMap>(&client, &format!("/api/v1/namespaces/{ns}/configmaps/full"))
            .await?;
    assert!(json.metadata.managed_fields.is_some(), "no managedFields");
    assert_eq!(json.binary_data, full.binary_data);
    assert_eq!(json.data.as_ref().map(|d| d["empty"].as_str()), Some(""));
    assert_eq!(json.metadata.annotations, full.metadata.annotations);

    let path = format!("/api/v1/namespaces/{ns}/secrets/token");
    let (json, proto) = both_wires::<Secret>(&client, &path).await?;
    assert_eq!(proto, json, "{path}");

    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/leader");
    let (json, proto) = both_wires::<Lease>(&client, &path).await?;
    assert_eq!(proto, json, "{path}");
    assert_eq!(
        json.spec.as_ref().and_then(|s| s.lease_transitions),
        Some(0)
    );
    Ok(())
}

/// A Deployment with resources, probes, a rolling update with IntOrString values and an
/// env var from a field; a Service with a named target port. Waits until its Pod runs
/// (kwok) and the controllers wrote Events, then compares the Deployment (status and
/// conditions included), the Service (cluster IP assigned), the Pod (spec defaulted by
/// the server, status from kwok) and every Event of both APIs.
#[tokio::test]
async fn workloads_and_events_decode_as_their_json_does() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("protowire-workloads").await?;
    let ns = env.namespace();
    let client = env.client().clone();

    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "nginx",
                    "image": "nginx:1.22",
                    "ports": [{"name": "http", "containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                    "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
                }]}
            }
        }
    }))?;
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &deployment)
        .await?;
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 8080, "targetPort": "http"}]}
    }))?;
    Api::<Service>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &service)
        .await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = wait_for(
        "the Deployment's Pod running",
        Duration::from_secs(90),
        || async {
            let list = pods.list(&ListParams::default()).await?;
            let running = list
                .items
                .into_iter()
                .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
            Ok::<_, kube::Error>(match running {
                Some(pod) => Check::Ready(pod),
                None => Check::Pending("no Running Pod".into()),
            })
        },
    )
    .await?;
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let names = wait_for(
        "Events about the Deployment",
        Duration::from_secs(60),
        || async {
            let list = events.list(&ListParams::default()).await?;
            let names: Vec<String> = list
                .items
                .iter()
                .filter_map(|e| e.metadata.name.clone())
                .collect();
            Ok::<_, kube::Error>(Check::ready_if(
                !names.is_empty(),
                names.clone(),
                format!("{names:?}"),
            ))
        },
    )
    .await?;

    let path = format!("/apis/apps/v1/namespaces/{ns}/deployments/web");
    let (json, proto) = both_wires::<Deployment>(&client, &path).await?;
    assert_eq!(proto, json, "{path}");
    assert!(
        json.status.is_some_and(|s| s.conditions.is_some()),
        "no conditions"
    );

    let path = format!("/api/v1/namespaces/{ns}/services/web");
    let (json, proto) = both_wires::<Service>(&client, &path).await?;
    assert_eq!(proto, json, "{path}");
    assert!(
        json.spec.is_some_and(|s| s.cluster_ip.is_some()),
        "no cluster IP"
    );

    let name = pod.metadata.name.clone().unwrap_or_default();
    let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
    let (json, proto) = both_wires::<Pod>(&client, &path).await?;
    assert_eq!(proto, json, "{path}");

    for name in &names {
        let path = format!("/apis/events.k8s.io/v1/namespaces/{ns}/events/{name}");
        let (json, proto) = both_wires::<Event>(&client, &path).await?;
        assert_eq!(proto, json, "{path}");
        let path = format!("/api/v1/namespaces/{ns}/events/{name}");
        let (json, proto) = both_wires::<CoreEvent>(&client, &path).await?;
        assert_eq!(proto, json, "{path}");
    }
    Ok(())
}
