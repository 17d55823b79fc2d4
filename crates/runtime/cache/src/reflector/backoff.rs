//! The reflector's backoff after errors: client-go's
//! `NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)`, exponential with jitter
//! and a reset after a quiet spell (see the [reflector's docs](super) for when it waits).

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// Backoff settings for errors: client-go's `NewExponentialBackoffManager(800ms, 30s,
/// 2min, 2.0, 1.0)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay before jitter (client-go's `Cap`): a wait lasts at most
    /// `max * (1 + jitter)`, as client-go's `wait.Backoff` jitters after capping.
    pub max: Duration,
    /// After more than this long without an error, the next delay starts from
    /// `initial` again.
    pub reset_after: Duration,
    /// Each delay is stretched by a random factor in `[1, 1 + jitter)`.
    pub jitter: f64,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            jitter: 1.0,
        }
    }
}

/// Exponential backoff with jitter and reset.
pub(super) struct Backoff {
    config: BackoffConfig,
    next: Duration,
    last: Option<Instant>,
}

impl Backoff {
    pub(super) fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            next: config.initial,
            last: None,
        }
    }

    /// The delay to wait now; doubles the next one.
    pub(super) fn delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > self.config.reset_after)
        {
            self.next = self.config.initial;
        }
        self.last = Some(now);
        let base = self.next.min(self.config.max);
        self.next = (self.next * 2).min(self.config.max);
        let factor = 1.0 + rand::rng().random::<f64>() * self.config.jitter.max(0.0);
        // Jittered after the cap, as client-go's `wait.Backoff.Step`: with the default
        // jitter of 1.0 the waits settle in [max, 2 * max).
        base.mul_f64(factor)
    }
}
