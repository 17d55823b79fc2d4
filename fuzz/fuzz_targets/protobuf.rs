//! Kubernetes protobuf (`protowire`): what the API server sends a client that asks for
//! `application/vnd.kubernetes.protobuf`: an envelope (`k8s\0` + `runtime.Unknown`)
//! around an object, and a watch stream of length-delimited frames of `WatchEvent`s
//! whose objects are envelopes again.
//!
//! Input: the first byte picks the HTTP chunk size the stream is cut into (1-256); the
//! rest is the body. Checks:
//! * decoding never panics, whatever the bytes (an envelope, an object of each kind the
//!   generated decoders cover, a list meta, a `Status`), and a failure is an error;
//! * frames come out the same however the stream is cut: cutting it into chunks gives
//!   exactly the frames (and the same error, offset included) that handing it over
//!   whole gives;
//! * every frame that is a `WatchEvent` has an envelope whose object decodes or fails
//!   cleanly.

#![no_main]

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::events::v1::Event;
use libfuzzer_sys::fuzz_target;
use protowire::{DecodeError, FrameReader, Reader, envelope, meta, watch};

/// The frames of `stream` handed over in chunks of `chunk` bytes, and how it ended.
fn frames(stream: &[u8], chunk: usize) -> (Vec<Vec<u8>>, Result<(), DecodeError>) {
    let mut reader = FrameReader::new(1 << 16);
    let mut out = Vec::new();
    for piece in stream.chunks(chunk.max(1)) {
        reader.extend(piece);
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => out.push(frame),
                Ok(None) => break,
                Err(e) => return (out, Err(e)),
            }
        }
    }
    let end = reader.finish();
    (out, end)
}

/// Decodes `raw` as every generated root kind; none may panic.
fn objects(raw: &[u8]) {
    let _ = protowire::decode::<Deployment>(raw);
    let _ = protowire::decode::<Pod>(raw);
    let _ = protowire::decode::<Service>(raw);
    let _ = protowire::decode::<ConfigMap>(raw);
    let _ = protowire::decode::<Event>(raw);
    let _ = meta::list_meta(Reader::new(raw));
    let _ = meta::status(Reader::new(raw));
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    // A whole response: an envelope, or (for robustness) bare bytes.
    if let Ok(unknown) = envelope::decode(body) {
        objects(unknown.raw);
    }
    objects(body);

    // A watch stream.
    let (whole, whole_end) = frames(body, body.len().max(1));
    let (cut_up, cut_end) = frames(body, usize::from(cut) + 1);
    assert_eq!(cut_up, whole, "chunks of {} bytes", usize::from(cut) + 1);
    assert_eq!(
        cut_end,
        whole_end,
        "chunks of {} bytes",
        usize::from(cut) + 1
    );
    for frame in &whole {
        if let Ok(event) = watch::decode(frame) {
            objects(event.object.raw);
        }
    }
});
