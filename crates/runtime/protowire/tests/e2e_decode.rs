//! e2e: objects read from a real kube-apiserver (crates/dev/testenv) as protobuf decode
//! to exactly the struct the same object read as JSON gives: every field the Go side
//! writes (empty strings and zeros included, managedFields with its JSON inside, micro
//! times, bytes), for each generated type. A decoder that kept an empty Go string where
//! JSON has none, dropped a field, or read a time differently fails here.

use std::collections::BTreeMap;

use http_body_util::BodyExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use protowire::{MediaType, Message};
use serde::de::DeserializeOwned;
use testenv::TestEnv;

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

/// The object at `path` read over both wires: (from JSON, from protobuf).
async fn both_wires<T: Message + DeserializeOwned>(
    client: &kube::Client,
    path: &str,
) -> anyhow::Result<(T, T)> {
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
    Ok((from_json, from_proto))
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
