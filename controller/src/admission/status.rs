//! The workload status each decision writes. Pure: old object + decision + `now` → the new
//! status, or `None` when nothing would change (no write, no event).
//!
//! Every write also initialises missing gate entries as Closed (KEP-8303: a gate listed in
//! spec with no status entry is Closed; the entry makes that visible to users and peers).

use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{MULTIKUEUE_GATE, ReleaseReason, condition, reason};
use baton_crds::gates::{close_all_gates, initialize_gates, set_gate_state};
use baton_crds::quantity::format_milli;
use baton_crds::workload::{
    Admission, FlavorName, GateState, PodSetAssignment, PreemptionCost, WorkloadStatus,
};
use baton_crds::{Workload, WorkloadKey};
use chrono::{DateTime, Utc};

use super::checks;
use baton_core::admission::assign::Assignment;
use baton_core::admission::preempt::PreemptReason;

/// How a status change came about; the shell turns it into a write and maybe an event.
fn with_status(
    workload: &Workload,
    now: DateTime<Utc>,
    change: impl FnOnce(&mut WorkloadStatus, DateTime<Utc>) -> bool,
) -> Option<WorkloadStatus> {
    let mut copy = workload.clone();
    let mut changed = initialize_gates(&mut copy, now);
    let mut status = copy.status.unwrap_or_default();
    changed |= change(&mut status, now);
    changed.then_some(status)
}

fn set(
    status: &mut WorkloadStatus,
    type_: &str,
    value: ConditionStatus,
    why: &str,
    message: &str,
    now: DateTime<Utc>,
) -> bool {
    set_condition(
        &mut status.conditions,
        NewCondition::new(type_, value, why, message),
        now,
    )
}

/// Whether the condition is currently True.
fn is_true(status: &WorkloadStatus, type_: &str) -> bool {
    find_condition(&status.conditions, type_).is_some_and(|c| c.status == "True")
}

/// Quota reserved with this assignment; `checks` are the admission checks of the queue that
/// apply to it: `Admitted` follows once every one is `Ready` (at once when there are none).
pub fn admitted(
    workload: &Workload,
    queue: &str,
    assignment: &Assignment,
    checks: &[String],
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let admission = Admission {
            cluster_queue: queue.to_string(),
            pod_set_assignments: assignment
                .pod_sets
                .iter()
                .map(|ps| PodSetAssignment {
                    name: ps.name.clone(),
                    flavors: ps
                        .flavors
                        .iter()
                        .map(|(r, f)| (r.clone(), FlavorName(f.clone())))
                        .collect(),
                    resource_usage: ps
                        .usage
                        .iter()
                        .map(|(r, milli)| (r.clone(), format_milli(*milli)))
                        .collect(),
                    count: Some(ps.count),
                    ..Default::default()
                })
                .collect(),
        };
        let mut changed = s.admission.as_ref() != Some(&admission);
        s.admission = Some(admission);
        let message = format!("Quota reserved in ClusterQueue {queue}");
        changed |= set(
            s,
            condition::QUOTA_RESERVED,
            ConditionStatus::True,
            reason::QUOTA_RESERVED,
            &message,
            now,
        );
        changed |= checks::add_missing(s, checks, now);
        changed |= checks::sync_admitted(s, now);
        changed |= clear_cost(s);
        for type_ in [condition::EVICTED, condition::PREEMPTED] {
            if is_true(s, type_) {
                changed |= set(
                    s,
                    type_,
                    ConditionStatus::False,
                    reason::QUOTA_RESERVED,
                    "Previously: evicted; quota reserved again",
                    now,
                );
            }
        }
        if find_condition(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED).is_some() {
            changed |= set(
                s,
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::False,
                reason::QUOTA_RESERVED,
                "Quota reserved",
                now,
            );
        }
        changed
    })
}

/// Could reserve quota by preempting, but a Closed gate forbids it. `cost` is what that
/// preemption would evict (`status.preemptionCost`, read by the manager's LeastDisruption
/// policy), written in the same update as the signal. The transition time of a True signal
/// stays put: it is the FCFS timestamp. One that said room was expected (another reason) is
/// a new signal, with a new time.
pub fn gated(
    workload: &Workload,
    message: &str,
    cost: PreemptionCost,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    signal(
        workload,
        (reason::PREEMPTION_GATED, message),
        |r| r == reason::ROOM_EXPECTED,
        cost,
        now,
    )
}

/// Will fit without eviction once workloads already stopping are gone, within `within`
/// seconds (a replica whose MultiKueue gate is Closed; DESIGN.md §3): `QuotaReservationBlocked`
/// True with reason `RoomExpected` (its transition time: since when), and a preemption cost
/// of no victims with `stopSeconds: within`. A `PreemptionGated` signal it replaces ends (a
/// later one starts anew, by its own time).
pub fn room_expected(
    workload: &Workload,
    message: &str,
    within: i64,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    let cost = PreemptionCost {
        victims: 0,
        highest_priority: 0,
        pods: 0,
        stop_seconds: Some(within.max(0)),
    };
    signal(
        workload,
        (reason::ROOM_EXPECTED, message),
        |r| r != reason::ROOM_EXPECTED,
        cost,
        now,
    )
}

/// Pending, with the `QuotaReservationBlocked` signal `(why, message)` and its cost. A True
/// signal whose reason `ends` is removed first, so that the new one starts with its own time.
fn signal(
    workload: &Workload,
    (why, message): (&str, &str),
    ends: impl Fn(&str) -> bool,
    cost: PreemptionCost,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let mut changed = set(
            s,
            condition::QUOTA_RESERVED,
            ConditionStatus::False,
            reason::PENDING,
            message,
            now,
        );
        let before = s.conditions.len();
        s.conditions.retain(|c| {
            !(c.type_ == condition::QUOTA_RESERVATION_BLOCKED
                && c.status == "True"
                && ends(&c.reason))
        });
        changed |= s.conditions.len() != before;
        changed |= set(
            s,
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::True,
            why,
            message,
            now,
        );
        changed |= s.preemption_cost != Some(cost);
        s.preemption_cost = Some(cost);
        changed
    })
}

/// No longer gated: the cost of a preemption that is not waiting any more goes away.
fn clear_cost(s: &mut WorkloadStatus) -> bool {
    s.preemption_cost.take().is_some()
}

/// Waiting for quota with a reason (does not fit, no victims, queue problems, preempting).
pub fn pending(
    workload: &Workload,
    why: &str,
    message: &str,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let mut changed = set(
            s,
            condition::QUOTA_RESERVED,
            ConditionStatus::False,
            why,
            message,
            now,
        );
        if is_true(s, condition::QUOTA_RESERVATION_BLOCKED) {
            changed |= set(
                s,
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::False,
                why,
                message,
                now,
            );
        }
        changed |= clear_cost(s);
        changed
    })
}

/// The baton holder gives the baton back (it cannot make room, `why`): its MultiKueue gate
/// back to Closed, `QuotaReservationBlocked=False` with the release reason (the manager reads
/// it: [`baton_core::ungate::view_of`]), pending with `message`, no preemption cost.
pub fn gave_back(
    workload: &Workload,
    why: ReleaseReason,
    message: &str,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let mut changed = set_gate_state(s, MULTIKUEUE_GATE, GateState::Closed, now);
        changed |= set(
            s,
            condition::QUOTA_RESERVED,
            ConditionStatus::False,
            reason::PENDING,
            message,
            now,
        );
        changed |= set(
            s,
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::False,
            why.as_str(),
            message,
            now,
        );
        changed |= clear_cost(s);
        changed
    })
}

/// A preemptor whose gate is open and whose victims are being evicted.
pub fn preempting(
    workload: &Workload,
    message: &str,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let changed = set(
            s,
            condition::QUOTA_RESERVED,
            ConditionStatus::False,
            reason::PENDING,
            message,
            now,
        );
        // Its gate is open: it is preempting, no longer gated.
        clear_cost(s) || changed
    })
}

/// The human cause of a preemption, for condition messages.
pub fn preemption_cause(why: PreemptReason) -> &'static str {
    match why {
        PreemptReason::InClusterQueue => "prioritization in the ClusterQueue",
        PreemptReason::InCohortReclamation => "reclamation within the cohort",
        PreemptReason::InCohortReclaimWhileBorrowing => {
            "reclamation within the cohort while borrowing"
        }
    }
}

/// Evicted to make room for `preemptor`: every gate back to Closed. A plain workload
/// releases its quota at once. A workload a Job controls keeps `status.admission` and
/// `QuotaReserved=True` (its quota stays counted) until the Job is suspended and its pods
/// are gone; the Job reconciler then writes [`released`].
pub fn evicted(
    workload: &Workload,
    preemptor: &WorkloadKey,
    why: PreemptReason,
    holding: Holding,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    let mut copy = workload.clone();
    close_all_gates(&mut copy, now);
    let base = copy.clone();
    let holds_quota_while_stopping = holding == Holding::UntilJobStops
        && crate::integrations::workload::held_until_stopped(workload);
    with_status(&base, now, |s, now| {
        let message = format!(
            "Preempted to accommodate workload {preemptor} due to {}",
            preemption_cause(why)
        );
        let mut changed = set(
            s,
            condition::EVICTED,
            ConditionStatus::True,
            reason::PREEMPTED,
            &message,
            now,
        );
        changed |= set(
            s,
            condition::PREEMPTED,
            ConditionStatus::True,
            why.as_str(),
            &message,
            now,
        );
        changed |= stop_or_release(
            s,
            holds_quota_while_stopping,
            reason::PREEMPTED,
            &PREEMPTED_RELEASE,
            now,
        );
        changed
    })
    .or_else(|| (copy.status != workload.status).then(|| copy.status.clone().unwrap_or_default()))
}

/// After an eviction: a workload that holds its quota while its Job stops keeps
/// `QuotaReserved` and its admission (only `Admitted` goes, with `why`); any other gives its
/// quota back now. Returns whether anything changed.
fn stop_or_release(
    s: &mut WorkloadStatus,
    holds_quota_while_stopping: bool,
    why: &str,
    release_why: &Release<'_>,
    now: DateTime<Utc>,
) -> bool {
    if !holds_quota_while_stopping {
        return release(s, release_why, now);
    }
    if !is_true(s, condition::ADMITTED) {
        return false;
    }
    set(
        s,
        condition::ADMITTED,
        ConditionStatus::False,
        why,
        &format!(
            "{}; waiting for the Job's pods to stop",
            release_why.message
        ),
        now,
    )
}

/// How long an evicted workload keeps its quota.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Holding {
    /// A Job's workload holds it until the Job is suspended and its pods are gone (a worker,
    /// where the pods run).
    #[default]
    UntilJobStops,
    /// Given back at once (the manager: the pods run on a worker, and the replica's removal
    /// is the worker's business).
    Never,
}

/// Why quota is given back: the reasons and messages of the conditions a release sets.
struct Release<'a> {
    message: &'a str,
    /// Back in its queue (`Requeued=True`), or not (deactivated).
    requeued: bool,
    requeued_reason: &'a str,
    requeued_message: &'a str,
}

const PREEMPTED_RELEASE: Release<'static> = Release {
    message: "Evicted: preempted",
    requeued: true,
    requeued_reason: reason::PREEMPTED,
    requeued_message: "Back in its queue after preemption",
};

const DEACTIVATED_RELEASE: Release<'static> = Release {
    message: "Evicted: the workload is deactivated",
    requeued: false,
    requeued_reason: DEACTIVATED,
    requeued_message: "Not queued while spec.active is false",
};

/// Kueue's eviction reason for a workload whose `spec.active` was set to false.
pub const DEACTIVATED: &str = "Deactivated";

/// `spec.active` set to false while it holds quota: evicted with reason `Deactivated` and not
/// queued again until it is reactivated. Like a preemption, a Job's workload on a worker
/// keeps its quota until its pods are gone.
pub fn deactivated(
    workload: &Workload,
    holding: Holding,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    let holds_quota_while_stopping = holding == Holding::UntilJobStops
        && crate::integrations::workload::held_until_stopped(workload);
    with_status(workload, now, |s, now| {
        let mut changed = set(
            s,
            condition::EVICTED,
            ConditionStatus::True,
            DEACTIVATED,
            "The workload is deactivated (spec.active is false)",
            now,
        );
        changed |= stop_or_release(
            s,
            holds_quota_while_stopping,
            DEACTIVATED,
            &DEACTIVATED_RELEASE,
            now,
        );
        changed
    })
}

/// An admission check set to `Retry` or `Rejected` (on the manager: the workload was evicted
/// or lost on its worker): evicted with reason `AdmissionCheck`, quota given back, checks
/// back to `Pending`, back in its queue.
pub fn evicted_by_check(
    workload: &Workload,
    check: &str,
    check_message: &str,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let message = if check_message.is_empty() {
            format!("At least one admission check is false: {check}")
        } else {
            format!("Admission check {check}: {check_message}")
        };
        let mut changed = set(
            s,
            condition::EVICTED,
            ConditionStatus::True,
            "AdmissionCheck",
            &message,
            now,
        );
        let text = format!("Evicted: {message}");
        changed |= release(
            s,
            &Release {
                message: &text,
                requeued: true,
                requeued_reason: "AdmissionCheck",
                requeued_message: "Back in its queue after an admission check asked for a retry",
            },
            now,
        );
        changed
    })
}

/// Quota given back: admission removed, `QuotaReserved=False`, `Admitted=False`, admission
/// checks back to `Pending`, no cluster (a MultiKueue workload is dispatched afresh), and back
/// in its queue (`Requeued=True`). Returns whether anything changed.
fn release(s: &mut WorkloadStatus, why: &Release<'_>, now: DateTime<Utc>) -> bool {
    let mut changed = s.admission.take().is_some();
    changed |= s.cluster_name.take().is_some();
    if !s.nominated_cluster_names.is_empty() {
        s.nominated_cluster_names.clear();
        changed = true;
    }
    changed |= checks::reset(s, now);
    changed |= set(
        s,
        condition::QUOTA_RESERVED,
        ConditionStatus::False,
        reason::PENDING,
        why.message,
        now,
    );
    changed |= set(
        s,
        condition::ADMITTED,
        ConditionStatus::False,
        reason::PENDING,
        why.message,
        now,
    );
    changed |= set(
        s,
        condition::REQUEUED,
        ConditionStatus::from_bool(why.requeued),
        why.requeued_reason,
        why.requeued_message,
        now,
    );
    changed
}

/// An evicted Job's workload whose Job is suspended and has no pods left: its quota is
/// released (as [`evicted`] does at once for a plain workload).
pub fn released(workload: &Workload, now: DateTime<Utc>) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| release(s, &PREEMPTED_RELEASE, now))
}

/// The Job finished (`Complete` or `Failed`): `Finished=True` with the reason `Succeeded`
/// or `Failed` and the Job condition's message. A finished workload holds no quota.
pub fn finished(
    workload: &Workload,
    succeeded: bool,
    message: &str,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    with_status(workload, now, |s, now| {
        let why = if succeeded { "Succeeded" } else { "Failed" };
        set(
            s,
            condition::FINISHED,
            ConditionStatus::True,
            why,
            message,
            now,
        )
    })
}

#[cfg(test)]
pub(crate) mod tests;
