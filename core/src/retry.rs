//! The one backoff policy: how long to wait before attempt `n + 1` after `n`
//! failures. Used by the phone's outbox flush, the server's webhook and push
//! workers and the Rust client's long-poll loop, so a change to the curve
//! (or to the jitter) is made here once.
//!
//! The curve is backon's exponential builder: `min · factor^(n-1)`, capped at
//! `max`, with full jitter added on top (a random extra in `[0, delay)`), so a
//! crowd of phones that lost the network at once does not come back in step.
//! Each policy is a plain value; attempts are counted by the caller and stored
//! with the job (outbox rows, delivery rows), which is why we compute one delay
//! at a time instead of holding an iterator across restarts.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBuilder};

/// An exponential backoff with jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// The delay after the first failure (before jitter).
    pub min: Duration,
    /// No delay is longer than this (before jitter).
    pub max: Duration,
    /// Growth per failure.
    pub factor: f32,
    /// Add a random extra in `[0, delay)`.
    pub jitter: bool,
}

impl RetryPolicy {
    /// The phone's outbox: 2 s, 4 s, 8 s… up to 10 minutes.
    pub const PHONE_ANSWER: RetryPolicy = RetryPolicy::exponential(2, 600);
    /// Webhook deliveries: 1 s doubling up to an hour. The first delay is
    /// the server's `webhook_retry_base` setting, whose default is this.
    pub const WEBHOOK: RetryPolicy = RetryPolicy {
        min: Duration::from_secs(1),
        max: Duration::from_secs(3_600),
        factor: 2.0,
        jitter: true,
    };
    /// A sign-out the server has not heard of yet (made offline), tried by
    /// the phone's flush and sync: 30 s doubling up to an hour.
    pub const SIGN_OUT: RetryPolicy = RetryPolicy::exponential(30, 3_600);
    /// Push jobs when the gateway gave no Retry-After: 0.5 s doubling up to
    /// an hour (a push is worth most in its first seconds; the gateways'
    /// own Retry-After wins when they give one).
    pub const PUSH: RetryPolicy = RetryPolicy {
        min: Duration::from_millis(500),
        max: Duration::from_secs(3_600),
        factor: 2.0,
        jitter: true,
    };
    /// The server writing a batch of push outcomes again after the
    /// database refused it: 0.5 s, 1 s, 2 s, no jitter (the three must fit
    /// the lease's record margin, which the push budget counts exactly).
    pub const OUTCOME_WRITE: RetryPolicy = RetryPolicy {
        min: Duration::from_millis(500),
        max: Duration::from_secs(2),
        factor: 2.0,
        jitter: false,
    };
    /// The asker's long-poll loop riding out a restarting server: 0.5 s to 10 s.
    pub const CLIENT_WAIT: RetryPolicy = RetryPolicy {
        min: Duration::from_millis(500),
        max: Duration::from_secs(10),
        factor: 2.0,
        jitter: true,
    };

    /// Doubling from `min_secs` up to `max_secs`, with jitter.
    pub const fn exponential(min_secs: u64, max_secs: u64) -> RetryPolicy {
        RetryPolicy {
            min: Duration::from_secs(min_secs),
            max: Duration::from_secs(max_secs),
            factor: 2.0,
            jitter: true,
        }
    }

    /// The same curve from another first delay (for a configured base).
    pub fn with_min(self, min: Duration) -> RetryPolicy {
        RetryPolicy { min, ..self }
    }

    /// The wait after `failures` failed attempts (1 = the first failure).
    /// Zero failures wait nothing.
    pub fn delay(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let mut builder = ExponentialBuilder::new()
            .with_min_delay(self.min)
            .with_max_delay(self.max)
            .with_factor(self.factor)
            .without_max_times();
        if self.jitter {
            builder = builder.with_jitter();
        }
        // The curve is capped after a few dozen steps; no need to walk further.
        let step = failures.min(64) as usize - 1;
        builder.build().nth(step).unwrap_or(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_is_capped_and_jittered() {
        let p = RetryPolicy::exponential(2, 600);
        assert_eq!(p.delay(0), Duration::ZERO);
        let first = p.delay(1);
        assert!(
            first >= Duration::from_secs(2) && first < Duration::from_secs(4),
            "{first:?}"
        );
        let fourth = p.delay(4);
        assert!(
            fourth >= Duration::from_secs(16) && fourth < Duration::from_secs(32),
            "{fourth:?}"
        );
        for n in [20, 64, 1000, u32::MAX] {
            let d = p.delay(n);
            assert!(
                d >= Duration::from_secs(600) && d < Duration::from_secs(1200),
                "{n}: {d:?}"
            );
        }
        // Jitter: a hundred draws are not all the same.
        let draws: std::collections::HashSet<_> = (0..100).map(|_| p.delay(3)).collect();
        assert!(draws.len() > 10);
        let fixed = RetryPolicy { jitter: false, ..p };
        assert_eq!(fixed.delay(3), Duration::from_secs(8));
    }
}
