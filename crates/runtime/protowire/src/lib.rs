//! Kubernetes' protobuf on the wire, the way client-go speaks it.
//!
//! client-go's typed clients and informers ask for built-in types as
//! `application/vnd.kubernetes.protobuf` first ([`ACCEPT`]): the API server encodes them
//! several times cheaper than JSON, and on a small machine its JSON encoding is the
//! bottleneck of a large list (docs/benchmarks.md). Custom resources have no protobuf
//! schema; for them the server answers JSON whatever we ask, so a client always looks at
//! the answer's `Content-Type` ([`media_type`]) and never at what it asked for. The typed
//! clients also send built-in objects they create or update as protobuf
//! ([`encode::object`], with `Content-Type:` [`PROTOBUF`]): the server decodes protobuf
//! cheaper too.
//!
//! What is on the wire (apimachinery `pkg/runtime/serializer/protobuf`):
//!
//! | message | bytes | here |
//! |---|---|---|
//! | one object, a list, an error `Status` | `k8s\0` + `runtime.Unknown{typeMeta, raw}` | [`envelope`] |
//! | a watch (`;stream=watch`) | frames: 4-byte big-endian length + `WatchEvent{type, object{raw}}`, whose `raw` is again an envelope | [`frame`], [`watch`] |
//! | a list's `ListMeta`, an error's `Status` | `meta/v1` messages | [`meta`] |
//! | the messages inside | protobuf fields, read without copying | [`wire`] |
//! | the objects | k8s-openapi structs, the same as the JSON path gives | [`decode`](mod@decode), [`generated`] |
//! | a request body (create, update) | the same envelope around an object's message, from a k8s-openapi struct | [`encode`](mod@encode), [`generated_encode`], [`envelope::encode`] |
//!
//! # Why hand-written
//!
//! The reader is about a hundred lines of varints and lengths; the decoders built on it
//! write straight into k8s-openapi's structs, and the encoders read straight from them:
//! the types the rest of the project (and kube-rs users) already use. prost-generated
//! types (the k8s-pb crate) would be a second set of structs per object and a
//! conversion pass each way, twice the allocations, and they lag
//! Kubernetes releases (k8s-pb 0.9 has 1.35's messages, without 1.37's
//! `ListMeta.shardInfo`).
//!
//! ```
//! use protowire::envelope;
//!
//! // An object as the API server sends it: the magic, then runtime.Unknown.
//! let body = b"k8s\0\x0a\x0c\x0a\x02v1\x12\x06Status\x12\x02\x30\x01\x1a\x00\x22\x00";
//! let unknown = envelope::decode(body)?;
//! assert_eq!(unknown.type_meta.kind, "Status");
//! assert_eq!(unknown.raw, b"\x30\x01");
//! # Ok::<(), protowire::DecodeError>(())
//! ```

#![forbid(unsafe_code)]

pub mod decode;
pub mod encode;
pub mod envelope;
pub mod frame;
pub mod generated;
pub mod generated_encode;
pub mod list;
pub mod meta;
pub mod registry;
pub mod watch;
pub mod wire;

pub use decode::{Message, decode};
pub use encode::Encode;
pub use envelope::{ACCEPT, MediaType, PROTOBUF, Unknown, media_type};
pub use frame::FrameReader;
pub use watch::WatchEvent;
pub use wire::{DecodeError, Reader, WireType};
