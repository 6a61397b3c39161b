//! Admission checks, the Kueue way: a workload is `Admitted` when it holds a quota reservation
//! and every admission check of its ClusterQueue is `Ready`. A reservation adds the queue's
//! checks as `Pending`; a check set to `Retry` or `Rejected` evicts the workload (its quota is
//! given back, its checks start again from `Pending`). On a worker the queues usually have
//! no checks, so a reservation admits at once; on the manager the MultiKueue check turns
//! `Ready` when a worker admits the workload. Pure: status in, changed status out.

use baton_crds::ClusterQueue;
use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::time::to_kube;
use baton_crds::workload::{AdmissionCheckState, CheckState, WorkloadStatus};
use chrono::{DateTime, Utc};

/// The checks of `queue` that apply to a workload assigned `flavors`: a rule with
/// `onFlavors` applies only when one of them is assigned.
pub fn checks_for<'a>(
    queue: &ClusterQueue,
    flavors: impl IntoIterator<Item = &'a str> + Clone,
) -> Vec<String> {
    queue
        .spec
        .admission_checks_strategy
        .iter()
        .flat_map(|s| s.admission_checks.iter())
        .filter(|rule| {
            rule.on_flavors.is_empty()
                || flavors
                    .clone()
                    .into_iter()
                    .any(|f| rule.on_flavors.iter().any(|o| o == f))
        })
        .map(|rule| rule.name.clone())
        .collect()
}

/// Adds every check of `checks` that has no entry yet, as `Pending`. Returns whether anything
/// changed.
pub fn add_missing(status: &mut WorkloadStatus, checks: &[String], now: DateTime<Utc>) -> bool {
    let mut changed = false;
    for name in checks {
        if status.admission_checks.iter().any(|c| &c.name == name) {
            continue;
        }
        status.admission_checks.push(pending_entry(name, now));
        changed = true;
    }
    changed
}

fn pending_entry(name: &str, now: DateTime<Utc>) -> AdmissionCheckState {
    AdmissionCheckState {
        name: name.to_string(),
        state: CheckState::Pending,
        last_transition_time: to_kube(now),
        message: String::new(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: Vec::new(),
    }
}

/// Every check back to `Pending` (an eviction: the next reservation starts the checks
/// again), as upstream's `resetChecksOnEviction`: a check that asked for the retry counts it
/// in `retryCount`, and the message says what the check was. Returns whether anything
/// changed.
pub fn reset(status: &mut WorkloadStatus, now: DateTime<Utc>) -> bool {
    let mut changed = false;
    for check in &mut status.admission_checks {
        if check.state != CheckState::Pending {
            let previous = match check.state {
                CheckState::Pending => "Pending",
                CheckState::Ready => "Ready",
                CheckState::Retry => "Retry",
                CheckState::Rejected => "Rejected",
            };
            check.retry_count = match check.state {
                CheckState::Retry => Some(check.retry_count.unwrap_or(0).saturating_add(1)),
                _ => None,
            };
            check.message = format!("Reset to Pending after eviction. Previously: {previous}");
            check.state = CheckState::Pending;
            check.last_transition_time = to_kube(now);
            changed = true;
        }
    }
    changed
}

/// Whether the workload holds a quota reservation.
pub fn has_reservation(status: &WorkloadStatus) -> bool {
    status.admission.is_some()
        && find_condition(&status.conditions, condition::QUOTA_RESERVED)
            .is_some_and(|c| c.status == "True")
}

/// The first check that asks for the workload to be evicted (`Retry` or `Rejected`).
pub fn failing(status: &WorkloadStatus) -> Option<&AdmissionCheckState> {
    status
        .admission_checks
        .iter()
        .find(|c| matches!(c.state, CheckState::Retry | CheckState::Rejected))
}

/// Sets `Admitted` from the reservation and the checks, as Kueue's `SyncAdmittedCondition`
/// does: only when whether the workload should be admitted (a reservation, every check
/// `Ready`) differs from whether it is (`Admitted=True`), with Kueue's reasons. So a
/// workload never admitted gets no condition while its checks are pending (a manager
/// Workload waiting for its replicas says so in its MultiKueue check), and an existing
/// `False` keeps its reason (an eviction's says more than ours). Returns whether it changed.
pub fn sync_admitted(status: &mut WorkloadStatus, now: DateTime<Utc>) -> bool {
    let reserved = has_reservation(status);
    let ready = status
        .admission_checks
        .iter()
        .all(|c| c.state == CheckState::Ready);
    let is_admitted =
        find_condition(&status.conditions, condition::ADMITTED).is_some_and(|c| c.status == "True");
    if is_admitted == (reserved && ready) {
        return false;
    }
    let (value, why, message) = match (reserved, ready) {
        (true, true) => (
            ConditionStatus::True,
            reason::ADMITTED,
            "The workload is admitted",
        ),
        (true, false) => (
            ConditionStatus::False,
            "UnsatisfiedChecks",
            "The workload has not all admission checks ready",
        ),
        (false, true) => (
            ConditionStatus::False,
            "NoReservation",
            "The workload has no quota reservation",
        ),
        (false, false) => (
            ConditionStatus::False,
            "NoReservationUnsatisfiedChecks",
            "The workload has no quota reservation and not all admission checks ready",
        ),
    };
    set_condition(
        &mut status.conditions,
        NewCondition::new(condition::ADMITTED, value, why, message),
        now,
    )
}

#[cfg(test)]
mod tests;
