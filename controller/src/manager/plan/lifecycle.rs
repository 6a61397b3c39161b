//! The manager's side of one Workload's life across the workers (DESIGN.md §3): the
//! decision is [`baton_core::lifecycle::decide`], over compact views; this module reads
//! those views off the Workload objects in the caches and writes the decision into the
//! manager Workload's status and events (mirroring the winner, the MultiKueue check, the
//! dispatch note). Pure: the same objects give the same plan.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_core::lifecycle::{
    self as core, Progress, RedispatchCause, ReplicaState, Standing, WorkloadView,
};
use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::time::{to_chrono, to_kube};
use baton_crds::workload::{
    AdmissionCheckState, CheckState, PriorityClassRef, Workload, WorkloadStatus,
};
use chrono::{DateTime, Utc};
use kube::ResourceExt;

use crate::admission::checks;
use crate::manager::plan::baton_view;
use crate::manager::plan::replica::{
    CachedReplica, SpecDigest, in_sync, priority_in_sync, priority_updatable, redispatch_stamp,
};
use crate::manager::plan::routing::Route;

pub use baton_core::lifecycle::{
    ClusterState, ClusterView, FinalizerAction, GateOpening, LastKnown, LifecycleConfig, Removal,
    RemovalCause,
};

/// The finalizer that keeps a manager Workload until its replicas are gone.
pub const FINALIZER: &str = "kueue.x-k8s.io/baton-multikueue";

/// Everything the plan reads.
pub struct Observation<'a> {
    pub workload: &'a Workload,
    /// `None`: the workload is not (or no longer) a MultiKueue workload.
    pub route: Option<&'a Route>,
    /// The route's clusters that have a MultiKueueCluster object, in route order.
    pub clusters: &'a [ClusterView],
    /// Our replicas on the Active clusters, by cluster.
    pub replicas: &'a BTreeMap<String, CachedReplica>,
    /// The workload's priority resolved on the manager (its `spec.priority`, else its class's
    /// value); `None` when its class is not found there. Replicas carry it, so that workers
    /// need no copy of the manager's priority classes (as upstream, whose replicas carry
    /// `spec.priority`).
    pub priority: Option<i32>,
    /// Whether the Workload CRD keeps the replica view (`status.baton`).
    pub view: baton_view::Storage,
    pub now: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub type_: EventType,
    pub reason: String,
    /// What was decided: events that share upstream's reason (`MultiKueue`) for different
    /// decisions stay apart (the recorder folds repeats of one type, reason, action and
    /// cluster into a series).
    pub action: &'static str,
    pub message: String,
    /// The worker cluster the event is about.
    pub cluster: Option<String>,
}

/// The priority (class reference and value) to write into replicas on `clusters`.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorityUpdate {
    pub clusters: Vec<String>,
    pub class: Option<PriorityClassRef>,
    pub priority: Option<i32>,
}

/// What the shell must do, in this order: finalizer, deletions, creations, gate, status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub finalizer: Option<FinalizerAction>,
    pub delete: Vec<Removal>,
    pub create: Vec<String>,
    /// Replicas whose priority is updated in place, as upstream does when the manager's
    /// priority changed: every live replica, the winner's too.
    pub update_priority: Option<PriorityUpdate>,
    pub open_gate: Option<GateOpening>,
    /// The manager Workload's new status, when it changes.
    pub status: Option<WorkloadStatus>,
    pub events: Vec<PlannedEvent>,
    pub requeue_after: Option<Duration>,
    /// The winner was decided in this plan (for metrics).
    pub admitted_on: Option<String>,
    /// The workload goes back to dispatch in this plan (for metrics).
    pub redispatched: bool,
    /// With `open_gate`: when the plan was made. The gate is stamped with this time, which
    /// `status.baton` records in the same pass (so the next pass finds it unchanged).
    pub opened_at: Option<DateTime<Utc>>,
}

impl Plan {
    fn event(
        &mut self,
        type_: EventType,
        reason: &str,
        action: &'static str,
        cluster: &str,
        message: String,
    ) {
        self.events.push(PlannedEvent {
            type_,
            reason: reason.to_string(),
            action,
            message,
            cluster: Some(cluster.to_string()),
        });
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(after, |r| r.min(after)));
    }
}

/// Plans the next step for one manager Workload.
pub fn plan(obs: &Observation<'_>, config: &LifecycleConfig) -> Plan {
    let workload = workload_view(obs);
    let expected = SpecDigest::of(&obs.workload.spec).with_resolved_priority(obs.priority);
    let replicas: Vec<ReplicaState> = obs
        .replicas
        .iter()
        .map(|(cluster, r)| replica_state(&expected, cluster, r))
        .collect();
    let route = obs.route.map_or(&[][..], |r| r.clusters.as_slice());
    let decision = core::decide(
        &core::Observation {
            workload: &workload,
            route,
            clusters: obs.clusters,
            replicas: &replicas,
            now: obs.now,
        },
        config,
    );
    let stale: Vec<String> = obs
        .replicas
        .iter()
        .filter(|(cluster, r)| {
            !decision.removes(cluster)
                && in_sync(&expected, r)
                && !priority_in_sync(&expected, r)
                && priority_updatable(&expected, r)
        })
        .map(|(cluster, _)| cluster.clone())
        .collect();
    let update_priority = (!stale.is_empty()).then(|| PriorityUpdate {
        clusters: stale,
        class: obs.workload.spec.priority_class_ref.as_deref().cloned(),
        priority: obs.workload.spec.priority.or(obs.priority),
    });
    let mut plan = Plan {
        update_priority,
        finalizer: decision.finalizer,
        delete: decision.remove,
        create: decision.create,
        open_gate: decision.open_gate.clone(),
        requeue_after: decision.requeue_after,
        opened_at: decision.open_gate.as_ref().map(|_| obs.now),
        ..Plan::default()
    };
    if let Some(route) = obs.route {
        record(obs, route, &decision.progress, config, &mut plan);
    }
    plan
}

/// The manager Workload as the decision reads it.
fn workload_view(obs: &Observation<'_>) -> WorkloadView {
    let wl = obs.workload;
    let empty = WorkloadStatus::default();
    let status = wl.status.as_ref().unwrap_or(&empty);
    let conditions = &status.conditions;
    let standing = if wl.metadata.deletion_timestamp.is_some() || obs.route.is_none() {
        Standing::Leaving
    } else if is_true(conditions, condition::FINISHED) {
        Standing::Finished
    } else if !wl.spec.active {
        Standing::Inactive
    } else if !checks::has_reservation(status) {
        Standing::NotReserved {
            evicted: find_condition(conditions, condition::EVICTED)
                .filter(|c| c.status == "True")
                .map(|c| c.message.clone()),
        }
    } else if let Some(check) = checks::failing(status) {
        Standing::CheckFailing {
            check: check.name.clone(),
        }
    } else {
        Standing::Reserved
    };
    let dispatch_since = obs.route.and_then(|route| {
        status
            .admission_checks
            .iter()
            .find(|c| c.name == route.check && c.state == CheckState::Pending)
            .map(|c| to_chrono(&c.last_transition_time))
    });
    WorkloadView {
        has_finalizer: wl.finalizers().iter().any(|f| f == FINALIZER),
        standing,
        winner: status.cluster_name.clone(),
        redispatch_stamp: redispatch_stamp(status),
        dispatch_since,
    }
}

/// One replica as the decision reads it.
/// In sync: its spec matches, and its priority does or can be updated in place.
fn replica_state(expected: &SpecDigest, cluster: &str, replica: &CachedReplica) -> ReplicaState {
    ReplicaState {
        view: replica.view(cluster),
        stamp: replica.stamp().map(str::to_string),
        in_sync: in_sync(expected, replica)
            && (priority_in_sync(expected, replica) || priority_updatable(expected, replica)),
        admitted_at: replica.admitted_at(),
        evicted: replica.evicted().map(str::to_string),
        quota_reserved: replica.quota_reserved(),
        finished_out_of_sync: replica.finished_out_of_sync(),
    }
}

/// Writes what the decision's progress means into the status and events.
fn record(
    obs: &Observation<'_>,
    route: &Route,
    progress: &Progress,
    config: &LifecycleConfig,
    plan: &mut Plan,
) {
    let old_status = obs.workload.status.clone().unwrap_or_default();
    let mut status = old_status.clone();
    match progress {
        Progress::None | Progress::WinnerUnreachable { .. } => {}
        Progress::Won { cluster } => {
            declare_winner(obs, route, cluster, &mut status, plan);
            status.baton = match obs.view {
                baton_view::Storage::Kept => baton_view::won(
                    old_status.baton.as_deref(),
                    &replica_views(obs),
                    cluster,
                    &view_rules(route, config),
                )
                .map(Box::new),
                baton_view::Storage::Pruned => None,
            };
        }
        Progress::Running { cluster } => {
            if let Some(replica) = obs.replicas.get(cluster) {
                mirror(replica, &mut status);
            }
        }
        Progress::Redispatch(cause) => {
            redispatch(obs.now, route, cause, &mut status, plan);
            status.baton = None;
        }
        Progress::Dispatched {
            clusters,
            connected,
        } => {
            note_dispatch(obs.now, route, clusters, *connected, &mut status, plan);
            if config.orchestrated && obs.view == baton_view::Storage::Kept {
                let view = baton_view::dispatched(
                    &replica_views(obs),
                    plan.open_gate.as_ref(),
                    obs.now,
                    &view_rules(route, config),
                );
                match baton_view::defer(old_status.baton.as_deref(), view.as_ref(), obs.now) {
                    Some(wait) => plan.requeue(wait),
                    None => status.baton = view.map(Box::new),
                }
            }
        }
    }
    if status != old_status {
        plan.status = Some(status);
    }
}

/// The observed replicas, as the ungating rule reads them.
fn replica_views(obs: &Observation<'_>) -> Vec<baton_core::ungate::ReplicaView> {
    obs.replicas
        .iter()
        .map(|(cluster, r)| r.view(cluster))
        .collect()
}

fn view_rules<'a>(route: &'a Route, config: &LifecycleConfig) -> baton_view::Rules<'a> {
    baton_view::Rules {
        cluster_order: &route.clusters,
        timeout: config.preemption_timeout,
        policy: config.ungating_policy,
    }
}

fn is_true(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

fn declare_winner(
    obs: &Observation<'_>,
    route: &Route,
    winner: &str,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    status.nominated_cluster_names.clear();
    status.cluster_name = Some(winner.to_string());
    if let Some(replica) = obs.replicas.get(winner) {
        mirror(replica, status);
    }
    let message = admitted_message(winner);
    set_check(
        status,
        &route.check,
        CheckState::Ready,
        message.clone(),
        obs.now,
    );
    checks::sync_admitted(status, obs.now);
    plan.admitted_on = Some(winner.to_string());
    plan.event(
        EventType::Normal,
        reason::MULTIKUEUE,
        "Admitted",
        winner,
        message,
    );
}

/// The MultiKueue check's message, and the event's, once a worker admitted the workload
/// (upstream's words). The losers' replicas are removed without an event of their own.
pub fn admitted_message(winner: &str) -> String {
    format!("The workload was admitted on {winner:?}")
}

/// Back to dispatch, the Kueue way: forget the winner and set the MultiKueue check to
/// `Retry`; the admission loop then evicts the workload on the manager (its quota goes back,
/// it is queued again) and, once it reserves again, the lifecycle dispatches it afresh.
fn redispatch(
    now: DateTime<Utc>,
    route: &Route,
    cause: &RedispatchCause,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    let winner = cause.cluster();
    let previous = status
        .admission_checks
        .iter()
        .find(|c| c.name == route.check)
        .map_or(CheckState::Pending, |c| c.state);
    status.cluster_name = None;
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::REQUEUED,
            ConditionStatus::True,
            "Redispatched",
            cause.to_string(),
        ),
        now,
    );
    let message = retry_message(cause, previous);
    set_check(
        status,
        &route.check,
        CheckState::Retry,
        message.clone(),
        now,
    );
    checks::sync_admitted(status, now);
    plan.redispatched = true;
    let (type_, action) = match cause {
        RedispatchCause::Evicted { .. } => (EventType::Normal, "EvictedOnWorker"),
        RedispatchCause::FinishedOutOfSync { .. } => (EventType::Warning, "OutOfSync"),
        RedispatchCause::ClusterRemoved { .. } | RedispatchCause::Unreachable { .. } => {
            (EventType::Warning, "WorkerLost")
        }
        RedispatchCause::ReplicaGone { .. } | RedispatchCause::LostReservation { .. } => {
            (EventType::Warning, "ReplicaLost")
        }
    };
    plan.event(type_, reason::MULTIKUEUE, action, winner, message);
}

/// The MultiKueue check's message (and its event's) when the workload leaves its worker:
/// upstream's words for each case, with the state the check leaves.
pub fn retry_message(cause: &RedispatchCause, previous: CheckState) -> String {
    let previous = check_state_name(previous);
    match cause {
        RedispatchCause::Evicted { cluster, .. } => format!(
            "Workload evicted on worker cluster: {cluster:?}, resetting for re-admission. \
             Previously: {previous:?}"
        ),
        RedispatchCause::FinishedOutOfSync { cluster } => format!(
            "Remote workload on worker cluster {cluster:?} is out of sync with its user job, \
             resetting for re-dispatch, Previously: {previous:?}"
        ),
        RedispatchCause::ClusterRemoved { .. } | RedispatchCause::Unreachable { .. } => {
            format!("Admitting remote lost, Previously: {previous:?}")
        }
        RedispatchCause::ReplicaGone { .. } | RedispatchCause::LostReservation { .. } => {
            format!("Admitting remote no longer exists, Previously: {previous:?}")
        }
    }
}

/// A check state as the API spells it.
fn check_state_name(state: CheckState) -> &'static str {
    match state {
        CheckState::Pending => "Pending",
        CheckState::Ready => "Ready",
        CheckState::Retry => "Retry",
        CheckState::Rejected => "Rejected",
    }
}

/// Up to this many clusters the check's message names them; past it, it counts them, as
/// `nominatedClusterNames` names them all: every manager Workload keeps its message, and
/// with 50 workers a list of names would be most of it.
const NAMED_IN_MESSAGE: usize = 3;

/// Where the workload was dispatched: `nominatedClusterNames` and the check's message,
/// written only once the reservation is [`DISPATCH_NOTE_DELAY`] old.
fn note_dispatch(
    now: DateTime<Utc>,
    route: &Route,
    clusters: &[String],
    connected: usize,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    let before = status.clone();
    let message = if clusters.is_empty() {
        format!(
            "no worker cluster of MultiKueueConfig {} is connected",
            route.config
        )
    } else if clusters.len() <= NAMED_IN_MESSAGE {
        format!(
            "dispatched to {} ({connected} of {} worker clusters connected)",
            clusters.join(", "),
            route.clusters.len()
        )
    } else {
        format!(
            "dispatched to {} worker clusters, named in nominatedClusterNames ({connected} of \
             {} connected)",
            clusters.len(),
            route.clusters.len()
        )
    };
    status.nominated_cluster_names = clusters.into();
    set_check(status, &route.check, CheckState::Pending, message, now);
    if let Some(wait) = dispatch_note_wait(&before, status, &route.check, now) {
        // Most workloads are admitted within seconds: their status then says where they
        // run, and a note of where they were dispatched would only have cost a write.
        *status = before;
        plan.requeue(wait);
    }
}

/// How long after its reservation a workload's status waits before it records where it was
/// dispatched (`nominatedClusterNames` and the check's message).
pub const DISPATCH_NOTE_DELAY: Duration = Duration::from_secs(5);

/// When `after` differs from `before` only by the dispatch note and the reservation is
/// younger than [`DISPATCH_NOTE_DELAY`]: how long until the note is due.
fn dispatch_note_wait(
    before: &WorkloadStatus,
    after: &WorkloadStatus,
    check: &str,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let without_note = |s: &WorkloadStatus| {
        let mut s = s.clone();
        s.nominated_cluster_names.clear();
        for entry in s.admission_checks.iter_mut().filter(|c| c.name == check) {
            entry.message.clear();
        }
        s
    };
    if before == after || without_note(before) != without_note(after) {
        return None;
    }
    let reserved_at = find_condition(&before.conditions, condition::QUOTA_RESERVED)
        .map(|c| to_chrono(&c.last_transition_time))?;
    let age = now
        .signed_duration_since(reserved_at)
        .to_std()
        .unwrap_or(Duration::ZERO);
    DISPATCH_NOTE_DELAY
        .checked_sub(age)
        .filter(|w| !w.is_zero())
}

/// Copies the winner's pod readiness and finish.
fn mirror(replica: &CachedReplica, status: &mut WorkloadStatus) {
    for c in replica.mirrored() {
        match status.conditions.iter_mut().find(|m| m.type_ == c.type_) {
            Some(existing) => *existing = c.clone(),
            None => status.conditions.push(c.clone()),
        }
    }
    status
        .conditions
        .retain(|c| c.type_ != condition::REQUEUED || c.status != "True");
}

/// Sets the manager's admission-check entry; the transition time moves only on a state change.
fn set_check(
    status: &mut WorkloadStatus,
    check: &str,
    state: CheckState,
    message: String,
    now: DateTime<Utc>,
) {
    match status.admission_checks.iter_mut().find(|c| c.name == check) {
        Some(entry) => {
            if entry.state != state {
                entry.state = state;
                entry.last_transition_time = to_kube(now);
            }
            entry.message = message;
        }
        None => status.admission_checks.push(AdmissionCheckState {
            name: check.to_string(),
            state,
            last_transition_time: to_kube(now),
            message,
            requeue_after_seconds: None,
            retry_count: None,
            pod_set_updates: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests;
