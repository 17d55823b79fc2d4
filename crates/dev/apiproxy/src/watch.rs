//! A JSON watch stream, event by event.
//!
//! The API server answers a JSON watch with one event a line, `{"type":"ADDED",
//! "object":{...}}\n`, and sends it in body frames that need not follow the lines: one
//! frame may carry several events, one event may span several frames. [`transform`]
//! reassembles the lines, hands each event to a callback exactly once, and forwards
//! what the callback decides; [`Lines`] is its line splitter.

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use serde::Deserialize;

use crate::body::{BodyError, ProxyBody};

/// One event of a watch stream.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The object (a `Status` for `ERROR`).
    pub object: serde_json::Value,
}

impl WatchEvent {
    /// The object's `metadata.<field>` as a string, if it has one.
    pub fn metadata(&self, field: &str) -> Option<&str> {
        self.object.get("metadata")?.get(field)?.as_str()
    }

    /// The object's `namespace/name` key (`name` for a cluster-scoped object).
    pub fn key(&self) -> Option<String> {
        let name = self.metadata("name")?;
        Some(match self.metadata("namespace") {
            Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
            _ => name.to_string(),
        })
    }
}

/// What to do with one event.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Forward it as the API server sent it.
    Forward,
    /// Withhold it: the client never sees it.
    Drop,
    /// Send this event in its place.
    Replace(serde_json::Value),
}

/// Splits a byte stream into lines, whatever the chunks: a line split across chunks
/// comes out once, whole.
#[derive(Debug, Default)]
pub struct Lines {
    pending: BytesMut,
}

impl Lines {
    /// Appends `chunk`; returns the lines it completed, each with its `\n`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Bytes> {
        self.pending.extend_from_slice(chunk);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            lines.push(self.pending.split_to(end + 1).freeze());
        }
        lines
    }

    /// What is left after the last `\n` (an unterminated last line), emptied.
    pub fn rest(&mut self) -> Bytes {
        std::mem::take(&mut self.pending).freeze()
    }
}

/// `body` (a JSON watch stream), with `decide` called once per event in order and its
/// [`Verdict`] applied. Lines that are not an event (blank, or not JSON) are forwarded
/// untouched without a call, as is an unterminated last line. Frames whose events are
/// all withheld send nothing; the others are sent as soon as their last complete line
/// is.
pub fn transform<F>(body: ProxyBody, decide: F) -> ProxyBody
where
    F: FnMut(&WatchEvent) -> Verdict + Send + 'static,
{
    transform_until(body, decide, std::future::pending())
}

/// [`transform`], ended early by `until`: when it completes, the bytes it gives are
/// sent (after the last complete event; a line still arriving is dropped) and the
/// stream ends, whatever the upstream still has. What the API server does to a watch it
/// can no longer serve: an `ERROR` event, then the end of the stream.
pub fn transform_until<F, U>(body: ProxyBody, decide: F, until: U) -> ProxyBody
where
    F: FnMut(&WatchEvent) -> Verdict + Send + 'static,
    U: Future<Output = Bytes> + Send + 'static,
{
    Transform {
        body,
        lines: Lines::default(),
        decide: Box::new(decide),
        until: Some(Box::pin(until)),
        ended: false,
    }
    .boxed_unsync()
}

type Decide = Box<dyn FnMut(&WatchEvent) -> Verdict + Send>;

struct Transform {
    body: ProxyBody,
    lines: Lines,
    decide: Decide,
    /// Ends the stream early with its bytes ([`transform_until`]).
    until: Option<Pin<Box<dyn Future<Output = Bytes> + Send>>>,
    ended: bool,
}

impl Transform {
    /// The bytes to send for `chunk`'s complete lines.
    fn apply(&mut self, chunk: &[u8]) -> BytesMut {
        let mut out = BytesMut::new();
        for line in self.lines.push(chunk) {
            let Ok(event) = serde_json::from_slice::<WatchEvent>(&line) else {
                out.extend_from_slice(&line);
                continue;
            };
            match (self.decide)(&event) {
                Verdict::Forward => out.extend_from_slice(&line),
                Verdict::Drop => {}
                Verdict::Replace(value) => {
                    out.extend_from_slice(value.to_string().as_bytes());
                    out.extend_from_slice(b"\n");
                }
            }
        }
        out
    }
}

impl Body for Transform {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            if let Some(until) = this.until.as_mut()
                && let Poll::Ready(last) = until.as_mut().poll(cx)
            {
                this.until = None;
                this.ended = true;
                return Poll::Ready(Some(Ok(Frame::data(last))));
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        let out = this.apply(&data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out.freeze()))));
                        }
                    }
                    // Trailers pass as they are.
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    this.ended = true;
                    let rest = this.lines.rest();
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(rest))));
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        // Events may be withheld or replaced: the length is not known.
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_come_out_once_and_whole() {
        let mut lines = Lines::default();
        assert!(lines.push(b"{\"type\":\"ADD").is_empty());
        assert_eq!(
            lines.push(b"ED\"}\n{\"a\":1}\n{\"b\""),
            [
                Bytes::from_static(b"{\"type\":\"ADDED\"}\n"),
                Bytes::from_static(b"{\"a\":1}\n")
            ]
        );
        assert_eq!(lines.push(b":2}\n"), [Bytes::from_static(b"{\"b\":2}\n")]);
        assert!(lines.push(b"tail").is_empty());
        assert_eq!(lines.rest(), Bytes::from_static(b"tail"));
        assert!(lines.rest().is_empty());
    }

    #[test]
    fn an_event_names_its_object() {
        let event: WatchEvent = serde_json::from_str(
            r#"{"type":"MODIFIED","object":{"metadata":{"name":"web","namespace":"ns","resourceVersion":"7"}}}"#,
        )
        .expect("an event");
        assert_eq!(event.event_type, "MODIFIED");
        assert_eq!(event.key().as_deref(), Some("ns/web"));
        assert_eq!(event.metadata("resourceVersion"), Some("7"));
        let node: WatchEvent =
            serde_json::from_str(r#"{"type":"ADDED","object":{"metadata":{"name":"n1"}}}"#)
                .expect("an event");
        assert_eq!(node.key().as_deref(), Some("n1"));
    }
}
