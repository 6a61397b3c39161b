//! The manager's side of one workload in the simulation: what the manager knows of its
//! replicas, and the call into the real lifecycle decision
//! ([`baton_core::lifecycle::decide`], which the manager runs for every Workload: dispatch,
//! the first admitted replica wins and the others go, an evicted winner sends the workload
//! back to dispatch, and KEP-8303 ungating while none is admitted).
//!
//! What the simulation leaves out of the manager: its own quota (a workload is reserved on
//! the manager as soon as it arrives, and again at once after a re-dispatch), finalizers,
//! and lost or removed worker clusters (every worker stays connected).

use std::time::Duration;

use baton_core::dispatch::Dispatcher;
use baton_core::lifecycle::{
    self, ClusterState, ClusterView, Decision, LifecycleConfig, ReplicaState, Standing,
    WorkloadView,
};
use baton_core::ungate::{
    DEFAULT_LEAST_DISRUPTION_WINDOW, GateObservation, ReplicaView, Signal, UngatingPolicy,
};
use baton_crds::constants::{ReleaseReason, reason};
use baton_crds::workload::{GateState, PreemptionCost};
use chrono::{DateTime, Utc};

use super::events::Millis;
use super::model::{Mode, Policy};
use super::world::stored;

/// What a worker's watch tells the manager about one replica.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// `QuotaReservationBlocked=True` (`PreemptionGated`) since then.
    pub signal: Option<Millis>,
    /// `QuotaReservationBlocked=True` (`RoomExpected`) since then (Baton's workers).
    pub expecting: Option<Millis>,
    pub cost: Option<PreemptionCost>,
    /// Admitted (quota reserved) at this time.
    pub admitted: Option<Millis>,
    pub evicted: bool,
    /// Its worker gave the baton back then (its gate Closed again), and why.
    pub released: Option<(Millis, ReleaseReason)>,
}

/// The manager's view of the workers, shared by every workload of a run.
pub struct Fleet {
    /// Worker names, in MultiKueueConfig order.
    pub order: Vec<String>,
    clusters: Vec<ClusterView>,
    config: LifecycleConfig,
}

impl Fleet {
    pub fn new(order: Vec<String>, mode: Mode) -> Self {
        let clusters = order
            .iter()
            .map(|name| ClusterView {
                name: name.clone(),
                state: ClusterState::Active,
            })
            .collect();
        let (orchestrated, timeout, policy) = match mode {
            Mode::Uncoordinated => (false, Duration::ZERO, Policy::FirstComeFirstServed),
            Mode::Orchestrated {
                policy, timeout, ..
            } => (true, timeout, policy),
        };
        Fleet {
            order,
            clusters,
            config: LifecycleConfig {
                orchestrated,
                // Workers are never lost in a simulation.
                worker_lost_timeout: Duration::MAX,
                preemption_timeout: timeout,
                dispatcher: Dispatcher::AllAtOnce,
                ungating_policy: ungating_policy(policy),
            },
        }
    }

    /// The worker's index of a cluster name.
    pub fn index(&self, cluster: &str) -> Option<usize> {
        self.order.iter().position(|c| c == cluster)
    }
}

/// The manager's state of one workload submitted through it.
#[derive(Clone, Debug, Default)]
pub struct Managed {
    /// The dispatch round: replicas carry it as their re-dispatch stamp.
    pub round: u32,
    /// Per worker: the replica as the manager knows it (its own record from the moment it
    /// decides to create it, then what the watch reports), while it exists.
    pub replicas: Vec<Option<ReplicaState>>,
    /// Per worker: when its replica was admitted, to the millisecond (statistics; the
    /// decision reads the stored, second-precision time).
    pub admitted_at: Vec<Option<Millis>>,
    pub winner: Option<usize>,
    pub done: bool,
    /// The earliest re-evaluation scheduled.
    pub next_tick: Option<Millis>,
}

impl Managed {
    /// The real lifecycle decision over what the manager knows now.
    pub fn decide(&self, fleet: &Fleet, now: DateTime<Utc>) -> Decision {
        let workload = WorkloadView {
            has_finalizer: true,
            standing: if self.done {
                Standing::Finished
            } else {
                Standing::Reserved
            },
            winner: self.winner.map(|w| fleet.order[w].clone()),
            redispatch_stamp: Some(self.round.to_string()),
            dispatch_since: None,
        };
        let mut replicas: Vec<ReplicaState> = self.replicas.iter().flatten().cloned().collect();
        replicas.sort_by(|a, b| a.view.cluster.cmp(&b.view.cluster));
        lifecycle::decide(
            &lifecycle::Observation {
                workload: &workload,
                route: &fleet.order,
                clusters: &fleet.clusters,
                replicas: &replicas,
                now,
            },
            &fleet.config,
        )
    }

    /// The manager creates a replica on `worker` (it stands in for itself until the worker
    /// reports on it).
    pub fn created(&mut self, fleet: &Fleet, worker: usize) {
        if self.replicas.len() < fleet.order.len() {
            self.replicas.resize(fleet.order.len(), None);
            self.admitted_at.resize(fleet.order.len(), None);
        }
        self.replicas[worker] = Some(ReplicaState {
            view: ReplicaView {
                cluster: fleet.order[worker].clone(),
                gate: fleet.config.orchestrated.then_some(GateObservation {
                    state: GateState::Closed,
                    since: None,
                }),
                ..ReplicaView::default()
            },
            stamp: Some(self.round.to_string()),
            in_sync: true,
            admitted_at: None,
            evicted: None,
            quota_reserved: false,
            finished_out_of_sync: false,
        });
    }

    /// The replica on `worker` is gone (the manager deleted it).
    pub fn removed(&mut self, worker: usize) {
        if let Some(r) = self.replicas.get_mut(worker) {
            *r = None;
        }
        if let Some(at) = self.admitted_at.get_mut(worker) {
            *at = None;
        }
    }

    /// Back to dispatch: a new round, no replica known yet.
    pub fn redispatched(&mut self) {
        self.round += 1;
        self.winner = None;
        self.replicas.iter_mut().for_each(|r| *r = None);
        self.admitted_at.iter_mut().for_each(|at| *at = None);
    }

    /// Records what the watch reported; `false` if the replica is not (or no longer) known.
    pub fn observe(&mut self, worker: usize, seen: &Observed) -> bool {
        let Some(Some(r)) = self.replicas.get_mut(worker) else {
            return false;
        };
        let signal = match (seen.signal, seen.expecting) {
            (Some(since), _) => Some((reason::PREEMPTION_GATED, since)),
            (None, Some(since)) => Some((reason::ROOM_EXPECTED, since)),
            (None, None) => None,
        };
        r.view.signal = signal.map(|(why, since)| Signal {
            reason: why.to_string(),
            since: stored(since),
        });
        r.view.cost = seen.cost;
        r.view.released = seen.released.map(|(_, why)| why);
        if let Some((at, _)) = seen.released {
            r.view.gate = Some(GateObservation {
                state: GateState::Closed,
                since: Some(stored(at)),
            });
        }
        r.view.admitted = seen.admitted.is_some();
        r.admitted_at = seen.admitted.map(stored);
        r.quota_reserved = seen.admitted.is_some() && !seen.evicted;
        r.evicted = seen.evicted.then(|| "Preempted".to_string());
        self.admitted_at[worker] = seen.admitted;
        true
    }

    /// Records that the manager opened `worker`'s gate at `now`.
    pub fn opened(&mut self, worker: usize, now: Millis) {
        if let Some(Some(r)) = self.replicas.get_mut(worker) {
            r.view.gate = Some(GateObservation {
                state: GateState::Open,
                since: Some(stored(now)),
            });
        }
    }
}

/// The manager's ungating policy of a simulated `policy`.
pub fn ungating_policy(policy: Policy) -> UngatingPolicy {
    match policy {
        Policy::FirstComeFirstServed => UngatingPolicy::FirstComeFirstServed,
        Policy::LeastDisruption => UngatingPolicy::LeastDisruption {
            window: DEFAULT_LEAST_DISRUPTION_WINDOW,
        },
        Policy::SoonestRoom => UngatingPolicy::SoonestRoom {
            window: DEFAULT_LEAST_DISRUPTION_WINDOW,
        },
    }
}

/// Milliseconds in a `Duration` (saturating).
pub fn millis(d: Duration) -> Millis {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
