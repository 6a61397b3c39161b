//! The life of one manager Workload across the workers, as a pure plan (DESIGN.md §3):
//! dispatch replicas, let the earliest admitted one win, delete the others, mirror the
//! winner's status, send the workload back to dispatch when its replica is evicted or its
//! worker is lost for longer than `workerLostTimeout`, and clean up on finish and deletion.
//! Gate opening (KEP-8303) is decided by [`baton_core::ungate`] and folded into the same plan.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::condition;
use baton_crds::time::{to_chrono, to_kube};
use baton_crds::workload::{AdmissionCheckState, CheckState, Workload, WorkloadStatus};
use chrono::{DateTime, Utc};
use kube::ResourceExt;

use super::dispatch::dispatch;
use super::replica::{REDISPATCH_ANNOTATION, in_sync, redispatch_stamp};
use super::routing::Route;
use crate::admission::checks;
use crate::config::DispatcherConfig;
use baton_core::ungate::{self, UngateDecision};

/// The finalizer that keeps a manager Workload until its replicas are gone.
pub const FINALIZER: &str = "kueue.x-k8s.io/baton-multikueue";

/// Why replicas of a finished workload are deleted (the Job adapter removes their Job
/// copies itself, after mirroring the final status).
pub const FINISHED_REASON: &str = "the workload finished";

/// Conditions copied from the winning replica to the manager's Workload. Its quota
/// reservation and `Admitted` are the manager's own (manager-side quota).
const MIRRORED_CONDITIONS: &[&str] = &[condition::POD_READY, condition::FINISHED];

/// The settings the plan depends on.
#[derive(Clone, Debug)]
pub struct LifecycleConfig {
    pub orchestrated: bool,
    pub worker_lost_timeout: Duration,
    pub preemption_timeout: Duration,
    pub dispatcher: DispatcherConfig,
    /// How the next gate is chosen among signalling replicas.
    pub ungating_policy: ungate::UngatingPolicy,
}

/// A worker cluster named by the route, as the manager sees it now.
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

/// What the manager last saw of a workload's replica on a cluster it cannot reach now.
#[derive(Clone, Debug, PartialEq)]
pub enum LastKnown {
    /// Seen before the connection was lost (`None`: there was no replica).
    Seen(Option<Box<Workload>>),
    /// Not observed since this manager started: its gate may be open, as far as we know.
    NeverSeen,
}

/// Everything the plan reads.
pub struct Observation<'a> {
    pub workload: &'a Workload,
    /// `None`: the workload is not (or no longer) a MultiKueue workload.
    pub route: Option<&'a Route>,
    /// The route's clusters that have a MultiKueueCluster object, in route order.
    pub clusters: &'a [ClusterView],
    /// Our replicas on the Active clusters, by cluster.
    pub replicas: &'a BTreeMap<String, Workload>,
    pub now: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletion {
    pub cluster: String,
    pub reason: String,
    /// Whether the removal gets an event of its own. The losers removed on admission do not:
    /// the `AdmittedOnCluster` event names them (on a busy manager every event is a write).
    pub announce: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateOpening {
    pub cluster: String,
    pub signalled_at: DateTime<Utc>,
    /// Set when the timeout passed the baton on from an earlier opening.
    pub previous_opened_at: Option<DateTime<Utc>>,
    /// The cluster that held the baton until now.
    pub previous_cluster: Option<String>,
    /// Why this replica got the baton.
    pub why: ungate::OpenReason,
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
    pub message: String,
    /// The worker cluster the event is about.
    pub cluster: Option<String>,
}

/// What the shell must do, in this order: finalizer, deletions, creations, gate, status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub add_finalizer: bool,
    pub remove_finalizer: bool,
    pub delete: Vec<Deletion>,
    pub create: Vec<String>,
    pub open_gate: Option<GateOpening>,
    /// The manager Workload's new status, when it changes.
    pub status: Option<WorkloadStatus>,
    pub events: Vec<PlannedEvent>,
    pub requeue_after: Option<Duration>,
    /// The winner was decided in this plan (for metrics).
    pub admitted_on: Option<String>,
}

impl Plan {
    fn event(&mut self, type_: EventType, reason: &str, cluster: &str, message: String) {
        self.events.push(PlannedEvent {
            type_,
            reason: reason.to_string(),
            message,
            cluster: Some(cluster.to_string()),
        });
    }

    fn requeue(&mut self, after: Duration) {
        self.requeue_after = Some(self.requeue_after.map_or(after, |r| r.min(after)));
    }

    fn delete_all_except(
        &mut self,
        replicas: &BTreeMap<String, Workload>,
        keep: Option<&str>,
        reason: &str,
    ) {
        for cluster in replicas.keys().filter(|c| Some(c.as_str()) != keep) {
            self.delete.push(Deletion {
                cluster: cluster.clone(),
                reason: reason.to_string(),
                announce: true,
            });
        }
    }
}

/// Plans the next step for one manager Workload.
pub fn plan(obs: &Observation<'_>, config: &LifecycleConfig) -> Plan {
    let mut plan = Plan::default();
    let wl = obs.workload;
    let has_finalizer = wl
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER);

    if wl.metadata.deletion_timestamp.is_some() || obs.route.is_none() {
        if has_finalizer {
            plan.delete_all_except(obs.replicas, None, "the workload was deleted");
            // Replicas on unreachable workers are left to the garbage collector.
            plan.remove_finalizer = obs.replicas.is_empty();
        }
        return plan;
    }
    let Some(route) = obs.route else { return plan };
    if !has_finalizer {
        plan.add_finalizer = true;
    }

    let old_status = wl.status.clone().unwrap_or_default();
    let mut status = old_status.clone();
    let conditions = &old_status.conditions;
    if is_true(conditions, condition::FINISHED) {
        plan.delete_all_except(obs.replicas, None, FINISHED_REASON);
        return plan;
    }
    if !wl.spec.active {
        plan.delete_all_except(obs.replicas, None, "the workload is inactive");
        return plan;
    }

    // Manager-side quota (as Kueue): only a workload holding a reservation in the manager's
    // ClusterQueue has replicas. One evicted on the manager (preempted there, or after its
    // check asked for a retry) loses them everywhere.
    if !checks::has_reservation(&old_status) {
        let reason = find_condition(conditions, condition::EVICTED)
            .filter(|c| c.status == "True")
            .map(|c| format!("evicted on the manager: {}", c.message))
            .unwrap_or_else(|| "the workload holds no quota reservation on the manager".into());
        plan.delete_all_except(obs.replicas, None, &reason);
        return plan;
    }
    // A check asked for a retry: the admission loop evicts the workload next, and its
    // replicas go (as they would once it holds no reservation); nothing is dispatched.
    if let Some(check) = checks::failing(&old_status) {
        let reason = format!("admission check {} asked for a retry", check.name);
        plan.delete_all_except(obs.replicas, None, &reason);
        return plan;
    }

    match old_status.cluster_name.clone() {
        Some(winner) => follow_winner(obs, route, config, &winner, &mut status, &mut plan),
        None => {
            // Replicas older than the last re-dispatch belong to the dispatch that ended (for
            // example on a worker that was lost and came back): they go, and cannot win.
            let fresh = without_stale(obs, &old_status, &mut plan);
            let obs = Observation {
                replicas: &fresh,
                ..*obs
            };
            match earliest_admitted(&obs, route) {
                Some(winner) => declare_winner(&obs, route, &winner, &mut status, &mut plan),
                None => dispatch_and_ungate(&obs, route, config, &mut status, &mut plan),
            }
        }
    }
    if status != old_status {
        plan.status = Some(status);
    }
    plan
}

fn without_stale(
    obs: &Observation<'_>,
    status: &WorkloadStatus,
    plan: &mut Plan,
) -> BTreeMap<String, Workload> {
    let latest = redispatch_stamp(status);
    let mut fresh = BTreeMap::new();
    for (cluster, replica) in obs.replicas {
        let made_after = replica.annotations().get(REDISPATCH_ANNOTATION);
        if latest.is_some() && made_after != latest.as_ref() {
            plan.delete.push(Deletion {
                cluster: cluster.clone(),
                reason: "the replica predates the workload's re-dispatch".into(),
                announce: true,
            });
        } else {
            fresh.insert(cluster.clone(), replica.clone());
        }
    }
    fresh
}

fn is_true(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

fn replica_conditions(
    replica: &Workload,
) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    replica
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// The replica admitted first (ties: the route's cluster order).
fn earliest_admitted(obs: &Observation<'_>, route: &Route) -> Option<String> {
    obs.replicas
        .iter()
        .filter_map(|(cluster, r)| {
            find_condition(replica_conditions(r), condition::ADMITTED)
                .filter(|c| c.status == "True")
                .map(|c| {
                    (
                        to_chrono(&c.last_transition_time),
                        rank(cluster, &route.clusters),
                        cluster.clone(),
                    )
                })
        })
        .min()
        .map(|(_, _, cluster)| cluster)
}

fn rank(cluster: &str, order: &[String]) -> usize {
    order
        .iter()
        .position(|c| c == cluster)
        .unwrap_or(order.len())
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
    set_check(
        status,
        &route.check,
        CheckState::Ready,
        format!("admitted on worker cluster {winner}"),
        obs.now,
    );
    checks::sync_admitted(status, obs.now);
    let earlier = plan.delete.len();
    plan.delete_all_except(obs.replicas, Some(winner), &format!("admitted on {winner}"));
    let losers: Vec<&str> = plan.delete[earlier..]
        .iter()
        .map(|d| d.cluster.as_str())
        .collect();
    let message = match losers.as_slice() {
        [] => format!("admitted on worker cluster {winner}"),
        [one] => format!("admitted on worker cluster {winner}; the replica on {one} is removed"),
        many => format!(
            "admitted on worker cluster {winner}; the replicas on {} are removed",
            many.join(", ")
        ),
    };
    for deletion in &mut plan.delete[earlier..] {
        deletion.announce = false;
    }
    plan.admitted_on = Some(winner.to_string());
    plan.event(EventType::Normal, "AdmittedOnCluster", winner, message);
}

fn follow_winner(
    obs: &Observation<'_>,
    route: &Route,
    config: &LifecycleConfig,
    winner: &str,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    // Losers that survived an earlier pass (e.g. their worker was down) go now.
    plan.delete_all_except(obs.replicas, Some(winner), &format!("admitted on {winner}"));
    let cluster = obs.clusters.iter().find(|c| c.name == winner);
    match cluster.map(|c| &c.state) {
        None => redispatch(
            obs,
            route,
            winner,
            format!("worker cluster {winner} was removed"),
            status,
            plan,
        ),
        Some(ClusterState::Unreachable { since, .. }) => {
            let lost_for = obs
                .now
                .signed_duration_since(*since)
                .to_std()
                .unwrap_or(Duration::ZERO);
            if lost_for >= config.worker_lost_timeout {
                let reason = format!(
                    "worker cluster {winner} unreachable for more than {}s",
                    config.worker_lost_timeout.as_secs()
                );
                redispatch(obs, route, winner, reason, status, plan);
            } else {
                plan.requeue(config.worker_lost_timeout - lost_for);
            }
        }
        Some(ClusterState::Active) => match obs.replicas.get(winner) {
            None => redispatch(
                obs,
                route,
                winner,
                format!("the replica on {winner} disappeared"),
                status,
                plan,
            ),
            Some(replica) => {
                let conditions = replica_conditions(replica);
                if is_true(conditions, condition::EVICTED)
                    || !is_true(conditions, condition::QUOTA_RESERVED)
                {
                    let why = find_condition(conditions, condition::EVICTED)
                        .filter(|c| c.status == "True")
                        .map(|c| format!("evicted on {winner}: {}", c.reason))
                        .unwrap_or_else(|| {
                            format!("the replica on {winner} lost its quota reservation")
                        });
                    plan.delete.push(Deletion {
                        cluster: winner.to_string(),
                        reason: why.clone(),
                        announce: true,
                    });
                    redispatch(obs, route, winner, why, status, plan);
                } else {
                    mirror(replica, status);
                }
            }
        },
    }
}

/// Back to dispatch, the Kueue way: forget the winner and set the MultiKueue check to
/// `Retry`; the admission loop then evicts the workload on the manager (its quota goes back,
/// it is queued again) and, once it reserves again, the lifecycle dispatches it afresh.
fn redispatch(
    obs: &Observation<'_>,
    route: &Route,
    winner: &str,
    reason: String,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    status.cluster_name = None;
    let now = obs.now;
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::REQUEUED,
            ConditionStatus::True,
            "Redispatched",
            reason.clone(),
        ),
        now,
    );
    set_check(
        status,
        &route.check,
        CheckState::Retry,
        format!("re-dispatching: {reason}"),
        now,
    );
    checks::sync_admitted(status, now);
    plan.event(
        EventType::Warning,
        "Redispatched",
        winner,
        format!("left worker cluster {winner}: {reason}"),
    );
    plan.requeue(Duration::ZERO);
}

fn dispatch_and_ungate(
    obs: &Observation<'_>,
    route: &Route,
    config: &LifecycleConfig,
    status: &mut WorkloadStatus,
    plan: &mut Plan,
) {
    let eligible: Vec<String> = obs
        .clusters
        .iter()
        .filter(|c| c.state == ClusterState::Active)
        .map(|c| c.name.clone())
        .collect();
    let since = status
        .admission_checks
        .iter()
        .find(|c| c.name == route.check && c.state == CheckState::Pending)
        .map(|c| to_chrono(&c.last_transition_time))
        .unwrap_or(obs.now);
    let dispatched = dispatch(&config.dispatcher, &eligible, since, obs.now);
    if let Some(next) = dispatched.next_round_in {
        plan.requeue(next);
    }

    for (cluster, replica) in obs.replicas {
        if !dispatched.clusters.contains(cluster) {
            plan.delete.push(Deletion {
                cluster: cluster.clone(),
                reason: "the cluster is no longer dispatched to".into(),
                announce: true,
            });
        } else if !in_sync(obs.workload, replica) {
            plan.delete.push(Deletion {
                cluster: cluster.clone(),
                reason: "the replica's spec differs from the workload's".into(),
                announce: true,
            });
        }
    }
    let created: Vec<String> = dispatched
        .clusters
        .iter()
        .filter(|c| !obs.replicas.contains_key(*c))
        .cloned()
        .collect();
    // The "Dispatched" events are the shell's: only it knows which creations succeeded.
    plan.create = created;

    let before = status.clone();
    let message = if dispatched.clusters.is_empty() {
        format!(
            "no worker cluster of MultiKueueConfig {} is connected",
            route.config
        )
    } else {
        format!(
            "dispatched to {} ({} of {} worker clusters connected)",
            dispatched.clusters.join(", "),
            eligible.len(),
            route.clusters.len()
        )
    };
    status.nominated_cluster_names = dispatched.clusters.clone();
    set_check(status, &route.check, CheckState::Pending, message, obs.now);
    if let Some(wait) = dispatch_note_wait(&before, status, &route.check, obs.now) {
        // Most workloads are admitted within seconds: their status then says where they
        // run, and a note of where they were dispatched would only have cost a write.
        *status = before;
        plan.requeue(wait);
    }

    if config.orchestrated {
        // A replica this plan deletes (its spec is out of date) is no candidate, but a gate
        // opened on it still counts towards the timeout.
        let mut views: Vec<ungate::ReplicaView> = obs
            .replicas
            .iter()
            .filter(|(c, _)| dispatched.clusters.contains(*c))
            .map(|(c, r)| {
                let mut view = ungate::view_of(c, r);
                if plan.delete.iter().any(|d| &d.cluster == c) {
                    view.signal = None;
                    view.cost = None;
                }
                view
            })
            .collect();
        // Replicas created by this plan have not signalled yet (LeastDisruption waits for them).
        views.extend(plan.create.iter().map(|c| being_created_view(c)));
        views.extend(obs.clusters.iter().filter_map(unreachable_view));
        match ungate::decide_with_policy(
            &views,
            &route.clusters,
            obs.now,
            config.preemption_timeout,
            config.ungating_policy,
        ) {
            UngateDecision::Nothing => {}
            UngateDecision::Wait { requeue_after, .. }
            | UngateDecision::Collect { requeue_after, .. } => plan.requeue(requeue_after),
            UngateDecision::Open {
                cluster,
                signalled_at,
                previous_opened_at,
                previous_cluster,
                requeue_after,
                why,
            } => {
                plan.requeue(requeue_after);
                plan.open_gate = Some(GateOpening {
                    cluster,
                    signalled_at,
                    previous_opened_at,
                    previous_cluster,
                    why,
                });
            }
        }
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

/// A replica this plan creates: its gate is Closed and it has not signalled yet.
fn being_created_view(cluster: &str) -> ungate::ReplicaView {
    ungate::ReplicaView {
        cluster: cluster.to_string(),
        gate: Some(ungate::GateObservation {
            state: baton_crds::workload::GateState::Closed,
            since: None,
        }),
        ..Default::default()
    }
}

/// What an unreachable cluster contributes to the ungating decision: its last known Open gate
/// (it cannot be opened now, so it never signals, and a Closed gate there holds no baton), or,
/// when not seen since this manager started, a gate that may have been opened at that time.
fn unreachable_view(cluster: &ClusterView) -> Option<ungate::ReplicaView> {
    let ClusterState::Unreachable { since, last_known } = &cluster.state else {
        return None;
    };
    match last_known {
        LastKnown::Seen(None) => None,
        LastKnown::Seen(Some(replica)) => {
            let mut view = ungate::view_of(&cluster.name, replica);
            view.signal = None;
            view.admitted = false;
            view.cost = None;
            let open = view
                .gate
                .as_ref()
                .is_some_and(|g| g.state == baton_crds::workload::GateState::Open);
            open.then_some(view)
        }
        LastKnown::NeverSeen => Some(ungate::ReplicaView {
            cluster: cluster.name.clone(),
            gate: Some(ungate::GateObservation {
                state: baton_crds::workload::GateState::Open,
                since: Some(*since),
            }),
            signal: None,
            admitted: false,
            cost: None,
        }),
    }
}

/// Copies the winner's pod readiness and finish.
fn mirror(replica: &Workload, status: &mut WorkloadStatus) {
    let Some(replica_status) = replica.status.as_ref() else {
        return;
    };
    for type_ in MIRRORED_CONDITIONS {
        if let Some(c) = find_condition(&replica_status.conditions, type_) {
            match status.conditions.iter_mut().find(|m| m.type_ == *type_) {
                Some(existing) => *existing = c.clone(),
                None => status.conditions.push(c.clone()),
            }
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
