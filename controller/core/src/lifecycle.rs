//! The life of one manager Workload across the workers (DESIGN.md §3), as one pure decision
//! over compact views: the manager reads it to plan its writes, and `baton simulate` runs
//! it for every workload it dispatches.
//!
//! The rule, in order:
//! 1. Being deleted, or no longer routed to MultiKueue: remove every replica; the finalizer
//!    goes once none is left (replicas on unreachable workers are left to the garbage
//!    collector). Otherwise make sure the finalizer is there.
//! 2. Finished, or inactive: remove every replica.
//! 3. No quota reservation on the manager (manager-side quota, as Kueue's MultiKueue), or an
//!    admission check asking for a retry: remove every replica; nothing is dispatched.
//! 4. A winner is recorded (`status.clusterName`): remove the losers left over; then, if its
//!    cluster was removed, its replica is gone, evicted, lost its reservation or finished as
//!    `OutOfSync` (a sync failure on the worker, never a finish: upstream Kueue resets it for
//!    re-dispatch), or its worker has been unreachable for `workerLostTimeout`: send the
//!    workload back to
//!    dispatch (a re-dispatch, Kueue's `MultiKueueRedoAdmissionOnEvictionInWorker`);
//!    unreachable for less: look again when that time is up; otherwise it keeps running.
//! 5. No winner: replicas made before the last re-dispatch are stale and go, and so do
//!    replicas finished as `OutOfSync` (they can never run). The replica admitted first wins
//!    (ties: the route's cluster order) and the others are removed.
//! 6. No replica admitted: dispatch (the dispatcher chooses clusters among the connected
//!    ones; replicas on clusters no longer chosen, or whose spec is out of date, go; missing
//!    ones are created) and, with orchestration on, decide the gates with
//!    [`crate::ungate::decide_with_policy`].

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::dispatch::{Dispatcher, dispatch};
use crate::ungate::{self, GateObservation, OpenReason, ReplicaView, UngateDecision};
use baton_crds::workload::GateState;

/// The settings the decision depends on.
#[derive(Clone, Debug)]
pub struct LifecycleConfig {
    pub orchestrated: bool,
    pub worker_lost_timeout: Duration,
    pub preemption_timeout: Duration,
    pub dispatcher: Dispatcher,
    /// How the next gate is chosen among signalling replicas.
    pub ungating_policy: ungate::UngatingPolicy,
}

/// Where the manager Workload stands, as far as its replicas are concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Being deleted, or no longer a MultiKueue workload.
    Leaving,
    Finished,
    Inactive,
    /// Holds no quota reservation on the manager; `evicted`: its `Evicted` message, if
    /// evicted there.
    NotReserved {
        evicted: Option<String>,
    },
    /// An admission check (named) asks for a retry.
    CheckFailing {
        check: String,
    },
    /// Reserved on the manager: replicas may exist.
    Reserved,
}

/// The manager Workload: the few fields the decision reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadView {
    pub has_finalizer: bool,
    pub standing: Standing,
    /// The winning cluster (`status.clusterName`).
    pub winner: Option<String>,
    /// The manager's stamp of its last re-dispatch; replicas made before carry another.
    pub redispatch_stamp: Option<String>,
    /// When the current dispatch began (the MultiKueue check's `Pending` transition).
    pub dispatch_since: Option<DateTime<Utc>>,
}

/// One replica of the workload on an Active cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    /// Its gate, signal and cost (`view.cluster` names its cluster).
    pub view: ReplicaView,
    /// The re-dispatch stamp it carries.
    pub stamp: Option<String>,
    /// Its spec matches the manager Workload's (gates aside).
    pub in_sync: bool,
    /// Its `Admitted=True` transition.
    pub admitted_at: Option<DateTime<Utc>>,
    /// `Evicted=True`, with the condition's reason.
    pub evicted: Option<String>,
    pub quota_reserved: bool,
    /// Finished on its worker as `OutOfSync` (its worker found it out of sync with its Job):
    /// a failure to re-dispatch, never the workload's finish.
    pub finished_out_of_sync: bool,
}

/// A worker cluster of the route, as the manager sees it now.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterView {
    pub name: String,
    pub state: ClusterState,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ClusterState {
    /// Connected; its replicas are known.
    Active,
    /// Not reachable since this time; its replicas are known only as last seen.
    Unreachable {
        since: DateTime<Utc>,
        last_known: LastKnown,
    },
}

/// What the manager last saw of the workload's replica on a cluster it cannot reach now.
#[derive(Clone, Debug, PartialEq)]
pub enum LastKnown {
    /// Seen before the connection was lost (`None`: there was no replica).
    Seen(Option<ReplicaView>),
    /// Not observed since this manager started: its gate may be open, as far as we know.
    NeverSeen,
}

/// Everything the decision reads.
#[derive(Clone, Copy, Debug)]
pub struct Observation<'a> {
    pub workload: &'a WorkloadView,
    /// The route's clusters in order (the tie-break order); empty when not routed.
    pub route: &'a [String],
    /// The route's clusters that have a MultiKueueCluster object, in route order.
    pub clusters: &'a [ClusterView],
    /// The replicas on Active clusters, in cluster-name order.
    pub replicas: &'a [ReplicaState],
    pub now: DateTime<Utc>,
}

/// What to do about the finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalizerAction {
    Add,
    Remove,
}

/// Why a replica is removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemovalCause {
    WorkloadDeleted,
    Finished,
    Inactive,
    NotReserved {
        evicted: Option<String>,
    },
    CheckRetry {
        check: String,
    },
    /// Made before the workload's last re-dispatch.
    Stale,
    /// Another cluster won.
    Lost {
        winner: String,
    },
    NotDispatched,
    OutOfSync,
    /// The winner's replica, evicted or without its reservation.
    WinnerLost(RedispatchCause),
}

impl std::fmt::Display for RemovalCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemovalCause::WorkloadDeleted => f.write_str("the workload was deleted"),
            RemovalCause::Finished => f.write_str("the workload finished"),
            RemovalCause::Inactive => f.write_str("the workload is inactive"),
            RemovalCause::NotReserved { evicted: Some(m) } => {
                write!(f, "evicted on the manager: {m}")
            }
            RemovalCause::NotReserved { evicted: None } => {
                f.write_str("the workload holds no quota reservation on the manager")
            }
            RemovalCause::CheckRetry { check } => {
                write!(f, "admission check {check} asked for a retry")
            }
            RemovalCause::Stale => f.write_str("the replica predates the workload's re-dispatch"),
            RemovalCause::Lost { winner } => write!(f, "admitted on {winner}"),
            RemovalCause::NotDispatched => f.write_str("the cluster is no longer dispatched to"),
            RemovalCause::OutOfSync => {
                f.write_str("the replica's spec differs from the workload's")
            }
            RemovalCause::WinnerLost(cause) => cause.fmt(f),
        }
    }
}

/// Why a workload goes back to dispatch; `cluster` is the winner it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedispatchCause {
    ClusterRemoved {
        cluster: String,
    },
    Unreachable {
        cluster: String,
        timeout: Duration,
    },
    ReplicaGone {
        cluster: String,
    },
    /// Evicted on its worker, with the `Evicted` condition's reason.
    Evicted {
        cluster: String,
        reason: String,
    },
    LostReservation {
        cluster: String,
    },
    /// Finished on its worker as `OutOfSync`.
    FinishedOutOfSync {
        cluster: String,
    },
}

impl RedispatchCause {
    /// The winner the workload leaves.
    pub fn cluster(&self) -> &str {
        match self {
            RedispatchCause::ClusterRemoved { cluster }
            | RedispatchCause::Unreachable { cluster, .. }
            | RedispatchCause::ReplicaGone { cluster }
            | RedispatchCause::Evicted { cluster, .. }
            | RedispatchCause::LostReservation { cluster }
            | RedispatchCause::FinishedOutOfSync { cluster } => cluster,
        }
    }
}

impl std::fmt::Display for RedispatchCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedispatchCause::ClusterRemoved { cluster } => {
                write!(f, "worker cluster {cluster} was removed")
            }
            RedispatchCause::Unreachable { cluster, timeout } => write!(
                f,
                "worker cluster {cluster} unreachable for more than {}s",
                timeout.as_secs()
            ),
            RedispatchCause::ReplicaGone { cluster } => {
                write!(f, "the replica on {cluster} disappeared")
            }
            RedispatchCause::Evicted { cluster, reason } => {
                write!(f, "evicted on {cluster}: {reason}")
            }
            RedispatchCause::LostReservation { cluster } => {
                write!(f, "the replica on {cluster} lost its quota reservation")
            }
            RedispatchCause::FinishedOutOfSync { cluster } => {
                write!(
                    f,
                    "the replica on {cluster} finished out of sync with its Job"
                )
            }
        }
    }
}

/// A replica to remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub cluster: String,
    pub cause: RemovalCause,
    /// Whether the removal gets an event of its own. The losers removed on admission do not:
    /// the admission event names them (on a busy manager every event is a write).
    pub announce: bool,
}

/// A gate to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateOpening {
    pub cluster: String,
    pub signalled_at: DateTime<Utc>,
    /// Set when the timeout passed the baton on from an earlier opening.
    pub previous_opened_at: Option<DateTime<Utc>>,
    /// The cluster that held the baton until now.
    pub previous_cluster: Option<String>,
    /// The holder gave the baton back (it could no longer make room): the baton passes on
    /// at once, not after the timeout.
    pub released_by: Option<ungate::Released>,
    /// Why this replica got the baton.
    pub why: OpenReason,
}

/// What happened to the workload's placement.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Progress {
    /// Nothing to record (leaving, finished, inactive, not reserved).
    #[default]
    None,
    /// No winner yet: dispatched to `clusters`, `connected` of the route's clusters being
    /// connected.
    Dispatched {
        clusters: Vec<String>,
        connected: usize,
    },
    /// `cluster` won in this decision (its status is mirrored; the losers' removals follow).
    Won { cluster: String },
    /// The winner still runs there (its status is mirrored).
    Running { cluster: String },
    /// The winner's worker is unreachable, for less than `workerLostTimeout` so far.
    WinnerUnreachable { cluster: String },
    /// Back to dispatch.
    Redispatch(RedispatchCause),
}

/// The decision, in the order the shell carries it out: finalizer, removals, creations,
/// gate, then what the status records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub finalizer: Option<FinalizerAction>,
    pub remove: Vec<Removal>,
    pub create: Vec<String>,
    pub open_gate: Option<GateOpening>,
    pub progress: Progress,
    pub requeue_after: Option<Duration>,
}

impl Decision {
    fn requeue(&mut self, after: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(after, |r| r.min(after)));
    }

    fn remove(&mut self, cluster: &str, cause: RemovalCause) {
        self.remove.push(Removal {
            cluster: cluster.to_string(),
            cause,
            announce: true,
        });
    }

    fn remove_all_except(
        &mut self,
        replicas: &[ReplicaState],
        keep: Option<&str>,
        cause: RemovalCause,
    ) {
        for r in replicas
            .iter()
            .filter(|r| Some(r.view.cluster.as_str()) != keep)
        {
            self.remove(&r.view.cluster, cause.clone());
        }
    }

    /// Whether this decision removes the replica on `cluster`.
    pub fn removes(&self, cluster: &str) -> bool {
        self.remove.iter().any(|r| r.cluster == cluster)
    }
}

/// Decides the next step for one manager Workload (the rule is in the module's doc).
pub fn decide(obs: &Observation<'_>, config: &LifecycleConfig) -> Decision {
    let mut d = Decision::default();
    let wl = obs.workload;
    let cause = match &wl.standing {
        Standing::Leaving => {
            if wl.has_finalizer {
                d.remove_all_except(obs.replicas, None, RemovalCause::WorkloadDeleted);
                if obs.replicas.is_empty() {
                    d.finalizer = Some(FinalizerAction::Remove);
                }
            }
            return d;
        }
        Standing::Finished => Some(RemovalCause::Finished),
        Standing::Inactive => Some(RemovalCause::Inactive),
        Standing::NotReserved { evicted } => Some(RemovalCause::NotReserved {
            evicted: evicted.clone(),
        }),
        Standing::CheckFailing { check } => Some(RemovalCause::CheckRetry {
            check: check.clone(),
        }),
        Standing::Reserved => None,
    };
    if !wl.has_finalizer {
        d.finalizer = Some(FinalizerAction::Add);
    }
    if let Some(cause) = cause {
        d.remove_all_except(obs.replicas, None, cause);
        return d;
    }
    match &wl.winner {
        Some(winner) => follow_winner(obs, config, winner, &mut d),
        None => {
            let fresh = without_stale(obs, &mut d);
            let obs = Observation {
                replicas: &fresh,
                ..*obs
            };
            match earliest_admitted(&obs) {
                Some(winner) => {
                    d.remove_all_except(
                        obs.replicas,
                        Some(&winner),
                        RemovalCause::Lost {
                            winner: winner.clone(),
                        },
                    );
                    for removal in &mut d.remove {
                        removal.announce = removal.cause == RemovalCause::Stale;
                    }
                    d.progress = Progress::Won { cluster: winner };
                }
                None => dispatch_and_ungate(&obs, config, &mut d),
            }
        }
    }
    d
}

/// The replicas of the current dispatch; those made before the last re-dispatch, and those
/// finished as `OutOfSync`, are removed.
fn without_stale(obs: &Observation<'_>, d: &mut Decision) -> Vec<ReplicaState> {
    let latest = obs.workload.redispatch_stamp.as_ref();
    let mut fresh = Vec::with_capacity(obs.replicas.len());
    for r in obs.replicas {
        if latest.is_some() && r.stamp.as_ref() != latest {
            d.remove(&r.view.cluster, RemovalCause::Stale);
        } else if r.finished_out_of_sync {
            d.remove(&r.view.cluster, RemovalCause::OutOfSync);
        } else {
            fresh.push(r.clone());
        }
    }
    fresh
}

/// The replica admitted first (ties: the route's cluster order).
fn earliest_admitted(obs: &Observation<'_>) -> Option<String> {
    obs.replicas
        .iter()
        .filter_map(|r| {
            r.admitted_at
                .map(|at| (at, rank(&r.view.cluster, obs.route), &r.view.cluster))
        })
        .min()
        .map(|(_, _, cluster)| cluster.clone())
}

fn rank(cluster: &str, order: &[String]) -> usize {
    order
        .iter()
        .position(|c| c == cluster)
        .unwrap_or(order.len())
}

fn follow_winner(obs: &Observation<'_>, config: &LifecycleConfig, winner: &str, d: &mut Decision) {
    // Losers that survived an earlier pass (e.g. their worker was down) go now.
    d.remove_all_except(
        obs.replicas,
        Some(winner),
        RemovalCause::Lost {
            winner: winner.to_string(),
        },
    );
    let cluster = winner.to_string();
    let state = obs
        .clusters
        .iter()
        .find(|c| c.name == winner)
        .map(|c| &c.state);
    d.progress = match state {
        None => Progress::Redispatch(RedispatchCause::ClusterRemoved { cluster }),
        Some(ClusterState::Unreachable { since, .. }) => {
            let lost_for = obs
                .now
                .signed_duration_since(*since)
                .to_std()
                .unwrap_or(Duration::ZERO);
            match config.worker_lost_timeout.checked_sub(lost_for) {
                Some(left) if !left.is_zero() => {
                    d.requeue(left);
                    Progress::WinnerUnreachable { cluster }
                }
                _ => Progress::Redispatch(RedispatchCause::Unreachable {
                    cluster,
                    timeout: config.worker_lost_timeout,
                }),
            }
        }
        Some(ClusterState::Active) => {
            match obs.replicas.iter().find(|r| r.view.cluster == winner) {
                None => Progress::Redispatch(RedispatchCause::ReplicaGone { cluster }),
                Some(replica) => {
                    let lost = match &replica.evicted {
                        _ if replica.finished_out_of_sync => {
                            Some(RedispatchCause::FinishedOutOfSync {
                                cluster: cluster.clone(),
                            })
                        }
                        Some(reason) => Some(RedispatchCause::Evicted {
                            cluster: cluster.clone(),
                            reason: reason.clone(),
                        }),
                        None if !replica.quota_reserved => Some(RedispatchCause::LostReservation {
                            cluster: cluster.clone(),
                        }),
                        None => None,
                    };
                    match lost {
                        Some(cause) => {
                            d.remove(&cluster, RemovalCause::WinnerLost(cause.clone()));
                            Progress::Redispatch(cause)
                        }
                        None => Progress::Running { cluster },
                    }
                }
            }
        }
    };
    if matches!(d.progress, Progress::Redispatch(_)) {
        d.requeue(Duration::ZERO);
    }
}

fn dispatch_and_ungate(obs: &Observation<'_>, config: &LifecycleConfig, d: &mut Decision) {
    let eligible: Vec<String> = obs
        .clusters
        .iter()
        .filter(|c| c.state == ClusterState::Active)
        .map(|c| c.name.clone())
        .collect();
    let since = obs.workload.dispatch_since.unwrap_or(obs.now);
    let dispatched = dispatch(&config.dispatcher, &eligible, since, obs.now);
    if let Some(next) = dispatched.next_round_in {
        d.requeue(next);
    }
    for r in obs.replicas {
        if !dispatched.clusters.contains(&r.view.cluster) {
            d.remove(&r.view.cluster, RemovalCause::NotDispatched);
        } else if !r.in_sync {
            d.remove(&r.view.cluster, RemovalCause::OutOfSync);
        }
    }
    d.create = dispatched
        .clusters
        .iter()
        .filter(|c| !obs.replicas.iter().any(|r| r.view.cluster == **c))
        .cloned()
        .collect();
    if config.orchestrated {
        ungate_step(obs, config, &dispatched.clusters, d);
    }
    d.progress = Progress::Dispatched {
        clusters: dispatched.clusters,
        connected: eligible.len(),
    };
}

/// The gates: over the dispatched replicas (one this decision removes is no candidate, but
/// a gate opened on it still counts towards the timeout), the replicas being created (not
/// signalled yet: LeastDisruption waits for them) and the unreachable clusters' last known
/// gates.
fn ungate_step(
    obs: &Observation<'_>,
    config: &LifecycleConfig,
    dispatched: &[String],
    d: &mut Decision,
) {
    let mut views: Vec<ReplicaView> = obs
        .replicas
        .iter()
        .filter(|r| dispatched.contains(&r.view.cluster))
        .map(|r| {
            let mut view = r.view.clone();
            if d.removes(&view.cluster) {
                view.signal = None;
                view.cost = None;
            }
            view
        })
        .collect();
    views.extend(d.create.iter().map(|c| being_created_view(c)));
    views.extend(obs.clusters.iter().filter_map(unreachable_view));
    match ungate::decide_with_policy(
        &views,
        obs.route,
        obs.now,
        config.preemption_timeout,
        config.ungating_policy,
    ) {
        UngateDecision::Nothing => {}
        UngateDecision::Wait { requeue_after, .. }
        | UngateDecision::Collect { requeue_after, .. }
        | UngateDecision::AwaitRoom { requeue_after, .. } => d.requeue(requeue_after),
        UngateDecision::Open {
            cluster,
            signalled_at,
            previous_opened_at,
            previous_cluster,
            released_by,
            requeue_after,
            why,
        } => {
            d.requeue(requeue_after);
            d.open_gate = Some(GateOpening {
                cluster,
                signalled_at,
                previous_opened_at,
                previous_cluster,
                released_by,
                why,
            });
        }
    }
}

/// A replica this decision creates: its gate is Closed and it has not signalled yet.
fn being_created_view(cluster: &str) -> ReplicaView {
    ReplicaView {
        cluster: cluster.to_string(),
        gate: Some(GateObservation {
            state: GateState::Closed,
            since: None,
        }),
        ..Default::default()
    }
}

/// What an unreachable cluster contributes to the ungating decision: its last known Open gate
/// (it cannot be opened now, so it never signals, and a Closed gate there holds no baton), or,
/// when not seen since this manager started, a gate that may have been opened at that time.
fn unreachable_view(cluster: &ClusterView) -> Option<ReplicaView> {
    let ClusterState::Unreachable { since, last_known } = &cluster.state else {
        return None;
    };
    match last_known {
        LastKnown::Seen(None) => None,
        LastKnown::Seen(Some(seen)) => {
            let open = seen
                .gate
                .as_ref()
                .is_some_and(|g| g.state == GateState::Open);
            open.then(|| ReplicaView {
                cluster: cluster.name.clone(),
                gate: seen.gate,
                signal: None,
                admitted: false,
                cost: None,
                released: None,
            })
        }
        LastKnown::NeverSeen => Some(ReplicaView {
            cluster: cluster.name.clone(),
            gate: Some(GateObservation {
                state: GateState::Open,
                since: Some(*since),
            }),
            signal: None,
            admitted: false,
            cost: None,
            released: None,
        }),
    }
}
