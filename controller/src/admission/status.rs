//! The workload status each decision writes. Pure: old object + decision + `now` → the new
//! status, or `None` when nothing would change (no write, no event).
//!
//! Every write also initialises missing gate entries as Closed (KEP-8303: a gate listed in
//! spec with no status entry is Closed; the entry makes that visible to users and peers).

use baton_crds::Workload;
use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::gates::{close_all_gates, initialize_gates};
use baton_crds::quantity::format_milli;
use baton_crds::workload::{
    Admission, FlavorName, PodSetAssignment, PreemptionCost, WorkloadStatus,
};
use chrono::{DateTime, Utc};

use super::core::assign::Assignment;
use super::core::preempt::PreemptReason;

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

/// Quota reserved with this assignment.
pub fn admitted(
    workload: &Workload,
    queue: &str,
    assignment: &Assignment,
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
        changed |= set(
            s,
            condition::ADMITTED,
            ConditionStatus::True,
            reason::ADMITTED,
            "The workload is admitted",
            now,
        );
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
/// policy), written in the same update as the signal.
pub fn gated(
    workload: &Workload,
    message: &str,
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
        // The transition time of a True condition stays put: it is the FCFS timestamp.
        changed |= set(
            s,
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::True,
            reason::PREEMPTION_GATED,
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
    preemptor: &str,
    why: PreemptReason,
    now: DateTime<Utc>,
) -> Option<WorkloadStatus> {
    let mut copy = workload.clone();
    close_all_gates(&mut copy, now);
    let base = copy.clone();
    let holds_quota_while_stopping = crate::jobs::controlling_job(workload).is_some();
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
        if holds_quota_while_stopping {
            // Still holding quota: QuotaReserved and the admission stay as they are.
            if is_true(s, condition::ADMITTED) {
                changed |= set(
                    s,
                    condition::ADMITTED,
                    ConditionStatus::False,
                    reason::PREEMPTED,
                    "Evicted: preempted; waiting for the Job's pods to stop",
                    now,
                );
            }
            return changed;
        }
        changed |= release(s, now);
        changed
    })
    .or_else(|| (copy.status != workload.status).then(|| copy.status.clone().unwrap_or_default()))
}

/// Quota given back: admission removed, `QuotaReserved=False`, `Admitted=False`, and back
/// in its queue (`Requeued=True`). Returns whether anything changed.
fn release(s: &mut WorkloadStatus, now: DateTime<Utc>) -> bool {
    let mut changed = s.admission.take().is_some();
    changed |= set(
        s,
        condition::QUOTA_RESERVED,
        ConditionStatus::False,
        reason::PENDING,
        "Evicted: preempted",
        now,
    );
    changed |= set(
        s,
        condition::ADMITTED,
        ConditionStatus::False,
        reason::PENDING,
        "Evicted: preempted",
        now,
    );
    changed |= set(
        s,
        condition::REQUEUED,
        ConditionStatus::True,
        reason::PREEMPTED,
        "Back in its queue after preemption",
        now,
    );
    changed
}

/// An evicted Job's workload whose Job is suspended and has no pods left: its quota is
/// released (as [`evicted`] does at once for a plain workload).
pub fn released(workload: &Workload, now: DateTime<Utc>) -> Option<WorkloadStatus> {
    with_status(workload, now, release)
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
