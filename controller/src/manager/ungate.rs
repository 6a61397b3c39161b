//! KEP-8303 ungating: which replica of one workload may preempt next.
//!
//! A pure function of the replicas' observed state, the cluster order, `now` and the
//! timeout (DESIGN.md §3):
//! 1. `last_opened` = the latest transition time among replicas whose gate is Open;
//! 2. candidates = replicas whose gate is Closed and that signal `QuotaReservationBlocked`
//!    (or upstream's `BlockedOnPreemptionGates`) = True with reason `PreemptionGated`;
//! 3. no candidate: nothing to do (a watch event brings the next change);
//! 4. a gate opened less than `timeout` ago: wait for the remainder;
//! 5. otherwise open the earliest signaller (ties: cluster order, then cluster name) and
//!    look again after `timeout`.
//!
//! While a replica is admitted, nothing is opened: the lifecycle takes over.

use std::time::Duration;

use baton_crds::conditions::find_condition;
use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
use baton_crds::gates::gates;
use baton_crds::time::to_chrono;
use baton_crds::workload::{GateState, Workload};
use chrono::{DateTime, Utc};

/// What the manager knows of one replica, for this decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaView {
    pub cluster: String,
    /// The MultiKueue gate; `None` when the replica carries no such gate (orchestration off or
    /// a replica made by someone else), which makes it neither a candidate nor an opened one.
    pub gate: Option<GateObservation>,
    /// The blocked signal, when the replica reports one with status True.
    pub signal: Option<Signal>,
    pub admitted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateObservation {
    pub state: GateState,
    /// When the gate last changed state; `None` for a gate with no status entry (Closed).
    pub since: Option<DateTime<Utc>>,
}

/// A True `QuotaReservationBlocked`/`BlockedOnPreemptionGates` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    pub reason: String,
    /// The condition's transition time: when the replica started signalling (FCFS key).
    pub since: DateTime<Utc>,
}

impl Signal {
    fn preemption_gated(&self) -> bool {
        self.reason == reason::PREEMPTION_GATED
    }
}

/// The decision for one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UngateDecision {
    /// No replica is waiting for the baton (or one is admitted): nothing to do.
    Nothing,
    /// A gate was opened less than the timeout ago; look again after `requeue_after`.
    Wait {
        requeue_after: Duration,
        waiting: usize,
    },
    /// Open this cluster's gate, then look again after the timeout.
    Open {
        cluster: String,
        /// When that replica started signalling.
        signalled_at: DateTime<Utc>,
        /// When the previous gate was opened, if one was: the timeout passed the baton on.
        previous_opened_at: Option<DateTime<Utc>>,
        /// The cluster whose gate was opened last (it held the baton until now).
        previous_cluster: Option<String>,
        requeue_after: Duration,
    },
}

/// Kubernetes stores `metav1.Time` floored to the second: a gate recorded as opened at `t`
/// may have opened up to a second later. The timeout is counted from the latest such
/// instant, so the baton never passes on earlier than the timeout in real time.
pub const STORED_TIME_PRECISION: Duration = Duration::from_secs(1);

/// Decides which gate, if any, to open now.
pub fn decide(
    replicas: &[ReplicaView],
    cluster_order: &[String],
    now: DateTime<Utc>,
    timeout: Duration,
) -> UngateDecision {
    if replicas.iter().any(|r| r.admitted) {
        return UngateDecision::Nothing;
    }
    let last_open = replicas
        .iter()
        .filter_map(|r| r.gate.as_ref().map(|g| (g, &r.cluster)))
        .filter(|(g, _)| g.state == GateState::Open)
        .map(|(g, cluster)| (g.since.unwrap_or(DateTime::<Utc>::MIN_UTC), cluster))
        .max();
    let last_opened = last_open.map(|(at, _)| at);
    let mut candidates: Vec<(&ReplicaView, &Signal)> = replicas
        .iter()
        .filter(|r| {
            r.gate
                .as_ref()
                .is_some_and(|g| g.state == GateState::Closed)
        })
        .filter_map(|r| {
            r.signal
                .as_ref()
                .filter(|s| s.preemption_gated())
                .map(|s| (r, s))
        })
        .collect();
    if candidates.is_empty() {
        return UngateDecision::Nothing;
    }
    if let Some(opened) = last_opened {
        let margin = chrono::Duration::from_std(STORED_TIME_PRECISION).unwrap_or_default();
        let elapsed = now.signed_duration_since(opened) - margin;
        let timeout_chrono = chrono::Duration::from_std(timeout).unwrap_or(chrono::TimeDelta::MAX);
        if elapsed < timeout_chrono {
            // A clock that went backwards must not make us wait longer than one timeout.
            let remaining = (timeout_chrono - elapsed)
                .to_std()
                .unwrap_or(timeout)
                .min(timeout);
            return UngateDecision::Wait {
                requeue_after: remaining,
                waiting: candidates.len(),
            };
        }
    }
    candidates.sort_by(|(a, sa), (b, sb)| {
        sa.since
            .cmp(&sb.since)
            .then_with(|| {
                order_rank(&a.cluster, cluster_order).cmp(&order_rank(&b.cluster, cluster_order))
            })
            .then_with(|| a.cluster.cmp(&b.cluster))
    });
    let (first, signal) = candidates[0];
    UngateDecision::Open {
        cluster: first.cluster.clone(),
        signalled_at: signal.since,
        previous_opened_at: last_opened,
        previous_cluster: last_open.map(|(_, cluster)| cluster.clone()),
        requeue_after: timeout,
    }
}

/// Position in the MultiKueueConfig's list; clusters not listed come after all listed ones.
fn order_rank(cluster: &str, order: &[String]) -> usize {
    order
        .iter()
        .position(|c| c == cluster)
        .unwrap_or(order.len())
}

/// Reads a replica `Workload` (as watched on its worker) into the decision's view.
pub fn view_of(cluster: &str, replica: &Workload) -> ReplicaView {
    let gate = gates(replica)
        .into_iter()
        .find(|g| g.name == MULTIKUEUE_GATE)
        .map(|g| GateObservation {
            state: g.state,
            since: g.last_transition_time,
        });
    let conditions = replica
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    // Baton's condition first; upstream Kueue ≥ 0.17 workers report the other name.
    let signal = [
        condition::QUOTA_RESERVATION_BLOCKED,
        condition::BLOCKED_ON_PREEMPTION_GATES,
    ]
    .into_iter()
    .filter_map(|t| find_condition(conditions, t))
    .find(|c| c.status == "True")
    .map(|c| Signal {
        reason: c.reason.clone(),
        since: to_chrono(&c.last_transition_time),
    });
    let admitted =
        find_condition(conditions, condition::ADMITTED).is_some_and(|c| c.status == "True");
    ReplicaView {
        cluster: cluster.to_string(),
        gate,
        signal,
        admitted,
    }
}

#[cfg(test)]
mod tests;
