//! e2e: objects created with a protobuf body (`Content-Type:
//! application/vnd.kubernetes.protobuf`, as client-go's typed clients send built-in
//! types) against a real kube-apiserver (crates/dev/testenv) are stored as the same
//! object created as JSON is: a ConfigMap (data, binary data, labels, annotations), a
//! Deployment (a pod template with resources, probes, IntOrString values, an env var
//! from a key selector: an inlined embedded struct) and a coordination Lease (micro
//! times, a zero transition count); then a protobuf update of the ConfigMap. An encoder
//! that wrote a field under the wrong number, in a form Go does not read, or not at all
//! fails here: the server rejects the body or stores something else.
//!
//!   bash hack/with-control-plane.sh cargo test -p kcr-protowire --test e2e_encode

use std::collections::BTreeMap;

use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use protowire::{Encode, MediaType, Message};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use testenv::TestEnv;

/// Sends `body` with `content_type` to `path` (`method` POST or PUT), asking for JSON;
/// the answer's JSON.
async fn send(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> anyhow::Result<Value> {
    let request = http::Request::builder()
        .method(method.clone())
        .uri(path)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::from(body))?;
    let response = client.send(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    anyhow::ensure!(
        status.is_success(),
        "{method} {path}: {status}: {}",
        String::from_utf8_lossy(&body)
    );
    Ok(serde_json::from_slice(&body)?)
}

/// GET `path` as JSON.
async fn get_json<T: DeserializeOwned>(client: &kube::Client, path: &str) -> anyhow::Result<T> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    anyhow::ensure!(
        response.status().is_success(),
        "GET {path}: {}",
        response.status()
    );
    let body = response.into_body().collect().await?.to_bytes();
    Ok(serde_json::from_slice(&body)?)
}

/// Creates `obj` twice in `ns`: named `<name>-proto` with a protobuf body, `<name>-json`
/// with a JSON body; both read back (as JSON, and the protobuf one also as protobuf).
async fn create_both<K>(
    client: &kube::Client,
    ns: &str,
    name: &str,
    obj: &K,
) -> anyhow::Result<(K, K)>
where
    K: Encode
        + Message
        + Serialize
        + DeserializeOwned
        + Clone
        + PartialEq
        + std::fmt::Debug
        + kube::Resource<DynamicType = ()>
        + k8s_openapi::Resource,
{
    let collection = K::url_path(&(), Some(ns));
    let mut proto = obj.clone();
    proto.meta_mut().name = Some(format!("{name}-proto"));
    let mut as_json = obj.clone();
    as_json.meta_mut().name = Some(format!("{name}-json"));

    let body = protowire::encode::object(&proto);
    let created = send(
        client,
        http::Method::POST,
        &collection,
        protowire::PROTOBUF,
        body,
    )
    .await?;
    assert_eq!(created["kind"], K::KIND, "{created}");
    send(
        client,
        http::Method::POST,
        &collection,
        "application/json",
        serde_json::to_vec(&as_json)?,
    )
    .await?;

    let from_proto: K = get_json(client, &format!("{collection}/{name}-proto")).await?;
    let from_json: K = get_json(client, &format!("{collection}/{name}-json")).await?;

    // The object created from protobuf, read back as protobuf, decodes to what its JSON
    // read gives (the decoder's check, on an object the encoder wrote).
    let request = http::Request::get(format!("{collection}/{name}-proto"))
        .header(http::header::ACCEPT, protowire::ACCEPT)
        .body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(
        protowire::media_type(content_type.as_deref()),
        MediaType::Protobuf
    );
    let bytes = response.into_body().collect().await?.to_bytes();
    let unknown = protowire::envelope::decode(&bytes)?;
    let decoded: K = protowire::decode(unknown.raw)?;
    if decoded.meta().resource_version == from_proto.meta().resource_version {
        assert_eq!(decoded, from_proto);
    }
    Ok((from_proto, from_json))
}

/// A string map of an object's metadata.
type Labels = Option<BTreeMap<String, String>>;

/// The labels and annotations of an object (what a create keeps of its metadata).
fn labels_and_annotations(meta: &kube::api::ObjectMeta) -> (Labels, Labels) {
    (meta.labels.clone(), meta.annotations.clone())
}

#[tokio::test]
async fn protobuf_creates_store_what_json_creates_store() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("protowire-encode").await?;
    let ns = env.namespace();
    let client = env.client().clone();

    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "labels": {"app": "web", "tier": "front"},
            "annotations": {"note": "", "owner": "team-a"}
        },
        "data": {"index.html": "<h1>hi</h1>", "empty": "", "long": "x".repeat(300)},
        "binaryData": {"blob": "AAEC/w=="},
        "immutable": false
    }))?;
    let (proto, from_json) = create_both(&client, ns, "web", &config_map).await?;
    assert_eq!(proto.data, from_json.data);
    assert_eq!(proto.data, config_map.data);
    assert_eq!(proto.binary_data, from_json.binary_data);
    assert_eq!(proto.binary_data, config_map.binary_data);
    assert_eq!(proto.immutable, from_json.immutable);
    assert_eq!(
        labels_and_annotations(&proto.metadata),
        labels_and_annotations(&from_json.metadata)
    );
    assert_eq!(proto.metadata.labels, config_map.metadata.labels);
    // Both creates were recorded for the same manager, with the same fields.
    let fields = |cm: &ConfigMap| {
        cm.metadata
            .managed_fields
            .as_ref()
            .map(|m| m.iter().map(|e| e.fields_v1.clone()).collect::<Vec<_>>())
    };
    assert_eq!(fields(&proto), fields(&from_json));

    // An update with a protobuf body (PUT, with the resourceVersion read).
    let mut updated = proto.clone();
    updated
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("mode".into(), "fast".into());
    let path = format!("/api/v1/namespaces/{ns}/configmaps/web-proto");
    let answer = send(
        &client,
        http::Method::PUT,
        &path,
        protowire::PROTOBUF,
        protowire::encode::object(&updated),
    )
    .await?;
    assert_eq!(answer["data"]["mode"], "fast", "{answer}");
    let stored: ConfigMap = get_json(&client, &path).await?;
    assert_eq!(stored.data, updated.data);

    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "web"}, "annotations": {"team": "a"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "minReadySeconds": 3,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "ports": [{"name": "http", "containerPort": 80}],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                        "livenessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 20},
                        "env": [
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "web-proto", "key": "mode", "optional": true}}}
                        ],
                        "securityContext": {"runAsUser": 1000, "runAsNonRoot": true}
                    }],
                    "tolerations": [{"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}]
                }
            }
        }
    }))?;
    let (proto, from_json) = create_both(&client, ns, "web", &deployment).await?;
    assert_eq!(proto.spec, from_json.spec);
    // The Deployment controller adds its revision annotation when it gets to each copy:
    // the annotations given are compared.
    assert_eq!(proto.metadata.labels, from_json.metadata.labels);
    let team = |d: &Deployment| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("team").cloned())
    };
    assert_eq!(team(&proto), team(&from_json));
    assert_eq!(team(&proto).as_deref(), Some("a"));
    let container = &proto
        .spec
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0];
    let env = container.env.as_ref().expect("env");
    let key_ref = env[1]
        .value_from
        .as_ref()
        .and_then(|v| v.config_map_key_ref.as_ref())
        .expect("configMapKeyRef");
    assert_eq!(
        key_ref.name, "web-proto",
        "the inlined LocalObjectReference"
    );
    assert_eq!(proto.spec.replicas, Some(2));

    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "holderIdentity": "replica-0",
            "leaseDurationSeconds": 15,
            "acquireTime": "2025-03-01T10:20:30.123456Z",
            "renewTime": "2025-03-01T10:21:00.000001Z",
            "leaseTransitions": 0
        }
    }))?;
    let (proto, from_json) = create_both(&client, ns, "leader", &lease).await?;
    assert_eq!(proto.spec, from_json.spec);
    assert_eq!(proto.spec, lease.spec);
    assert_eq!(proto.metadata.labels, from_json.metadata.labels);

    // Both copies are there, listed through kube's typed API.
    let names: Vec<String> = Api::<Lease>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter_map(|l| l.metadata.name)
        .collect();
    assert_eq!(names, ["leader-json", "leader-proto"]);
    Ok(())
}
