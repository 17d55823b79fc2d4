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
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//!
//! assert!(protowire::registry::decoder::<Deployment>().is_some());
//! assert!(protowire::registry::decoder::<String>().is_none());
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::decode::Message;
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
