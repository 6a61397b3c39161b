//! What a simulation run is configured with: the orchestration mode and the delays.

use std::fmt;
use std::time::Duration;

use super::events::Millis;

/// How the manager lets the replicas of a workload preempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Orchestration off (plain MultiKueue): replicas carry no gate, every worker preempts.
    Uncoordinated,
    /// KEP-8303 gates, opened by the manager's ungating decision.
    Orchestrated {
        policy: Policy,
        timeout: Duration,
        workers: Workers,
    },
}

/// The manager's `ungatingPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    FirstComeFirstServed,
    LeastDisruption,
    SoonestRoom,
}

/// What the workers report with their signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Workers {
    /// Baton's shim: `preemptionCost` (with `stopSeconds`), room expected without eviction,
    /// and release on failure where the policy asks for it by default (not with FCFS).
    #[default]
    Baton,
    /// Baton's shim with release on failure asked for whatever the policy
    /// (`releaseOnFailure: true`).
    BatonReleasing,
    /// Upstream Kueue: the signal only; a holder keeps the baton until the timeout.
    Kueue,
}

impl Mode {
    /// Orchestrated with Baton's workers.
    pub const fn orchestrated(policy: Policy, timeout: Duration) -> Self {
        Mode::Orchestrated {
            policy,
            timeout,
            workers: Workers::Baton,
        }
    }
}

impl Mode {
    /// A short label for tables and plots: `uncoordinated`, `fcfs 30s`, `least-disruption 2m`,
    /// `fcfs 5m kueue-workers`.
    pub fn label(&self) -> String {
        match self {
            Mode::Uncoordinated => "uncoordinated".to_string(),
            Mode::Orchestrated {
                policy,
                timeout,
                workers,
            } => {
                let suffix = match workers {
                    Workers::Baton => "",
                    Workers::BatonReleasing => " release",
                    Workers::Kueue => " kueue-workers",
                };
                format!("{policy} {}{suffix}", format_duration(*timeout))
            }
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::FirstComeFirstServed => "fcfs",
            Policy::LeastDisruption => "least-disruption",
            Policy::SoonestRoom => "soonest-room",
        })
    }
}

/// A delay drawn uniformly from `min..=max` milliseconds for every message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayRange {
    pub min: Millis,
    pub max: Millis,
}

impl DelayRange {
    pub const fn fixed(ms: Millis) -> Self {
        Self { min: ms, max: ms }
    }
}

/// The delays between the manager and the workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delays {
    /// A manager write reaching a worker: replica creation, deletion, gate opening, the Job.
    pub dispatch: DelayRange,
    /// A worker's status change reaching the manager through its watch.
    pub watch: DelayRange,
}

impl Default for Delays {
    fn default() -> Self {
        Self {
            dispatch: DelayRange { min: 50, max: 200 },
            watch: DelayRange { min: 50, max: 200 },
        }
    }
}

/// One run's settings.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    pub mode: Mode,
    pub delays: Delays,
    /// Seeds the delays.
    pub seed: u64,
}

/// `500ms`, `30s`, `2m`, `1h`, or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 500ms, 30s, 2m, 1h)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("{text:?}: unknown unit {other:?} (ms, s, m or h)")),
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("{text:?} is not a duration"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The shortest of `1h`, `2m`, `30s`, `500ms` that says `d` exactly.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 {
        "0s".to_string()
    } else if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print_back() {
        for (text, secs) in [
            ("30s", 30.0),
            ("2m", 120.0),
            ("1h", 3600.0),
            ("500ms", 0.5),
            ("45", 45.0),
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(d.as_secs_f64(), secs, "{text}");
        }
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert!(parse_duration("2 weeks").is_err());
        assert!(parse_duration("-3s").is_err());
        assert!(parse_duration("").is_err());
    }
}
