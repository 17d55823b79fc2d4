//! When a sync ran: its start, its length, and when its *last poll began*, which is
//! what the loop's `synced` debug lines report (`elapsed`, `started_at`,
//! `last_poll_at`).
//!
//! Why the last poll: a sync is a future, and the sharding fence ([`crate::gate`])
//! checks its pass before *every poll*. Nothing can check inside a poll: if the
//! process is frozen (SIGSTOP, a paused VM) or its thread is descheduled halfway
//! through one, the rest of that poll runs after the thaw, unchecked, and the sync's
//! `elapsed` then includes the freeze. So "the sync ended after its replica lost the
//! key" does not by itself mean the fence failed; "one of its polls *began* after
//! that" does. The chaos soak and the sharding e2e test read `last_poll_at` to tell
//! the two apart (docs/reliability.md, finding 12). The clock is taken before the
//! pass's check, so a freeze between the two makes the check, not the clock, see it.
//!
//! `started_at` is the wall clock when the sync began; `last_poll_at` is that plus
//! the monotonic time to the last poll's start, so a wall-clock step during the sync
//! does not bend the interval.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// The times of one sync. See the [module docs](self).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyncClock {
    started: Instant,
    started_wall: SystemTime,
    last_poll: Instant,
}

impl SyncClock {
    /// A sync starts now.
    pub(crate) fn start() -> Self {
        let started = Instant::now();
        Self {
            started,
            started_wall: SystemTime::now(),
            last_poll: started,
        }
    }

    /// Polls `sync` to completion, noting the instant each poll begins.
    ///
    /// It takes the sync pinned where the caller keeps it, not by value: a sync
    /// future can be large, and moving it into one more future costs stack on every
    /// poll in debug builds (a test thread's 2 MiB overflowed when it did).
    pub(crate) async fn run<F: Future>(&mut self, mut sync: Pin<&mut F>) -> F::Output {
        let last_poll = &mut self.last_poll;
        std::future::poll_fn(|cx| {
            *last_poll = Instant::now();
            sync.as_mut().poll(cx)
        })
        .await
    }

    /// From the start until now.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// From the start until the last poll began.
    pub(crate) fn until_last_poll(&self) -> Duration {
        self.last_poll.saturating_duration_since(self.started)
    }

    /// The wall clock when the sync started (RFC 3339, microseconds).
    pub(crate) fn started_at(&self) -> WallClock {
        WallClock(self.started_wall)
    }

    /// The wall clock when the sync's last poll began (RFC 3339, microseconds).
    pub(crate) fn last_poll_at(&self) -> WallClock {
        WallClock(self.started_wall + self.until_last_poll())
    }
}

/// A wall-clock instant printed as RFC 3339 UTC with microseconds, as the JSON logs'
/// own `timestamp`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WallClock(SystemTime);

impl fmt::Display for WallClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match k8s_openapi::jiff::Timestamp::try_from(self.0) {
            Ok(ts) => write!(f, "{ts:.6}"),
            Err(_) => f.write_str("?"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_last_poll_is_the_one_that_finished_the_sync() {
        let mut clock = SyncClock::start();
        let out = clock
            .run(pin!(async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                tokio::time::sleep(Duration::from_secs(3)).await;
                7
            }))
            .await;
        assert_eq!(out, 7);
        assert_eq!(clock.until_last_poll(), Duration::from_secs(5));
        assert_eq!(clock.elapsed(), Duration::from_secs(5));
    }

    /// A thread stalled inside the final poll (descheduled, or the whole process
    /// frozen) lengthens `elapsed` but not the time to the last poll's start.
    #[tokio::test]
    async fn a_stall_inside_the_last_poll_does_not_move_its_start() {
        let mut clock = SyncClock::start();
        clock
            .run(pin!(async {
                std::thread::sleep(Duration::from_millis(300));
            }))
            .await;
        // Everything from the last poll's start on: the stall included.
        let after_last_poll = clock.elapsed() - clock.until_last_poll();
        assert!(
            after_last_poll >= Duration::from_millis(300),
            "{after_last_poll:?}"
        );
    }

    #[test]
    fn wall_clock_prints_like_the_logs_timestamps() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_500_000);
        assert_eq!(WallClock(t).to_string(), "1970-01-01T00:00:01.500000Z");
    }
}
