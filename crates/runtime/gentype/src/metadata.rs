//! Writes that read back only the written object's metadata.
//!
//! The API server answers a create or an update with the whole object it stored, and
//! kube's `Api` (like client-go's clientset) decodes all of it. A controller that only
//! needs what the server assigned (the name, uid and resourceVersion its staleness
//! guard records, the owner references it checks) can ask for less: with
//! `Accept: ...;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` the server turns its answer
//! into a `meta.k8s.io/v1` `PartialObjectMetadata` (the `metadata` and nothing else),
//! the same conversion the metadata-only informers ask for on lists and watches
//! (`k8s.io/apiserver`'s `transformResponseObject` applies it to every verb). The
//! server encodes less, fewer bytes cross the connection, and the client decodes one
//! `ObjectMeta` instead of a Deployment with its pod template.
//!
//! Read here:
//!
//! * **managedFields are dropped.** In protobuf they are skipped without being decoded
//!   ([`protowire::Reader::skipping_managed_fields`]); in JSON they are decoded and
//!   cleared. They are the largest part of the metadata, and a caller that wants them
//!   wants the whole object ([`Client::create`](crate::Client::create)).
//! * **Any answer with a `metadata` works.** A server (or a test double) that ignores
//!   `as=` and sends the whole object is read the same way: `metadata` is field 1 of
//!   every Kubernetes object's protobuf message and a top-level key in JSON. The
//!   `Accept` header ends with a plain `application/json`, so a server that cannot
//!   convert still answers.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use protowire::decode::{Empty, Message};
use protowire::wire::WireType;
use protowire::{DecodeError, Reader};

use crate::Wire;

/// `Accept` for a metadata-only answer on the protobuf wire: protobuf, then JSON, then
/// the whole object in JSON.
pub const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// `Accept` for a metadata-only answer on the JSON wire.
pub const ACCEPT_JSON: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` header asking for a metadata-only answer on `wire`.
pub fn accept(wire: Wire) -> &'static str {
    match wire {
        Wire::Protobuf => ACCEPT_PROTOBUF,
        Wire::Json => ACCEPT_JSON,
    }
}

/// The metadata of an answer (`PartialObjectMetadata` or a whole object) answered on
/// `answered`, without its managedFields.
///
/// ```
/// use gentype::{Wire, metadata};
///
/// let body = br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
///   "metadata":{"name":"web","resourceVersion":"42","managedFields":[{"manager":"x"}]}}"#;
/// let meta = metadata::read(body, Wire::Json)?;
/// assert_eq!(meta.name.as_deref(), Some("web"));
/// assert_eq!(meta.resource_version.as_deref(), Some("42"));
/// assert!(meta.managed_fields.is_none());
/// # Ok::<(), kube::Error>(())
/// ```
pub fn read(body: &[u8], answered: Wire) -> Result<ObjectMeta, kube::Error> {
    match answered {
        Wire::Protobuf => {
            let unknown = protowire::envelope::decode(body).map_err(invalid)?;
            from_message(Reader::new(unknown.raw).skipping_managed_fields(true)).map_err(invalid)
        }
        Wire::Json => {
            #[derive(serde::Deserialize)]
            struct Partial {
                #[serde(default)]
                metadata: ObjectMeta,
            }
            let mut meta = serde_json::from_slice::<Partial>(body)
                .map_err(kube::Error::SerdeError)?
                .metadata;
            meta.managed_fields = None;
            Ok(meta)
        }
    }
}

/// Field 1 (`metadata`) of an object's message; every other field skipped.
fn from_message(mut r: Reader<'_>) -> Result<ObjectMeta, DecodeError> {
    let mut meta = ObjectMeta::empty();
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, WireType::Len) => meta.merge(r.message()?)?,
            _ => r.skip(wire)?,
        }
    }
    Ok(meta)
}

fn invalid(e: DecodeError) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};

    use super::*;

    fn deployment() -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("shop".into()),
                uid: Some("u-1".into()),
                resource_version: Some("7".into()),
                managed_fields: Some(vec![ManagedFieldsEntry {
                    manager: Some("kcr".into()),
                    fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {"f:replicas": {}}}))),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            spec: DeploymentSpec {
                replicas: Some(3),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_whole_object_in_protobuf_gives_its_metadata_without_managed_fields() {
        let encode = protowire::registry::encoder::<Deployment>().expect("a Deployment codec");
        let body = encode(&deployment());
        let meta = read(&body, Wire::Protobuf).expect("decoded");
        assert_eq!(meta.name.as_deref(), Some("web"));
        assert_eq!(meta.namespace.as_deref(), Some("shop"));
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert!(meta.managed_fields.is_none());
    }

    #[test]
    fn a_partial_object_metadata_in_protobuf_is_read() {
        // PartialObjectMetadata { metadata = 1 }: the same first field as any object.
        let mut raw = Vec::new();
        protowire::encode::message(&mut raw, 1, &deployment().metadata);
        let body = protowire::envelope::encode("meta.k8s.io/v1", "PartialObjectMetadata", &raw);
        let meta = read(&body, Wire::Protobuf).expect("decoded");
        assert_eq!(meta.name.as_deref(), Some("web"));
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert!(meta.managed_fields.is_none());
    }

    #[test]
    fn a_whole_object_in_json_gives_its_metadata() {
        let body = serde_json::to_vec(&deployment()).expect("json");
        let meta = read(&body, Wire::Json).expect("decoded");
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert!(meta.managed_fields.is_none());
    }

    #[test]
    fn a_body_that_is_not_an_object_is_an_error() {
        assert!(read(b"k8s\0garbage", Wire::Protobuf).is_err());
        assert!(read(b"not json", Wire::Json).is_err());
        assert!(read(b"{\"metadata\": 3}", Wire::Json).is_err());
    }

    #[test]
    fn the_accept_header_ends_with_plain_json() {
        for wire in [Wire::Protobuf, Wire::Json] {
            assert!(accept(wire).ends_with(",application/json"));
            assert!(accept(wire).contains("as=PartialObjectMetadata;g=meta.k8s.io;v=v1"));
        }
        assert!(accept(Wire::Protobuf).starts_with("application/vnd.kubernetes.protobuf;"));
    }
}
