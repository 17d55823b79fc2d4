//! The clock the correlator and the recorder read: client-go's `clock.PassiveClock`.
//!
//! Two kinds of time are involved, and they are kept apart on purpose:
//!
//! * **Windows** (the aggregator's 10 minutes, the spam filter's token refill) are
//!   measured with a monotonic [`tokio::time::Instant`]. Under
//!   `#[tokio::test(start_paused = true)]` that clock only moves when the test
//!   advances it, so "ten minutes later" is exact and instant.
//! * **Timestamps** written into Events (`firstTimestamp`, `lastTimestamp`, and the
//!   hex suffix of generated names) are wall-clock time, because people read them
//!   in `kubectl get events`.
//!
//! [`RealClock`] reads both from the system. [`TokioClock`] derives the wall clock
//! from tokio's clock (an anchor taken at construction plus the tokio time elapsed
//! since), so tests with paused time also get deterministic timestamps.

use std::fmt;
use std::time::{Duration, SystemTime};

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// A source of monotonic and wall-clock time. Implementations must be cheap and
/// must never block: the recorder calls [`Clock::wall_now`] on the caller's thread.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Monotonic time, for windows and token buckets.
    fn now(&self) -> Instant;
    /// Wall-clock time, for the timestamps written into Events.
    fn wall_now(&self) -> Timestamp;
}

/// The system clocks: `tokio::time::Instant::now()` and `SystemTime::now()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealClock;

impl Clock for RealClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall_now(&self) -> Timestamp {
        system_time_to_timestamp(SystemTime::now())
    }
}

/// A clock whose wall time follows tokio's (pausable) clock: the wall time at
/// construction plus the tokio time elapsed since. Use it in tests with paused time.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    anchor_instant: Instant,
    anchor_wall: Timestamp,
}

impl TokioClock {
    /// Anchors the wall clock at the current system time.
    pub fn new() -> Self {
        Self::with_wall_time(system_time_to_timestamp(SystemTime::now()))
    }

    /// Anchors the wall clock at `wall` (fully deterministic timestamps).
    pub fn with_wall_time(wall: Timestamp) -> Self {
        Self {
            anchor_instant: Instant::now(),
            anchor_wall: wall,
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall_now(&self) -> Timestamp {
        let elapsed = Instant::now().saturating_duration_since(self.anchor_instant);
        add_duration(self.anchor_wall, elapsed)
    }
}

/// `wall + elapsed`, saturating at the largest timestamp instead of panicking.
fn add_duration(wall: Timestamp, elapsed: Duration) -> Timestamp {
    wall.checked_add(elapsed).unwrap_or(Timestamp::MAX)
}

/// Converts a `SystemTime`; times outside jiff's range (never in practice) clamp.
fn system_time_to_timestamp(t: SystemTime) -> Timestamp {
    Timestamp::try_from(t).unwrap_or_else(|_| {
        if t < SystemTime::UNIX_EPOCH {
            Timestamp::UNIX_EPOCH
        } else {
            Timestamp::MAX
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_wall_time_follows_paused_time() {
        let start = Timestamp::from_second(1_700_000_000).unwrap();
        let clock = TokioClock::with_wall_time(start);
        assert_eq!(clock.wall_now(), start);
        tokio::time::advance(Duration::from_secs(600)).await;
        assert_eq!(
            clock.wall_now(),
            Timestamp::from_second(1_700_000_600).unwrap()
        );
    }
}
