//! Per-cluster settings of the job controller and kubelet model.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The default cap on how long a deleted pod takes to go (its grace period, at most this).
pub const DEFAULT_TERMINATION_GRACE_CAP: Duration = Duration::from_secs(2);

/// Settings shared by the API and the model's task; changeable while the cluster runs.
#[derive(Debug)]
pub struct JobsSettings {
    grace_cap_ms: AtomicU64,
}

impl JobsSettings {
    pub fn new(grace_cap: Duration) -> Self {
        Self {
            grace_cap_ms: AtomicU64::new(millis(grace_cap)),
        }
    }

    /// A deleted pod goes after `min(its grace period, cap)`; zero removes it at once.
    pub fn termination_grace_cap(&self) -> Duration {
        Duration::from_millis(self.grace_cap_ms.load(Ordering::Relaxed))
    }

    pub fn set_termination_grace_cap(&self, cap: Duration) {
        self.grace_cap_ms.store(millis(cap), Ordering::Relaxed);
    }
}

impl Default for JobsSettings {
    fn default() -> Self {
        Self::new(DEFAULT_TERMINATION_GRACE_CAP)
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_defaults_to_two_seconds_and_can_change() {
        let s = JobsSettings::default();
        assert_eq!(s.termination_grace_cap(), Duration::from_secs(2));
        s.set_termination_grace_cap(Duration::ZERO);
        assert_eq!(s.termination_grace_cap(), Duration::ZERO);
    }
}
