//! The manager's side of one workload in the simulation: which replicas exist, what the
//! manager last saw of them, and the call into the real ungating decision.
//!
//! Lifecycle rules the simulator applies itself (from `manager::lifecycle`, whose `plan`
//! works on Workload objects and is too slow to build per event for 10,000 workloads):
//! - dispatch `AllAtOnce`: a replica on every worker, gated when orchestration is on;
//! - the first replica the manager sees admitted wins; the others are deleted;
//! - while a replica is admitted nothing is opened (`ungate` itself checks this);
//! - a winner that is evicted sends the workload back to dispatch (new replicas everywhere);
//! - a finished workload is done.
//!
//! Gate opening is `manager::ungate::decide_with_policy`, called as it is.

use std::time::Duration;

use baton_crds::constants::reason;
use baton_crds::workload::{GateState, PreemptionCost};
use chrono::{DateTime, Utc};

use super::events::Millis;
use super::model::{Mode, Policy};
use super::world::stored;
use baton_core::ungate::{
    DEFAULT_LEAST_DISRUPTION_WINDOW, GateObservation, ReplicaView, Signal, UngateDecision,
    UngatingPolicy, decide_with_policy,
};

/// What a worker's watch tells the manager about one replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// `QuotaReservationBlocked=True` (`PreemptionGated`) since then.
    pub signal: Option<Millis>,
    pub cost: Option<PreemptionCost>,
    /// Admitted (quota reserved) at this time.
    pub admitted: Option<Millis>,
    pub evicted: bool,
}

/// The manager's state of one workload submitted through it.
#[derive(Clone, Debug, Default)]
pub struct Managed {
    pub round: u32,
    /// Per worker: the replica as last seen, while it exists.
    pub views: Vec<Option<ReplicaView>>,
    pub winner: Option<usize>,
    pub done: bool,
    /// The earliest re-evaluation scheduled.
    pub next_tick: Option<Millis>,
}

impl Managed {
    /// New replicas on every worker (a new round).
    pub fn dispatch(&mut self, workers: &[String], mode: Mode) {
        self.winner = None;
        self.views = workers
            .iter()
            .map(|name| {
                Some(ReplicaView {
                    cluster: name.clone(),
                    gate: matches!(mode, Mode::Orchestrated { .. }).then_some(GateObservation {
                        state: GateState::Closed,
                        since: None,
                    }),
                    ..ReplicaView::default()
                })
            })
            .collect();
    }

    /// Records what the watch reported.
    pub fn observe(&mut self, worker: usize, seen: &Observed) {
        if let Some(Some(view)) = self.views.get_mut(worker) {
            view.signal = seen.signal.map(|since| Signal {
                reason: reason::PREEMPTION_GATED.to_string(),
                since: stored(since),
            });
            view.cost = seen.cost;
            view.admitted = seen.admitted.is_some();
        }
    }

    /// The real ungating decision over the replicas that exist.
    pub fn ungate(&self, order: &[String], now: DateTime<Utc>, mode: Mode) -> UngateDecision {
        let Mode::Orchestrated { policy, timeout } = mode else {
            return UngateDecision::Nothing;
        };
        let views: Vec<ReplicaView> = self.views.iter().flatten().cloned().collect();
        decide_with_policy(&views, order, now, timeout, ungating_policy(policy))
    }

    /// Records that the manager opened `worker`'s gate at `now`.
    pub fn opened(&mut self, worker: usize, now: Millis) {
        if let Some(Some(view)) = self.views.get_mut(worker) {
            view.gate = Some(GateObservation {
                state: GateState::Open,
                since: Some(stored(now)),
            });
        }
    }
}

fn ungating_policy(policy: Policy) -> UngatingPolicy {
    match policy {
        Policy::FirstComeFirstServed => UngatingPolicy::FirstComeFirstServed,
        Policy::LeastDisruption => UngatingPolicy::LeastDisruption {
            window: DEFAULT_LEAST_DISRUPTION_WINDOW,
        },
    }
}

/// Milliseconds in a `Duration` (saturating).
pub fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
