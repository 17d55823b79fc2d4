//! Which Rust types have a protobuf decoder, found at run time by type.
//!
//! The informers are generic over any `kube::Resource`: built-in types, which the API
//! server can send as protobuf, and custom resources, which it only sends as JSON. A
//! trait bound would make every custom resource implement something for protobuf it can
//! never use; instead the lister-watcher asks [`decoder::<K>()`](decoder) once: `Some`
//! for the types `hack/tools/protogen` generated a decoder for, `None` for every other
//! type, which then stays on JSON. The answer is a plain function pointer: nothing is
//! boxed per object.
//!
//! The encoders are found the same way ([`encoder::<K>()`](encoder)): a client sends a
//! built-in object as protobuf when it has one, JSON otherwise. [`to_json`] goes the
//! other way for a test's fake API server: a protobuf request body, whatever root kind
//! its envelope names, as the JSON a client would have sent.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! assert!(protowire::registry::decoder::<Deployment>().is_some());
//! assert!(protowire::registry::decoder::<String>().is_none());
//! assert!(protowire::registry::encoder::<Deployment>().is_some());
//!
//! let body = protowire::encode::object(&Deployment::default());
//! let json = protowire::registry::to_json(&body).expect("a root kind")?;
//! assert_eq!(json["kind"], "Deployment");
//! assert_eq!(json["apiVersion"], "apps/v1");
//! # Ok::<(), protowire::DecodeError>(())
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::decode::Message;
use crate::encode::Encode;
use crate::wire::{DecodeError, Reader};

/// Decodes one object of type `K` from its message (an envelope's `raw`, a list's
/// item); the reader's options (skipping managedFields) apply.
pub type DecodeFn<K> = fn(Reader<'_>) -> Result<K, DecodeError>;

type Table = HashMap<TypeId, Box<dyn Any + Send + Sync>>;

/// The decoder of `K`, if it has one.
pub fn decoder<K: 'static>() -> Option<DecodeFn<K>> {
    static TABLE: OnceLock<Table> = OnceLock::new();
    let table = TABLE.get_or_init(|| crate::generated::roots().into_iter().collect());
    table
        .get(&TypeId::of::<K>())?
        .downcast_ref::<DecodeFn<K>>()
        .copied()
}

/// The table entry of a generated type.
pub(crate) fn entry<K: Message + 'static>() -> (TypeId, Box<dyn Any + Send + Sync>) {
    let decode: DecodeFn<K> = |r| {
        let mut value = K::empty();
        value.merge(r)?;
        Ok(value)
    };
    (TypeId::of::<K>(), Box::new(decode))
}

/// Encodes one object of type `K` as a whole request body (envelope included, as
/// [`crate::encode::object`]).
pub type EncodeFn<K> = fn(&K) -> Vec<u8>;

/// Decodes the `raw` of an envelope of one root kind into the JSON value of its
/// k8s-openapi struct.
type ToJsonFn = fn(&[u8]) -> Result<serde_json::Value, DecodeError>;

/// What the generated encode table (`generated_encode::roots`) says of one root.
pub(crate) struct EncodeEntry {
    type_id: TypeId,
    encode: Box<dyn Any + Send + Sync>,
    api_version: &'static str,
    kind: &'static str,
    to_json: ToJsonFn,
}

/// The encode table's entry of a generated root type.
pub(crate) fn encode_entry<K>() -> EncodeEntry
where
    K: Encode + Message + k8s_openapi::Resource + serde::Serialize + 'static,
{
    let encode: EncodeFn<K> = crate::encode::object::<K>;
    EncodeEntry {
        type_id: TypeId::of::<K>(),
        encode: Box::new(encode),
        api_version: K::API_VERSION,
        kind: K::KIND,
        to_json: |raw| {
            serde_json::to_value(crate::decode::decode::<K>(raw)?).map_err(|e| {
                DecodeError::InvalidValue {
                    name: K::KIND,
                    message: format!("not serializable as JSON: {e}"),
                }
            })
        },
    }
}

/// The encode tables, by type and by (apiVersion, kind).
struct EncodeTables {
    by_type: Table,
    by_kind: HashMap<(&'static str, &'static str), ToJsonFn>,
}

fn encode_tables() -> &'static EncodeTables {
    static TABLES: OnceLock<EncodeTables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut tables = EncodeTables {
            by_type: HashMap::new(),
            by_kind: HashMap::new(),
        };
        for entry in crate::generated_encode::roots() {
            tables
                .by_kind
                .insert((entry.api_version, entry.kind), entry.to_json);
            tables.by_type.insert(entry.type_id, entry.encode);
        }
        tables
    })
}

/// The encoder of `K` (a whole request body), if it has one: the roots only.
pub fn encoder<K: 'static>() -> Option<EncodeFn<K>> {
    encode_tables()
        .by_type
        .get(&TypeId::of::<K>())?
        .downcast_ref::<EncodeFn<K>>()
        .copied()
}

/// A whole protobuf body (an envelope) of a root type as the JSON value of its
/// k8s-openapi struct, `apiVersion` and `kind` included: what the same object sent as
/// JSON would have been, once read. `None` when the body is an envelope of a kind that
/// is not a root; an error when the body is not an envelope or its object does not
/// decode.
pub fn to_json(body: &[u8]) -> Option<Result<serde_json::Value, DecodeError>> {
    let unknown = match crate::envelope::decode(body) {
        Ok(unknown) => unknown,
        Err(e) => return Some(Err(e)),
    };
    let meta = unknown.type_meta;
    let to_json = encode_tables()
        .by_kind
        .get(&(meta.api_version, meta.kind))?;
    Some(to_json(unknown.raw))
}
