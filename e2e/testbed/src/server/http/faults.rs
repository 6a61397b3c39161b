//! Fault injection: latency and a fraction of failed requests. (Going offline and ending
//! watches are on `TestCluster`, since they concern connections rather than requests.)

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::server::api::error::ApiError;

#[derive(Debug, Clone, Default)]
struct Config {
    latency: Duration,
    fail_fraction: f64,
    fail_code: u16,
    only_writes: bool,
}

/// Per-cluster fault settings, changeable at any time from tests.
#[derive(Debug)]
pub struct Faults {
    config: Mutex<Config>,
    rng: AtomicU64,
    injected: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        let seed = u64::from_le_bytes(
            uuid::Uuid::new_v4().as_bytes()[..8]
                .try_into()
                .unwrap_or([7; 8]),
        ) | 1;
        Self {
            config: Mutex::new(Config::default()),
            rng: AtomicU64::new(seed),
            injected: AtomicU64::new(0),
        }
    }
}

impl Faults {
    /// Delays every request by `latency` before it is handled.
    pub fn set_latency(&self, latency: Duration) {
        self.with(|c| c.latency = latency);
    }

    /// Fails `fraction` (0.0..=1.0) of requests with `code` (409, 500, 503 ...).
    pub fn fail_requests(&self, fraction: f64, code: u16) {
        self.with(|c| {
            c.fail_fraction = fraction.clamp(0.0, 1.0);
            c.fail_code = code;
            c.only_writes = false;
        });
    }

    /// Like `fail_requests`, but only for writes (POST, PUT, PATCH, DELETE).
    pub fn fail_writes(&self, fraction: f64, code: u16) {
        self.with(|c| {
            c.fail_fraction = fraction.clamp(0.0, 1.0);
            c.fail_code = code;
            c.only_writes = true;
        });
    }

    /// Back to a healthy server.
    pub fn clear(&self) {
        self.with(|c| *c = Config::default());
    }

    /// How many requests were failed on purpose so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    fn with(&self, f: impl FnOnce(&mut Config)) {
        let mut guard = self.config.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard);
    }

    fn next_f64(&self) -> f64 {
        // xorshift64*; good enough to pick which requests fail.
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Applies the configured latency, then decides whether this request fails.
    pub async fn before_request(&self, is_write: bool) -> Result<(), ApiError> {
        let config = self.config.lock().map(|c| c.clone()).unwrap_or_default();
        if !config.latency.is_zero() {
            tokio::time::sleep(config.latency).await;
        }
        if config.fail_fraction > 0.0
            && (is_write || !config.only_writes)
            && self.next_f64() < config.fail_fraction
        {
            self.injected.fetch_add(1, Ordering::Relaxed);
            return Err(match config.fail_code {
                409 => ApiError::new(
                    409,
                    "Conflict",
                    "injected fault: the object has been modified; please apply your changes to the latest version and try again",
                ),
                429 => ApiError::new(429, "TooManyRequests", "injected fault: too many requests"),
                503 => ApiError::new(
                    503,
                    "ServiceUnavailable",
                    "injected fault: the server is currently unable to handle the request",
                ),
                504 => ApiError::new(
                    504,
                    "Timeout",
                    "injected fault: the server was unable to return a response in the time allotted",
                ),
                code => ApiError::new(
                    code,
                    "InternalError",
                    "injected fault: an error on the server has prevented the request from succeeding",
                ),
            });
        }
        Ok(())
    }
}
