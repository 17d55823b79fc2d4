//! Round trips of the encoders through the decoders, for every root type: realistic
//! objects (labels, annotations, owner references, managed fields, times and micro
//! times, quantities, IntOrString ports, a Pod with ephemeral containers, a Secret with
//! binary data) built from JSON, encoded, decoded: the same struct; encoded again: the
//! same bytes. And the request body ([`protowire::encode::object`]) read back by the
//! registry ([`protowire::registry::to_json`]) is the JSON of the object.
//!
//! A field the encoder forgot, wrote under another number or as another kind, or a
//! special type written differently from how the decoder reads it fails here (the
//! decoder itself is checked against a real API server in e2e_decode.rs).

use std::fmt::Debug;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Pod, Secret, Service};
use k8s_openapi::api::events::v1::Event;
use protowire::encode::Encode;
use protowire::{Message, registry};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// metadata with every kind of field an object carries once stored.
fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "namespace": "shop",
        "uid": "6f1c1f5e-9b0c-4d47-a0de-3c1e8f0a9a11",
        "resourceVersion": "48213",
        "generation": 4,
        "creationTimestamp": "2025-03-01T10:20:30Z",
        "labels": {"app": "web", "app.kubernetes.io/part-of": "shop"},
        "annotations": {
            "deployment.kubernetes.io/revision": "3",
            "empty": "",
            "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"v1\"}\n"
        },
        "ownerReferences": [{
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web-7d4b9c",
            "uid": "0a1b2c3d-0000-4000-8000-000000000001",
            "controller": true,
            "blockOwnerDeletion": true
        }],
        "finalizers": ["shop.example.com/cleanup"],
        "managedFields": [{
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2025-03-01T10:20:31Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}},
            "subresource": "status"
        }]
    })
}

/// Encodes `value`, decodes it, encodes the result: the same struct and the same bytes;
/// the whole body (envelope) read back through the registry is the object's JSON.
fn round_trip<K>(json: Value) -> K
where
    K: Encode + Message + k8s_openapi::Resource + Serialize + DeserializeOwned + PartialEq + Debug,
    K: 'static,
{
    let value: K = serde_json::from_value(json).expect("a valid object");
    let mut bytes = Vec::new();
    value.encode(&mut bytes);
    let decoded: K = protowire::decode(&bytes).expect("decodes");
    assert_eq!(decoded, value, "{}: decode(encode(x)) != x", K::KIND);
    let mut again = Vec::new();
    decoded.encode(&mut again);
    assert_eq!(again, bytes, "{}: the second encoding differs", K::KIND);

    let body = protowire::encode::object(&value);
    let unknown = protowire::envelope::decode(&body).expect("an envelope");
    assert_eq!(unknown.type_meta.api_version, K::API_VERSION);
    assert_eq!(unknown.type_meta.kind, K::KIND);
    assert_eq!(unknown.raw, bytes);
    let encoder = registry::encoder::<K>().expect("a root has an encoder");
    assert_eq!(encoder(&value), body);
    let as_json = registry::to_json(&body)
        .expect("a root kind")
        .expect("decodes");
    assert_eq!(
        as_json,
        serde_json::to_value(&value).expect("serializes"),
        "{}",
        K::KIND
    );
    assert_eq!(as_json["kind"], K::KIND);
    decoded
}

#[test]
fn deployments_round_trip() {
    let d: Deployment = round_trip(json!({
        "metadata": metadata("web"),
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}]
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "minReadySeconds": 5,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"checksum": "abc"}},
                "spec": {
                    "serviceAccountName": "web",
                    "terminationGracePeriodSeconds": 30,
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "securityContext": {"runAsUser": 1000, "runAsNonRoot": true, "supplementalGroups": [2000, 3000]},
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "args": ["-g", "daemon off;"],
                        "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "1", "memory": "128Mi", "ephemeral-storage": "1Gi"}
                        },
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"}, "periodSeconds": 10},
                        "livenessProbe": {"tcpSocket": {"port": 80}, "failureThreshold": 3},
                        "env": [
                            {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "web-config", "key": "mode", "optional": true}}},
                            {"name": "PLAIN", "value": "1"}
                        ],
                        "envFrom": [{"secretRef": {"name": "web-secret"}}],
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/nginx", "readOnly": true}]
                    }],
                    "volumes": [{"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}}],
                    "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
                }
            }
        },
        "status": {
            "observedGeneration": 4,
            "replicas": 3,
            "updatedReplicas": 3,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "unavailableReplicas": 1,
            "conditions": [{
                "type": "Available",
                "status": "True",
                "lastUpdateTime": "2025-03-01T10:21:00Z",
                "lastTransitionTime": "2025-03-01T10:21:00Z",
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability."
            }]
        }
    }));
    // The decoded object really carries what was asked (not two empty objects).
    assert_eq!(d.spec.replicas, Some(3));
    assert!(
        d.metadata
            .managed_fields
            .is_some_and(|m| m[0].fields_v1.is_some())
    );
}

#[test]
fn config_maps_and_secrets_round_trip() {
    round_trip::<ConfigMap>(json!({
        "metadata": metadata("web-config"),
        "data": {"mode": "fast", "empty": "", "nginx.conf": "server {\n  listen 80;\n}\n"},
        "binaryData": {"blob": "AAEC/w=="},
        "immutable": true
    }));
    round_trip::<ConfigMap>(json!({"metadata": {"name": "bare"}}));
    let secret: Secret = round_trip(json!({
        "metadata": metadata("web-secret"),
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": "AAECAwT+/w==", "tls.key": "", "long": "A".repeat(400)},
        "stringData": {"note": "write-only"},
        "immutable": false
    }));
    let data = secret.data.expect("data");
    assert_eq!(data["tls.crt"].0, [0, 1, 2, 3, 4, 254, 255]);
    assert_eq!(secret.immutable, Some(false));
}

#[test]
fn pods_with_ephemeral_containers_round_trip() {
    let pod: Pod = round_trip(json!({
        "metadata": metadata("web-7d4b9c-x2x9q"),
        "spec": {
            "nodeName": "node-1",
            "restartPolicy": "Always",
            "priority": 0,
            "enableServiceLinks": true,
            "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
            "containers": [{
                "name": "app",
                "image": "example.com/app:v2",
                "ports": [{"containerPort": 8443, "hostPort": 443}],
                "resources": {"requests": {"cpu": "250m"}},
                "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "initialDelaySeconds": 2},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                "securityContext": {"capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": false}
            }],
            "ephemeralContainers": [{
                "name": "debugger",
                "image": "busybox:1.36",
                "command": ["sh"],
                "stdin": true,
                "tty": true,
                "targetContainerName": "app",
                "env": [{"name": "DEBUG", "value": "1"}]
            }],
            "volumes": [
                {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                {"name": "certs", "secret": {"secretName": "web-secret", "items": [{"key": "tls.crt", "path": "tls.crt", "mode": 256}]}},
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}
            ],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }}},
            "tolerations": [{"operator": "Exists"}]
        },
        "status": {
            "phase": "Running",
            "hostIP": "10.0.0.4",
            "podIP": "10.244.1.7",
            "podIPs": [{"ip": "10.244.1.7"}, {"ip": "fd00::7"}],
            "startTime": "2025-03-01T10:20:40Z",
            "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-03-01T10:20:50Z"}],
            "containerStatuses": [{
                "name": "app",
                "image": "example.com/app:v2",
                "imageID": "example.com/app@sha256:0123",
                "containerID": "containerd://abc",
                "ready": true,
                "started": true,
                "restartCount": 2,
                "state": {"running": {"startedAt": "2025-03-01T10:20:45Z"}},
                "lastState": {"terminated": {"exitCode": -1, "signal": 9, "reason": "Error", "startedAt": "2025-03-01T10:20:41Z", "finishedAt": "2025-03-01T10:20:44Z"}}
            }],
            "ephemeralContainerStatuses": [{
                "name": "debugger",
                "image": "busybox:1.36",
                "imageID": "",
                "ready": false,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}
            }]
        }
    }));
    let spec = pod.spec.expect("spec");
    let debugger = &spec.ephemeral_containers.expect("ephemeral containers")[0];
    assert_eq!(debugger.name, "debugger");
    assert_eq!(debugger.target_container_name.as_deref(), Some("app"));
    assert_eq!(debugger.stdin, Some(true));
    let status = pod.status.expect("status");
    let last = status.container_statuses.expect("statuses")[0]
        .last_state
        .clone();
    assert_eq!(
        last.and_then(|s| s.terminated).map(|t| t.exit_code),
        Some(-1)
    );
}

#[test]
fn services_round_trip() {
    round_trip::<Service>(json!({
        "metadata": metadata("web"),
        "spec": {
            "type": "LoadBalancer",
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP", "nodePort": 30080},
                {"name": "https", "port": 443, "targetPort": 8443, "appProtocol": "https"}
            ],
            "clusterIP": "10.96.0.20",
            "clusterIPs": ["10.96.0.20", "fd00:10:96::20"],
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 31000,
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "loadBalancerSourceRanges": ["10.0.0.0/8"],
            "allocateLoadBalancerNodePorts": true
        },
        "status": {
            "loadBalancer": {"ingress": [{"ip": "192.0.2.10", "ipMode": "VIP", "ports": [{"port": 80, "protocol": "TCP"}]}]},
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "observedGeneration": 4,
                "lastTransitionTime": "2025-03-01T10:20:35Z",
                "reason": "Provisioned",
                "message": "load balancer ready"
            }]
        }
    }));
}

#[test]
fn leases_round_trip_with_micro_times() {
    let lease: Lease = round_trip(json!({
        "metadata": metadata("leader"),
        "spec": {
            "holderIdentity": "replica-0",
            "leaseDurationSeconds": 15,
            "acquireTime": "2025-03-01T10:20:30.123456Z",
            "renewTime": "2025-03-01T10:21:00.000001Z",
            "leaseTransitions": 0,
            "strategy": "OldestEmulationVersion",
            "preferredHolder": "replica-1"
        }
    }));
    assert_eq!(lease.spec.and_then(|s| s.lease_transitions), Some(0));
    // Before 1970: seconds rounded down, nanoseconds counting forward, as in Go.
    round_trip::<Lease>(json!({
        "metadata": {"name": "old", "creationTimestamp": "1969-12-31T23:59:59Z"},
        "spec": {"renewTime": "1969-12-31T23:59:58.500000Z"}
    }));
}

#[test]
fn events_of_both_apis_round_trip() {
    round_trip::<CoreEvent>(json!({
        "metadata": metadata("web.1826a2b1c3d4e5f6"),
        "involvedObject": {
            "kind": "Deployment",
            "namespace": "shop",
            "name": "web",
            "uid": "6f1c1f5e-9b0c-4d47-a0de-3c1e8f0a9a11",
            "apiVersion": "apps/v1",
            "resourceVersion": "48213",
            "fieldPath": "spec.template"
        },
        "reason": "ScalingReplicaSet",
        "message": "Scaled up replica set web-7d4b9c to 3",
        "source": {"component": "deployment-controller", "host": "node-1"},
        "firstTimestamp": "2025-03-01T10:20:30Z",
        "lastTimestamp": "2025-03-01T10:25:30Z",
        "count": 4,
        "type": "Normal",
        "eventTime": "2025-03-01T10:20:30.654321Z",
        "series": {"count": 3, "lastObservedTime": "2025-03-01T10:25:30.000100Z"},
        "action": "Scale",
        "related": {"kind": "ReplicaSet", "name": "web-7d4b9c"},
        "reportingComponent": "deployment-controller",
        "reportingInstance": "kcm-0"
    }));
    round_trip::<Event>(json!({
        "metadata": metadata("web.1826a2b1c3d4e5f7"),
        "eventTime": "2025-03-01T10:20:30.654321Z",
        "series": {"count": 2, "lastObservedTime": "2025-03-01T10:21:30.000100Z"},
        "reportingController": "shop.example.com/controller",
        "reportingInstance": "controller-0",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "Deployment", "namespace": "shop", "name": "web", "apiVersion": "apps/v1"},
        "related": {"kind": "Pod", "name": "web-7d4b9c-x2x9q"},
        "note": "synced 3 replicas",
        "type": "Normal",
        "deprecatedSource": {"component": "controller"},
        "deprecatedFirstTimestamp": "2025-03-01T10:20:30Z",
        "deprecatedLastTimestamp": "2025-03-01T10:21:30Z",
        "deprecatedCount": 2
    }));
}

#[test]
fn to_json_knows_the_roots_only() {
    // A Status (not a root): no decoder to JSON, the caller keeps the body as it is.
    let status = protowire::envelope::encode("v1", "Status", b"\x30\x01");
    assert!(registry::to_json(&status).is_none());
    // A root's kind under another apiVersion is another type.
    let body = protowire::envelope::encode("apps/v1beta1", "Deployment", b"");
    assert!(registry::to_json(&body).is_none());
    // Not an envelope, or an object that does not decode: an error.
    assert!(matches!(
        registry::to_json(b"{\"kind\":\"Pod\"}"),
        Some(Err(_))
    ));
    let broken = protowire::envelope::encode("v1", "ConfigMap", b"\x0a\x05ab");
    assert!(matches!(registry::to_json(&broken), Some(Err(_))));
    assert!(registry::encoder::<String>().is_none());
}
