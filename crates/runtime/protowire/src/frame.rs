//! The framing of a protobuf watch stream: each event is a 4-byte big-endian length,
//! then that many bytes (apimachinery `pkg/util/framer`, `LengthDelimitedFramer`).
//! HTTP chunks do not follow frames: a chunk may hold half a frame or several, so the
//! reader buffers what it is given and hands out whole frames.
//!
//! The length comes from the network, so it is checked against a limit before any
//! memory is set aside for it: a corrupt or hostile length of 4 GiB is an error, not an
//! allocation. etcd refuses objects over 1.5 MiB by default (`--max-request-bytes`),
//! so a watch event stays far below the default limit, [`DEFAULT_MAX_FRAME`].
//!
//! ```
//! use protowire::FrameReader;
//!
//! let mut frames = FrameReader::default();
//! frames.extend(b"\0\0\0\x03ab");          // half of a frame
//! assert_eq!(frames.next_frame()?, None);
//! frames.extend(b"c\0\0\0\x00");           // its end, and an empty frame
//! assert_eq!(frames.next_frame()?.as_deref(), Some(&b"abc"[..]));
//! assert_eq!(frames.next_frame()?.as_deref(), Some(&b""[..]));
//! assert!(frames.finish().is_ok());
//! # Ok::<(), protowire::DecodeError>(())
//! ```

use crate::wire::DecodeError;

/// The largest frame [`FrameReader::default`] accepts: 64 MiB.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// Cuts a byte stream into length-delimited frames.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    read: usize,
    /// Bytes of the stream before `buf[0]` (error offsets).
    consumed: usize,
    max_frame: usize,
}

impl Default for FrameReader {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameReader {
    /// A reader refusing frames longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        Self {
            buf: Vec::new(),
            read: 0,
            consumed: 0,
            max_frame,
        }
    }

    /// Adds bytes received from the stream.
    pub fn extend(&mut self, chunk: &[u8]) {
        // Drop what was handed out before growing: the buffer holds at most one
        // partial frame plus the new chunk.
        if self.read > 0 && self.read >= self.buf.len() / 2 {
            self.buf.drain(..self.read);
            self.consumed += self.read;
            self.read = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next whole frame, or `None` until more bytes arrive.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        let pending = &self.buf[self.read..];
        let Some(header) = pending.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(*header) as usize;
        if len > self.max_frame {
            return Err(DecodeError::Envelope(format!(
                "a watch frame at stream offset {} declares {len} bytes, over the limit of {}",
                self.consumed + self.read,
                self.max_frame
            )));
        }
        let Some(body) = pending.get(4..4 + len) else {
            return Ok(None);
        };
        let frame = body.to_vec();
        self.read += 4 + len;
        Ok(Some(frame))
    }

    /// The stream ended: an error if it ended inside a frame.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.read == self.buf.len() {
            Ok(())
        } else {
            Err(DecodeError::Truncated {
                offset: self.consumed + self.read,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for body in bodies {
            out.extend((body.len() as u32).to_be_bytes());
            out.extend(*body);
        }
        out
    }

    #[test]
    fn frames_come_out_whole_however_the_stream_is_cut() {
        let stream = framed(&[b"first", b"", b"the third one"]);
        for chunk in 1..=stream.len() {
            let mut frames = FrameReader::default();
            let mut out = Vec::new();
            for piece in stream.chunks(chunk) {
                frames.extend(piece);
                while let Some(frame) = frames.next_frame().expect("valid") {
                    out.push(frame);
                }
            }
            assert_eq!(
                out,
                [&b"first"[..], b"", b"the third one"],
                "chunks of {chunk}"
            );
            frames.finish().expect("ended between frames");
        }
    }

    #[test]
    fn a_stream_ending_inside_a_frame_is_truncated() {
        let stream = framed(&[b"abc", b"defg"]);
        let mut frames = FrameReader::default();
        frames.extend(&stream[..stream.len() - 1]);
        assert_eq!(frames.next_frame(), Ok(Some(b"abc".to_vec())));
        assert_eq!(frames.next_frame(), Ok(None));
        assert_eq!(frames.finish(), Err(DecodeError::Truncated { offset: 7 }));
    }

    #[test]
    fn a_huge_length_is_refused_before_any_allocation() {
        let mut frames = FrameReader::new(1024);
        frames.extend(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
        assert!(matches!(
            frames.next_frame(),
            Err(DecodeError::Envelope(message)) if message.contains("4294967295")
        ));
    }

    #[test]
    fn the_buffer_does_not_grow_with_the_stream() {
        let frame = framed(&[&[7u8; 100]]);
        let mut frames = FrameReader::default();
        for _ in 0..10_000 {
            frames.extend(&frame);
            assert!(frames.next_frame().expect("valid").is_some());
        }
        assert!(
            frames.buf.capacity() < 10 * frame.len(),
            "{}",
            frames.buf.capacity()
        );
    }
}
