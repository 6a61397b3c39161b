//! When to try a worker connection again: a pure schedule over the run of failed attempts.
//!
//! The rule:
//! - A run of failures starts when a connection that stayed up for [`STABLE_AFTER`] drops (or
//!   at the first attempt). Its first retry comes after [`QUICK_RETRY`], so a worker whose API
//!   blipped is back within a second.
//! - For the first [`FAST_WINDOW`] of the run, delays double from [`QUICK_RETRY`] up to
//!   [`FAST_CAP`]: a worker that returns from a short outage is seen within seconds. An attempt
//!   that fails costs one `GET /version` (the full list and watch only start once that answers),
//!   so this does not hammer a dead server.
//! - After that, the run continues on DESIGN §3's schedule: doubling from [`SLOW_START`] up to
//!   [`MAX_DELAY`].
//! - A connection that came up but dropped before [`STABLE_AFTER`] does not end the run: a
//!   flapping worker (each connect lists everything) keeps backing off.
//! - Every delay loses up to [`JITTER`] of itself at random, so the workers of a manager (or
//!   the managers of a worker) that lost the same network do not retry in step.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// A connection up at least this long was healthy: its loss starts a fresh run of attempts.
pub const STABLE_AFTER: Duration = Duration::from_secs(60);
/// The first retry of a run (before jitter).
pub const QUICK_RETRY: Duration = Duration::from_secs(1);
/// The longest delay while the run is younger than [`FAST_WINDOW`].
pub const FAST_CAP: Duration = Duration::from_secs(5);
/// How long retries stay frequent.
pub const FAST_WINDOW: Duration = Duration::from_secs(120);
/// The first delay after [`FAST_WINDOW`] is twice this; later ones keep doubling.
pub const SLOW_START: Duration = Duration::from_secs(5);
/// The longest delay (DESIGN §3: "cap about 5 min").
pub const MAX_DELAY: Duration = Duration::from_secs(300);
/// The largest fraction of a delay that jitter takes off.
pub const JITTER: f64 = 0.5;

/// The history of one worker's connection attempts, as far as the next delay needs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reconnect {
    /// Failed attempts in the current run.
    failures: u32,
    /// Of those, the ones after [`FAST_WINDOW`].
    slow_failures: u32,
    /// When the current run's first attempt failed.
    run_start: Option<DateTime<Utc>>,
    /// When the last connection came up (cleared when it drops).
    connected_at: Option<DateTime<Utc>>,
}

/// What to report after a failed attempt and how long to wait before the next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retry {
    /// The failed attempt's number in the current run (1-based).
    pub attempt: u32,
    pub delay: Duration,
}

impl Reconnect {
    /// The connection is up (its caches are synced). A re-sync of the same connection (the
    /// watcher lists again after 410 Gone) keeps the first time.
    pub fn connected(&mut self, now: DateTime<Utc>) {
        self.connected_at.get_or_insert(now);
    }

    /// An attempt failed, or the connection dropped, at `now`. `jitter` is a random number in
    /// `[0, 1)` (values outside are clamped).
    pub fn failed(&mut self, now: DateTime<Utc>, jitter: f64) -> Retry {
        if let Some(up) = self.connected_at.take()
            && elapsed(up, now) >= STABLE_AFTER
        {
            *self = Reconnect::default();
        }
        let start = *self.run_start.get_or_insert(now);
        self.failures = self.failures.saturating_add(1);
        let base = if elapsed(start, now) < FAST_WINDOW {
            doubling(QUICK_RETRY, self.failures).min(FAST_CAP)
        } else {
            self.slow_failures = self.slow_failures.saturating_add(1);
            doubling(SLOW_START, self.slow_failures.saturating_add(1)).min(MAX_DELAY)
        };
        Retry {
            attempt: self.failures,
            delay: jittered(base, jitter),
        }
    }
}

/// `first` doubled `n - 1` times (saturating; `n = 0` counts as 1).
fn doubling(first: Duration, n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1).min(16));
    first.saturating_mul(factor)
}

fn jittered(delay: Duration, jitter: f64) -> Duration {
    let r = if jitter.is_finite() {
        jitter.clamp(0.0, 1.0)
    } else {
        0.0
    };
    delay.mul_f64(1.0 - JITTER * r)
}

/// `now - since`, zero when the clock went backwards.
fn elapsed(since: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (now - since).to_std().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> DateTime<Utc> {
        DateTime::UNIX_EPOCH + chrono::Duration::milliseconds((secs * 1000.0) as i64)
    }

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    /// Fails at the times the delays say (no jitter) from `start`; returns every delay.
    fn outage(r: &mut Reconnect, start: f64, attempts: usize) -> Vec<f64> {
        let mut now = start;
        let mut delays = Vec::new();
        for _ in 0..attempts {
            let retry = r.failed(at(now), 0.0);
            delays.push(secs(retry.delay));
            now += secs(retry.delay);
        }
        delays
    }

    #[test]
    fn the_first_retry_after_a_healthy_connection_drops_is_within_a_second() {
        let mut r = Reconnect::default();
        r.connected(at(0.0));
        let retry = r.failed(at(600.0), 0.0);
        assert_eq!(
            retry,
            Retry {
                attempt: 1,
                delay: QUICK_RETRY
            }
        );
    }

    #[test]
    fn delays_double_to_the_fast_cap_within_the_fast_window() {
        let mut r = Reconnect::default();
        let delays = outage(&mut r, 0.0, 8);
        assert_eq!(delays, vec![1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0, 5.0]);
    }

    #[test]
    fn after_the_fast_window_delays_double_from_five_seconds_to_five_minutes() {
        let mut r = Reconnect::default();
        // 1 + 2 + 4 + 5 * 23 = 122 s: the 27th failure is the first after the window.
        let delays = outage(&mut r, 0.0, 36);
        assert!(delays[..26].iter().all(|d| *d <= 5.0), "{delays:?}");
        assert_eq!(
            delays[26..],
            [
                10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0, 300.0, 300.0
            ]
        );
    }

    #[test]
    fn attempts_are_counted_over_the_run() {
        let mut r = Reconnect::default();
        let attempts: Vec<u32> = (0..4)
            .map(|i| r.failed(at(i as f64), 0.0).attempt)
            .collect();
        assert_eq!(attempts, vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_connection_that_stayed_up_starts_a_fresh_run() {
        let mut r = Reconnect::default();
        outage(&mut r, 0.0, 40);
        r.connected(at(5_000.0));
        let retry = r.failed(at(5_000.0 + secs(STABLE_AFTER)), 0.0);
        assert_eq!(retry.attempt, 1);
        assert_eq!(retry.delay, QUICK_RETRY);
    }

    #[test]
    fn a_resync_does_not_restart_the_time_a_connection_has_been_up() {
        let mut r = Reconnect::default();
        r.failed(at(0.0), 0.0);
        r.connected(at(1.0));
        r.connected(at(50.0));
        let retry = r.failed(at(1.0 + secs(STABLE_AFTER)), 0.0);
        assert_eq!(retry.attempt, 1);
    }

    #[test]
    fn a_connection_that_dropped_quickly_continues_the_run() {
        let mut r = Reconnect::default();
        outage(&mut r, 0.0, 3); // 1 + 2 + 4 s
        r.connected(at(7.0));
        let retry = r.failed(at(7.0 + secs(STABLE_AFTER) - 1.0), 0.0);
        assert_eq!(retry.attempt, 4);
        // The run is 66 s old: still fast, at the cap.
        assert_eq!(retry.delay, FAST_CAP);
    }

    #[test]
    fn a_flapping_worker_falls_back_to_the_slow_schedule() {
        let mut r = Reconnect::default();
        let mut now = 0.0;
        let mut last = Duration::ZERO;
        // Connects every time, drops after 30 s.
        for _ in 0..10 {
            last = r.failed(at(now), 0.0).delay;
            now += secs(last);
            r.connected(at(now));
            now += 30.0;
        }
        assert!(last > FAST_CAP, "{last:?}");
    }

    #[test]
    fn jitter_takes_off_at_most_half() {
        let mut r = Reconnect::default();
        assert_eq!(r.failed(at(0.0), 0.999_999).delay.as_millis(), 500);
        let mut r = Reconnect::default();
        assert_eq!(r.failed(at(0.0), 0.5).delay.as_millis(), 750);
        // Out-of-range randomness is clamped, never longer than the base nor negative.
        let mut r = Reconnect::default();
        assert_eq!(r.failed(at(0.0), -3.0).delay, QUICK_RETRY);
        let mut r = Reconnect::default();
        assert_eq!(r.failed(at(0.0), 7.0).delay.as_millis(), 500);
        let mut r = Reconnect::default();
        assert_eq!(r.failed(at(0.0), f64::NAN).delay, QUICK_RETRY);
    }

    #[test]
    fn a_clock_going_backwards_keeps_the_fast_schedule() {
        let mut r = Reconnect::default();
        r.failed(at(100.0), 0.0);
        let retry = r.failed(at(50.0), 0.0);
        assert_eq!(retry.delay, Duration::from_secs(2));
    }

    #[test]
    fn doubling_saturates() {
        assert_eq!(doubling(SLOW_START, 0), SLOW_START);
        assert_eq!(doubling(SLOW_START, u32::MAX).min(MAX_DELAY), MAX_DELAY);
    }
}
