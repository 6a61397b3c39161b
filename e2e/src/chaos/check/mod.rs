//! The invariant checker: a pure function of the recorded [`Log`](super::log) and the
//! run's settings. Each invariant has its own file:
//! (a) [`double_admission`], (b) [`gates`], (c) and (d) [`end_state`], (e) [`victims`].

pub mod double_admission;
pub mod end_state;
pub mod gates;
pub mod victims;

#[cfg(test)]
mod tests;

use std::fmt;

use super::log::{Event, Millis, ObjectEvent};

/// How long two workers may both hold quota for one workload: Kueue lets every replica
/// reserve quota, and the loser keeps it until the manager has seen the winner and the
/// loser's deletion has landed. Time within the overlap when the manager was down, either
/// worker was offline, or the manager was not connected to either (its MultiKueueCluster
/// not Active: it reconnects with backoff after an outage) is added: the removal cannot
/// happen then.
pub const LOSER_REMOVAL_WINDOW: Millis = 10_000;

/// Gate transition times are stored with whole-second precision, and the manager measures
/// the timeout on them: two openings observed up to this much less than the timeout apart
/// are still correct.
pub const GATE_TIMESTAMP_SLACK: Millis = 1_000;

/// The end state must hold for this long before the run's end to count as a violation (an
/// admission or a removal may be in flight at any single instant).
pub const END_STATE_GRACE: Millis = 15_000;

/// The run's settings the invariants depend on.
#[derive(Clone, Debug)]
pub struct CheckConfig {
    pub workers: usize,
    /// Every worker's ClusterQueue quota, in CPUs.
    pub worker_cpus: u32,
    pub preemption_timeout: Millis,
    /// `cluster_names[i - 1]`: worker `i`'s MultiKueueCluster name (`status.clusterName`).
    pub cluster_names: Vec<String>,
    /// The end of the recording.
    pub end: Millis,
}

impl CheckConfig {
    /// The worker a `status.clusterName` names.
    pub fn worker_of(&self, cluster_name: &str) -> Option<usize> {
        self.cluster_names
            .iter()
            .position(|n| n == cluster_name)
            .map(|i| i + 1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    /// (a) admitted on two workers beyond the loser-removal window.
    DoubleAdmission,
    /// (b) two gates of one workload opened less than the timeout apart.
    GatesTooClose,
    /// (c) pending at the end although a worker had room for it.
    Stranded,
    /// (c) submitted, never deleted, and gone — or admitted on a worker that holds nothing.
    Lost,
    /// (d) a replica left on a worker after its workload was deleted, finished or won
    /// elsewhere.
    LeftBehind,
    /// (e) a victim evicted for a preemptor whose gate on that worker was Closed.
    EvictedWhileGateClosed,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Invariant::DoubleAdmission => "(a) admitted on two workers",
            Invariant::GatesTooClose => "(b) gates opened too close together",
            Invariant::Stranded => "(c) stranded pending with capacity free",
            Invariant::Lost => "(c) lost",
            Invariant::LeftBehind => "(d) replica left behind",
            Invariant::EvictedWhileGateClosed => {
                "(e) evicted while the preemptor's gate was Closed"
            }
        })
    }
}

/// One violation, with the evidence to find it in the clusters' history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: Invariant,
    /// The manager Workload's name.
    pub workload: String,
    /// Objects, clusters, times (ms since start) and resourceVersions.
    pub evidence: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} — {}: {}",
            self.invariant, self.workload, self.evidence
        )
    }
}

/// What the checker measured besides violations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Measures {
    /// The longest time two workers held quota for one workload, and that time less what
    /// the downtime excuses.
    pub max_double_admission: Millis,
    pub max_double_admission_unexcused: Millis,
    pub double_admissions: usize,
    /// Gates opened (Closed → Open transitions seen on replicas).
    pub gate_openings: usize,
    /// Openings while another replica of the workload held an Open gate: the timeout
    /// passed the baton on.
    pub baton_passes: usize,
    /// The smallest gap between such an opening and the previous one.
    pub min_baton_gap: Option<Millis>,
    /// Evictions checked against the preemptor's gate, and those whose preemptor was not
    /// seen on that worker (nothing to check against).
    pub evictions_checked: usize,
    pub evictions_unverified: usize,
    /// Manager workloads still pending at the end with every worker full (allowed).
    pub pending_at_end: usize,
}

/// Everything the checker found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    pub measures: Measures,
}

/// Checks every invariant over `events` (in recording order).
pub fn check(events: &[Event], config: &CheckConfig) -> Outcome {
    let mut outcome = Outcome::default();
    double_admission::check(events, config, &mut outcome);
    gates::check(events, config, &mut outcome);
    victims::check(events, &mut outcome);
    end_state::check(events, config, &mut outcome);
    outcome
}

/// The Workload changes on workers, in order.
pub(crate) fn worker_changes(events: &[Event]) -> impl Iterator<Item = &ObjectEvent> {
    events.iter().filter_map(|e| match e {
        Event::Object(o) if o.cluster > 0 => Some(o),
        _ => None,
    })
}
