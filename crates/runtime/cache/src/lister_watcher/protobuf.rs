//! Lists and watches over protobuf, as client-go's informers ask for built-in types
//! (`Accept: application/vnd.kubernetes.protobuf,application/json`): the API server
//! encodes protobuf several times cheaper than JSON, and on a small machine its JSON
//! encoding of a large list is the bottleneck (docs/benchmarks.md).
//!
//! Only a type with a generated decoder ([`protowire::registry`]) asks for protobuf; a
//! custom resource has no protobuf schema and stays on JSON. Whatever was asked, the
//! answer's `Content-Type` decides how it is read, so a server (or a proxy) that answers
//! JSON is read as JSON. The objects are the same k8s-openapi structs the JSON path
//! gives (`crates/runtime/protowire/tests/e2e_decode.rs` checks it against a real API
//! server), so nothing above the lister-watcher can tell the wires apart.
//!
//! * A list is one envelope around `XList{metadata, items}` (`page`); its continue
//!   token is read from the head before the items are decoded (`continue_token`), as
//!   on the JSON path, for the pager's read-ahead.
//! * A watch is a stream of length-delimited frames, each a `WatchEvent` whose object is
//!   an envelope (`events`). A frame cut by an HTTP chunk is buffered until whole; a
//!   frame longer than [`protowire::frame::DEFAULT_MAX_FRAME`] or one that does not
//!   decode is an error the reflector recovers from (it watches again), never a panic.
//! * An error answer is a protobuf `Status` (`status`), read into kube's `Status` so a
//!   410 is a 410 on either wire.
//! * With `strip_managed_fields`, `metadata.managedFields` is skipped without being
//!   parsed (its entries are length-delimited).

use std::io;

use bytes::Bytes;
use futures::StreamExt;
use http_body::Body;
use kube::api::WatchEvent;
use kube::core::watch::{Bookmark, BookmarkMeta};
use kube::core::{ListMeta, ObjectList, TypeMeta};
use kube::{Resource, ResourceExt};
use protowire::registry::DecodeFn;
use protowire::{DecodeError, FrameReader, Reader};

use super::WatchStream;
use super::watch_stream::{self, Decoded, EventDecoder};

/// A protobuf decoding error as the lister-watcher reports errors: the reflector backs
/// off and lists or watches again.
fn error(e: DecodeError) -> kube::Error {
    kube::Error::ReadEvents(io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The non-empty continue token of a protobuf list page, read from its head.
pub(crate) fn continue_token(body: &[u8]) -> Option<String> {
    let unknown = protowire::envelope::decode(body).ok()?;
    let meta = protowire::list::list_meta_only(unknown.raw)?;
    Some(meta.continue_token).filter(|t| !t.is_empty())
}

/// Decodes a protobuf list page into kube's `ObjectList`.
pub(crate) fn page<K: Resource + Clone>(
    body: &[u8],
    decode: DecodeFn<K>,
    strip_managed_fields: bool,
) -> Result<ObjectList<K>, kube::Error> {
    let unknown = protowire::envelope::decode(body).map_err(error)?;
    let (meta, items) =
        protowire::list::decode(unknown.raw, decode, strip_managed_fields).map_err(error)?;
    Ok(ObjectList {
        types: TypeMeta {
            api_version: unknown.type_meta.api_version.to_owned(),
            kind: unknown.type_meta.kind.to_owned(),
        },
        metadata: ListMeta {
            continue_: Some(meta.continue_token).filter(|t| !t.is_empty()),
            remaining_item_count: meta.remaining_item_count,
            resource_version: Some(meta.resource_version).filter(|v| !v.is_empty()),
            shard_info: meta.shard_selector.map(|selector| {
                k8s_openapi::apimachinery::pkg::apis::meta::v1::ShardInfo { selector }
            }),
            ..ListMeta::default()
        },
        items,
    })
}

/// Protobuf watch frames: see the module docs. [`watch_stream::stream`] reads the body.
struct Frames<K> {
    frames: FrameReader,
    decode: DecodeFn<K>,
    strip_managed_fields: bool,
}

/// The events of a protobuf watch response whose status was a success.
pub(super) fn events<K, B>(
    body: B,
    decode: DecodeFn<K>,
    strip_managed_fields: bool,
) -> WatchStream<K>
where
    K: Resource + Send + 'static,
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let frames = Frames {
        frames: FrameReader::default(),
        decode,
        strip_managed_fields,
    };
    watch_stream::stream(body, frames)
}

/// The events [`events`] makes of a protobuf watch body that arrives in exactly these
/// chunks (no I/O).
///
/// Public only for tests and fuzz targets; not part of the crate's API.
#[doc(hidden)]
pub fn decode_chunks<K>(
    chunks: &[&[u8]],
    decode: DecodeFn<K>,
    strip_managed_fields: bool,
) -> Vec<Result<WatchEvent<K>, kube::Error>>
where
    K: Resource + Send + 'static,
{
    let body = watch_stream::in_memory(chunks);
    futures::executor::block_on(events::<K, _>(body, decode, strip_managed_fields).collect())
}

impl<K: Resource + Send + 'static> EventDecoder<K> for Frames<K> {
    /// Decodes every whole frame buffered. A framing error (a length over the limit)
    /// ends the stream: nothing after it can be trusted to be a frame boundary.
    fn push(&mut self, data: &[u8], out: &mut Decoded<K>) -> bool {
        self.frames.extend(data);
        loop {
            match self.frames.next_frame() {
                Ok(Some(frame)) => out.push_back(self.event(&frame)),
                Ok(None) => return true,
                Err(e) => {
                    out.push_back(Err(error(e)));
                    return false;
                }
            }
        }
    }

    /// A frame cut by the end of the connection is dropped, as a cut JSON line is.
    fn end(&mut self, _out: &mut Decoded<K>) {}
}

impl<K: Resource> Frames<K> {
    fn event(&self, frame: &[u8]) -> Result<WatchEvent<K>, kube::Error> {
        let event = protowire::watch::decode(frame).map_err(error)?;
        let object = || {
            (self.decode)(
                Reader::new(event.object.raw).skipping_managed_fields(self.strip_managed_fields),
            )
            .map_err(error)
        };
        Ok(match event.event_type {
            "ADDED" => WatchEvent::Added(object()?),
            "MODIFIED" => WatchEvent::Modified(object()?),
            "DELETED" => WatchEvent::Deleted(object()?),
            "BOOKMARK" => {
                let object = object()?;
                WatchEvent::Bookmark(Bookmark {
                    types: TypeMeta {
                        api_version: event.object.type_meta.api_version.to_owned(),
                        kind: event.object.type_meta.kind.to_owned(),
                    },
                    metadata: BookmarkMeta {
                        resource_version: object.resource_version().unwrap_or_default(),
                        annotations: object.annotations().clone(),
                    },
                })
            }
            "ERROR" => {
                let status =
                    protowire::meta::status(Reader::new(event.object.raw)).map_err(error)?;
                WatchEvent::Error(Box::new(gentype::response::kube_status(status)))
            }
            other => {
                return Err(error(DecodeError::InvalidValue {
                    name: "WatchEvent.type",
                    message: format!("unknown event type {other:?}"),
                }));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::WatchEvent;

    use super::decode_chunks;

    fn field(number: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, payload.len() as u8];
        out.extend(payload);
        out
    }

    fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut type_meta = field(1, b"v1");
        type_meta.extend(field(2, kind.as_bytes()));
        let mut out = b"k8s\0".to_vec();
        out.extend(field(1, &type_meta));
        out.extend(field(2, raw));
        out
    }

    fn frame(event_type: &str, object: &[u8]) -> Vec<u8> {
        let mut event = field(1, event_type.as_bytes());
        event.extend(field(2, &field(1, object)));
        let mut out = (event.len() as u32).to_be_bytes().to_vec();
        out.extend(event);
        out
    }

    /// ConfigMap{metadata{name, resourceVersion}}.
    fn config_map(name: &str, version: &str) -> Vec<u8> {
        let mut meta = field(1, name.as_bytes());
        meta.extend(field(6, version.as_bytes()));
        field(1, &meta)
    }

    fn stream() -> Vec<u8> {
        let mut bookmark_meta = field(6, b"9");
        let mut annotation = field(1, b"k8s.io/initial-events-end");
        annotation.extend(field(2, b"true"));
        bookmark_meta.extend(field(12, &annotation));
        // Status{status "Failure", reason "Expired", code 410}.
        let mut status = field(2, b"Failure");
        status.extend(field(4, b"Expired"));
        status.extend([0x30, 0x9a, 0x03]);

        let mut out = frame("ADDED", &envelope("ConfigMap", &config_map("a", "7")));
        out.extend(frame(
            "BOOKMARK",
            &envelope("ConfigMap", &field(1, &bookmark_meta)),
        ));
        out.extend(frame(
            "DELETED",
            &envelope("ConfigMap", &config_map("a", "8")),
        ));
        out.extend(frame("ERROR", &envelope("Status", &status)));
        out
    }

    fn summary(events: &[Result<WatchEvent<ConfigMap>, kube::Error>]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(o)) => format!("added {:?}", o.metadata.name),
                Ok(WatchEvent::Modified(o)) => format!("modified {:?}", o.metadata.name),
                Ok(WatchEvent::Deleted(o)) => format!("deleted {:?}", o.metadata.name),
                Ok(WatchEvent::Bookmark(b)) => format!(
                    "bookmark {} {:?}",
                    b.metadata.resource_version,
                    b.metadata.annotations.get("k8s.io/initial-events-end")
                ),
                Ok(WatchEvent::Error(s)) => format!("error {} {}", s.code, s.reason),
                Err(e) => format!("failed: {e}"),
            })
            .collect()
    }

    #[test]
    fn a_protobuf_watch_decodes_however_it_is_chunked() {
        let decode = protowire::registry::decoder::<ConfigMap>().expect("generated");
        let stream = stream();
        let whole = summary(&decode_chunks::<ConfigMap>(&[&stream], decode, true));
        assert_eq!(
            whole,
            [
                "added Some(\"a\")",
                "bookmark 9 Some(\"true\")",
                "deleted Some(\"a\")",
                "error 410 Expired",
            ]
        );
        for size in [1, 3, 7, 64] {
            let chunks: Vec<&[u8]> = stream.chunks(size).collect();
            let events = decode_chunks::<ConfigMap>(&chunks, decode, true);
            assert_eq!(summary(&events), whole, "chunks of {size}");
        }
    }

    #[test]
    fn a_garbled_frame_is_an_error_and_a_cut_one_is_dropped() {
        let decode = protowire::registry::decoder::<ConfigMap>().expect("generated");
        let mut stream = frame("ADDED", b"not an envelope");
        stream.extend(&frame("ADDED", &envelope("ConfigMap", &config_map("b", "3")))[..9]);
        let events = decode_chunks::<ConfigMap>(&[&stream], decode, false);
        assert_eq!(events.len(), 1, "{:?}", summary(&events));
        assert!(events[0].is_err());
        // A length over the limit ends the stream with an error, without allocating it.
        let huge = [0xff, 0xff, 0xff, 0xff, 1, 2, 3];
        let events = decode_chunks::<ConfigMap>(&[&huge], decode, false);
        assert_eq!(events.len(), 1);
        assert!(events[0].is_err());
    }
}
