//! [`RequestBody`]: a request's body under the request deadline.

use std::error::Error as StdError;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::time::{Instant, Sleep};

use super::BodyError;
use super::connection::Done;

/// The body of a request served by [`serve_connection`](super::serve_connection): the bytes as they arrive,
/// and [`BodyError::Timeout`] once the request deadline has passed with the body
/// still incomplete.
pub struct RequestBody<B = Incoming> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
    /// Tells the connection the body is done (ended or dropped).
    done: Option<Done>,
}

impl<B> std::fmt::Debug for RequestBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBody")
            .field("deadline", &self.deadline.deadline())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<B> RequestBody<B> {
    /// `inner`, failing once `deadline` has passed; `timeout` is what the error
    /// reports. ([`serve_connection`](super::serve_connection) builds these itself; this is for handlers
    /// tested without a connection.)
    pub fn new(inner: B, deadline: Instant, timeout: Duration) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            timeout,
            done: None,
        }
    }

    /// When the body must have arrived.
    pub fn deadline(&self) -> Instant {
        self.deadline.deadline()
    }

    /// [`new`](Self::new), reporting to the connection when the body has ended or is
    /// dropped.
    pub(super) fn tracked(inner: B, deadline: Instant, timeout: Duration, done: Done) -> Self {
        Self {
            done: Some(done),
            ..Self::new(inner, deadline, timeout)
        }
    }
}

impl<B> Body for RequestBody<B>
where
    B: Body + Unpin,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    type Data = B::Data;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        // Checked before reading, so a client sending steadily past the deadline is
        // cut off as well as one that stopped.
        if this.deadline.is_elapsed() {
            return Poll::Ready(Some(Err(BodyError::Timeout {
                timeout: this.timeout,
            })));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.done.take();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                if this.inner.is_end_stream() {
                    this.done.take();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(BodyError::Read(e.into())))),
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(BodyError::Timeout {
                    timeout: this.timeout,
                }))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
