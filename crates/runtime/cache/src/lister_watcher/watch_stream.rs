//! Reading a watch: the API server's stream of JSON lines, split and decoded here.
//!
//! A watch response is one JSON event per line (`{"type":"ADDED","object":{..}}\n`),
//! sent in chunks that rarely line up with the lines. `kube::Api::watch` reads it
//! through tokio-util's `LinesCodec`, which copies every byte into its own buffer,
//! checks it is UTF-8 while building a `String`, and hands that to
//! `serde_json::from_str`. A streaming list is tens of thousands of such lines
//! (docs/benchmarks.md), so this module does less per line:
//!
//! * lines are found with `memchr` in the chunk as it arrived and decoded in place;
//!   only a line cut by a chunk boundary is copied, to join its two halves;
//! * the UTF-8 check runs once over the line's bytes (`str::from_utf8`, vectorised),
//!   and `serde_json::from_str` then trusts it;
//! * with [`strip_managed_fields`](super::ApiListerWatcher::strip_managed_fields), the
//!   object's `metadata.managedFields` is cut out of the line before it is decoded
//!   ([`json_scan`]).
//!
//! What a line decodes to is `kube`'s: an event, an `ERROR` event carrying a
//! `Status`, a `Status` alone as [`kube::Error::Api`], or a decoding error. An
//! unexpected end of the connection (the server's timeout, a proxy cutting it) and a
//! client read timeout end the stream quietly, as `kube` does, so the reflector
//! simply watches again.

use std::collections::VecDeque;
use std::io;

use bytes::Bytes;
use futures::StreamExt;
use http_body::Body;
use http_body_util::BodyExt;
use kube::Resource;
use kube::api::WatchEvent;
use kube::core::Status;
use serde::de::DeserializeOwned;

use super::{WatchStream, json_scan};

/// Events decoded so far, not yet handed out.
pub(super) type Decoded<K> = VecDeque<Result<WatchEvent<K>, kube::Error>>;

/// How one wire turns a watch body's bytes into events: JSON lines here, protobuf
/// frames in [`protobuf`](super::protobuf). [`stream`] reads the body for both.
pub(super) trait EventDecoder<K>: Send + 'static {
    /// Decodes the events `data` completes into `out`. `false`: the stream cannot go
    /// on (nothing after a framing error is known to be an event boundary).
    fn push(&mut self, data: &[u8], out: &mut Decoded<K>) -> bool;
    /// The body ended: whatever is left over.
    fn end(&mut self, out: &mut Decoded<K>);
}

/// The body and the events decoded from it.
struct Reading<K, B, D> {
    body: B,
    decoder: D,
    decoded: Decoded<K>,
    ended: bool,
}

/// The events `decoder` makes of a watch response body whose status was a success. An
/// unexpected end of the connection and a client read timeout end the stream quietly
/// (see the module docs); another body error is the stream's last item.
pub(super) fn stream<K, B, D>(body: B, decoder: D) -> WatchStream<K>
where
    K: Send + 'static,
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
    D: EventDecoder<K>,
{
    let reading = Reading {
        body,
        decoder,
        decoded: VecDeque::new(),
        ended: false,
    };
    futures::stream::unfold(reading, |mut r| async move {
        loop {
            if let Some(event) = r.decoded.pop_front() {
                return Some((event, r));
            }
            if r.ended {
                return None;
            }
            match r.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        r.ended = !r.decoder.push(&data, &mut r.decoded);
                    }
                }
                Some(Err(e)) => {
                    r.ended = true;
                    if ends_quietly(&e) {
                        tracing::debug!(error = %e, "watch connection ended");
                    } else {
                        r.decoded
                            .push_back(Err(kube::Error::ReadEvents(io::Error::other(e))));
                    }
                }
                None => {
                    r.ended = true;
                    r.decoder.end(&mut r.decoded);
                }
            }
        }
    })
    .boxed()
}

/// One chunk of an in-memory body.
type Chunk = Result<http_body::Frame<Bytes>, io::Error>;

/// A body that arrives in exactly these chunks (no I/O), for `decode_chunks`.
pub(super) fn in_memory(
    chunks: &[&[u8]],
) -> http_body_util::StreamBody<futures::stream::Iter<std::vec::IntoIter<Chunk>>> {
    let frames: Vec<Chunk> = chunks
        .iter()
        .map(|chunk| Ok(http_body::Frame::data(Bytes::copy_from_slice(chunk))))
        .collect();
    http_body_util::StreamBody::new(futures::stream::iter(frames))
}

/// JSON lines: see the module docs.
struct Lines {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// A line with its managedFields cut out (reused from line to line).
    stripped: Vec<u8>,
    strip_managed_fields: bool,
}

/// The events of a watch response whose status was a success.
pub(super) fn events<K, B>(body: B, strip_managed_fields: bool) -> WatchStream<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
    B: Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let lines = Lines {
        partial: Vec::new(),
        stripped: Vec::new(),
        strip_managed_fields,
    };
    stream(body, lines)
}

/// The events [`events`] makes of a watch response body that arrives in exactly these
/// chunks (no I/O: the body is in memory).
///
/// Public only for the fuzz targets (`fuzz/`, docs/reliability.md); not part of the
/// crate's API.
#[doc(hidden)]
pub fn decode_chunks<K>(
    chunks: &[&[u8]],
    strip_managed_fields: bool,
) -> Vec<Result<WatchEvent<K>, kube::Error>>
where
    K: Resource + DeserializeOwned + Send + 'static,
{
    let body = in_memory(chunks);
    futures::executor::block_on(events::<K, _>(body, strip_managed_fields).collect())
}

impl<K: Resource + DeserializeOwned + Send + 'static> EventDecoder<K> for Lines {
    fn push(&mut self, data: &[u8], out: &mut Decoded<K>) -> bool {
        self.split(data, out);
        true
    }

    fn end(&mut self, out: &mut Decoded<K>) {
        // A last line without its newline.
        let last = std::mem::take(&mut self.partial);
        self.decode(&last, out);
    }
}

impl Lines {
    /// Splits `data` into lines, joining the first with what the previous chunk left.
    fn split<K: Resource + DeserializeOwned>(&mut self, data: &[u8], out: &mut Decoded<K>) {
        let mut rest: &[u8] = data;
        if !self.partial.is_empty() {
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return;
            };
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..end]);
            self.decode(&line, out);
            // Keep the buffer's capacity for the next cut line.
            line.clear();
            self.partial = line;
            rest = &rest[end + 1..];
        }
        while let Some(end) = memchr::memchr(b'\n', rest) {
            self.decode(&rest[..end], out);
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// Decodes one line into `decoded`; blank lines are skipped.
    fn decode<K: Resource + DeserializeOwned>(&mut self, line: &[u8], out: &mut Decoded<K>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let stripped = self.strip_managed_fields
            && json_scan::without_managed_fields(line, &mut self.stripped);
        let bytes = if stripped { &self.stripped[..] } else { line };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let e = io::Error::new(io::ErrorKind::InvalidData, e);
                out.push_back(Err(kube::Error::ReadEvents(e)));
                return;
            }
        };
        let event = match serde_json::from_str::<WatchEvent<K>>(text) {
            Ok(mut event) => {
                if self.strip_managed_fields {
                    // In case the line was shaped so that the cut could not be made.
                    if let WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) =
                        &mut event
                    {
                        o.meta_mut().managed_fields = None;
                    }
                }
                Ok(event)
            }
            // A truncated line (the connection ended mid-event): dropped, as kube does.
            Err(e) if e.is_eof() => return,
            // A bare `Status` (every field of which is optional, so any object would
            // decode as one: it must at least say it failed or carry a code).
            Err(e) => match serde_json::from_str::<Status>(text) {
                Ok(status) if status.status.is_some() || status.code != 0 => {
                    Err(kube::Error::Api(status.boxed()))
                }
                _ => Err(kube::Error::SerdeError(e)),
            },
        };
        out.push_back(event);
    }
}

/// Whether a body error is the end of a watch rather than a failure: the connection
/// closed mid-chunk (TLS and HTTP nest an `UnexpectedEof`) or the client's read
/// timeout fired. `kube`'s watch treats both the same way.
fn ends_quietly(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    // Bounded, in case a custom `source` chain loops.
    for _ in 0..16 {
        let Some(e) = current else { break };
        if let Some(io) = e.downcast_ref::<io::Error>()
            && matches!(
                io.kind(),
                io::ErrorKind::UnexpectedEof | io::ErrorKind::TimedOut
            )
        {
            return true;
        }
        current = e.source();
    }
    error.to_string().contains("unexpected EOF during chunk")
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;
    use http_body::Frame;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::WatchEvent;

    use super::events;

    type Chunks = futures::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>>;

    /// A body that arrives in exactly these chunks.
    fn body_of(chunks: &[&[u8]]) -> http_body_util::StreamBody<Chunks> {
        let frames: Vec<_> = chunks
            .iter()
            .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    fn names(events: &[Result<WatchEvent<ConfigMap>, kube::Error>]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                Ok(WatchEvent::Added(cm)) => {
                    format!("added {}", cm.metadata.name.as_deref().unwrap_or(""))
                }
                Ok(WatchEvent::Modified(cm)) => {
                    format!("modified {}", cm.metadata.name.as_deref().unwrap_or(""))
                }
                Ok(WatchEvent::Deleted(cm)) => {
                    format!("deleted {}", cm.metadata.name.as_deref().unwrap_or(""))
                }
                Ok(WatchEvent::Bookmark(b)) => format!("bookmark {}", b.metadata.resource_version),
                Ok(WatchEvent::Error(s)) => format!("error event {}", s.code),
                Err(kube::Error::Api(s)) => format!("api error {}", s.code),
                Err(e) => format!("error {e}"),
            })
            .collect()
    }

    const A: &str =
        r#"{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}}}"#;
    const B: &str = r#"{"type":"MODIFIED","object":{"metadata":{"name":"b"}}}"#;
    const MARK: &str = r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}"#;

    #[tokio::test]
    async fn lines_cut_anywhere_by_chunks_decode_in_order() {
        let all = format!("{A}\n{B}\n\n{MARK}\n");
        // Every split point of the whole stream into two chunks, and one byte per chunk.
        for cut in 0..=all.len() {
            let chunks = [&all.as_bytes()[..cut], &all.as_bytes()[cut..]];
            let got: Vec<_> = events::<ConfigMap, _>(body_of(&chunks), false)
                .collect()
                .await;
            assert_eq!(
                names(&got),
                ["added a", "modified b", "bookmark 9"],
                "cut at {cut}"
            );
        }
        let one_by_one: Vec<&[u8]> = all.as_bytes().chunks(1).collect();
        let got: Vec<_> = events::<ConfigMap, _>(body_of(&one_by_one), false)
            .collect()
            .await;
        assert_eq!(names(&got), ["added a", "modified b", "bookmark 9"]);
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_decoded_and_a_truncated_one_dropped() {
        let got: Vec<_> = events::<ConfigMap, _>(body_of(&[format!("{A}\n{B}").as_bytes()]), false)
            .collect()
            .await;
        assert_eq!(names(&got), ["added a", "modified b"]);
        let truncated = &B[..B.len() - 3];
        let got: Vec<_> =
            events::<ConfigMap, _>(body_of(&[format!("{A}\n{truncated}").as_bytes()]), false)
                .collect()
                .await;
        assert_eq!(names(&got), ["added a"]);
    }

    #[tokio::test]
    async fn managed_fields_are_kept_or_stripped_as_asked() {
        for strip in [false, true] {
            let got: Vec<_> = events::<ConfigMap, _>(body_of(&[A.as_bytes(), b"\n"]), strip)
                .collect()
                .await;
            let Some(Ok(WatchEvent::Added(cm))) = got.first() else {
                panic!("expected an ADDED event, got {:?}", names(&got));
            };
            assert_eq!(
                cm.metadata.managed_fields.is_some(),
                !strip,
                "strip={strip}"
            );
            assert_eq!(cm.metadata.name.as_deref(), Some("a"));
        }
    }

    /// Found by the `watch_stream` fuzz target. Stripping decides nothing the decoder
    /// would refuse: managedFields that are not UTF-8 are an error either way. Entries
    /// that are JSON but not valid entries (a malformed `time`) are cut out unread when
    /// stripping (the point of it), and refused only when they are kept.
    #[test]
    fn stripping_refuses_broken_bytes_but_drops_malformed_entries_unread() {
        let line = |entry: &[u8]| {
            let mut line =
                br#"{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":["#.to_vec();
            line.extend_from_slice(entry);
            line.extend_from_slice(b"]}}}\n");
            line
        };
        let not_utf8 = line(b"{\"manager\":\"k\x8d\"}");
        for strip in [false, true] {
            let got = super::decode_chunks::<ConfigMap>(&[&not_utf8], strip);
            assert!(
                matches!(got.as_slice(), [Err(kube::Error::ReadEvents(_))]),
                "strip={strip}: {:?}",
                names(&got)
            );
        }
        let bad_time = line(br#"{"manager":"k","time":"2024-05-01T10:00D00Z"}"#);
        let kept = super::decode_chunks::<ConfigMap>(&[&bad_time], false);
        assert!(names(&kept)[0].starts_with("error "), "{:?}", names(&kept));
        let stripped = super::decode_chunks::<ConfigMap>(&[&bad_time], true);
        assert_eq!(names(&stripped), ["added a"]);
    }

    #[tokio::test]
    async fn statuses_and_garbage_become_errors_without_ending_the_stream() {
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}"#;
        let error_event = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gone","code":410}}"#;
        let mut input =
            format!("{status}\n{error_event}\n{{\"type\":\"ADDED\",\"object\":42}}\n").into_bytes();
        // Not UTF-8.
        input.extend_from_slice(b"\xff\n");
        input.extend_from_slice(format!("{B}\n").as_bytes());
        let got: Vec<_> = events::<ConfigMap, _>(body_of(&[&input]), false)
            .collect()
            .await;
        let got = names(&got);
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[0], "api error 410");
        assert_eq!(got[1], "error event 410");
        assert!(got[2].starts_with("error "), "{got:?}");
        assert!(got[3].starts_with("error "), "{got:?}");
        assert_eq!(got[4], "modified b");
    }
}
