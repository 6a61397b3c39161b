//! What one scheduling decision writes: the Workload statuses (from `status`) and the event
//! that goes with each, with the wording users read in `kubectl describe`, and on each victim
//! of a preemption the record of its preemptor ([`PREEMPTED_BY_ANNOTATION`]). Pure; the shell
//! keeps its own memory of victims and counts metrics, then sends these.

use std::collections::HashMap;
use std::sync::Arc;

use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::{
    MULTIKUEUE_GATE, PREEMPTED_BY_ANNOTATION, RELEASE_ON_FAILURE_ANNOTATION, ReleaseReason,
    condition, reason,
};
use baton_crds::gates::gates;
use baton_crds::workload::{GateState, PreemptionCost, WorkloadStatus};
use baton_crds::{Workload, WorkloadKey};
use chrono::{DateTime, Utc};
use kube::runtime::events::EventType;

use super::checks;
use super::status::{self, Holding};
use baton_core::admission::assign::Assignment;
use baton_core::admission::cycle::{Decision, Outcome, VictimChoice};
use baton_core::admission::preempt::PreemptReason;

/// What the writes of one decision depend on besides the decision itself.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// The admission checks of the workload's ClusterQueue that apply to its assignment:
    /// `Admitted` waits for them.
    pub checks: Vec<String>,
    /// How long victims keep their quota.
    pub holding: Holding,
}

/// One status write, and the event published once it lands.
#[derive(Clone, Debug)]
pub struct Write {
    pub workload: Arc<Workload>,
    pub status: WorkloadStatus,
    /// An eviction by preemption whose victim does not name this preemptor yet: the shell
    /// sets the victim's [`PREEMPTED_BY_ANNOTATION`] to it before the status. A separate
    /// patch of the main resource, as a status write cannot change metadata.
    pub preempted_by: Option<WorkloadKey>,
    pub event: Option<(EventType, &'static str, String)>,
}

impl Write {
    /// A write of `status` to `target`, with its event.
    pub fn new(
        target: &Arc<Workload>,
        status: WorkloadStatus,
        event: Option<(EventType, &'static str, String)>,
    ) -> Self {
        Write {
            workload: target.clone(),
            status,
            preempted_by: None,
            event,
        }
    }
}

/// The writes for `decision` about `workload`, pending in ClusterQueue `queue`. `by_key` finds
/// victims; `earlier_reasons` holds why each earlier victim was chosen (preemptor, victim),
/// so a retried eviction keeps its reason. Writes that would change nothing are left out.
pub fn writes_for(
    rules: &Rules,
    decision: &Decision,
    workload: &Arc<Workload>,
    queue: &str,
    by_key: &HashMap<WorkloadKey, Arc<Workload>>,
    earlier_reasons: &HashMap<(WorkloadKey, WorkloadKey), PreemptReason>,
    now: DateTime<Utc>,
) -> Vec<Write> {
    let wl = workload;
    match &decision.outcome {
        Outcome::Admit => decision
            .assignment
            .as_ref()
            .and_then(|assignment| admit_write(rules, wl, queue, assignment, now))
            .into_iter()
            .collect(),
        Outcome::Gated {
            victims,
            summary,
            cost,
        } => gated_write(wl, queue, *victims, summary, *cost, now)
            .into_iter()
            .collect(),
        Outcome::Preempt { victims, summary } => {
            preempt_writes(rules, decision, wl, queue, victims, summary, by_key, now)
        }
        Outcome::Waiting { victims } => {
            waiting_writes(rules, decision, wl, victims, by_key, earlier_reasons, now)
        }
        Outcome::Pending {
            message,
            gives_back: Some(why),
            ..
        } if holds_baton(wl) && release_asked(wl) => give_back_write(wl, *why, message, now)
            .into_iter()
            .collect(),
        Outcome::Pending {
            message,
            room_expected: Some(within),
            ..
        } => room_expected_write(wl, *within, message, now)
            .into_iter()
            .collect(),
        Outcome::Pending { message, .. } => pending_write(wl, message, now).into_iter().collect(),
    }
}

/// A write of `status` (if it changes) to `target`, with its event.
fn write(
    target: &Arc<Workload>,
    status: Option<WorkloadStatus>,
    event: Option<(EventType, &'static str, String)>,
) -> Option<Write> {
    status.map(|status| Write::new(target, status, event))
}

/// The eviction of `victim` for `preemptor` (its status, if it changes, and its event), with
/// the preemptor recorded on the victim unless it already is.
fn eviction(
    victim: &Arc<Workload>,
    preemptor: &WorkloadKey,
    status: Option<WorkloadStatus>,
    event: Option<(EventType, &'static str, String)>,
) -> Option<Write> {
    let recorded = victim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PREEMPTED_BY_ANNOTATION))
        .is_some_and(|value| value == preemptor.as_str());
    write(victim, status, event).map(|mut w| {
        w.preempted_by = (!recorded).then(|| preemptor.clone());
        w
    })
}

fn admit_write(
    rules: &Rules,
    wl: &Arc<Workload>,
    queue: &str,
    assignment: &Assignment,
    now: DateTime<Utc>,
) -> Option<Write> {
    let waited = wl
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| (now - baton_crds::time::to_chrono(t)).num_seconds())
        .unwrap_or(0);
    write(
        wl,
        status::admitted(wl, queue, assignment, &rules.checks, now),
        Some((
            EventType::Normal,
            "QuotaReserved",
            format!("Quota reserved in ClusterQueue {queue}, wait time since queued was {waited}s"),
        )),
    )
}

fn gated_write(
    wl: &Arc<Workload>,
    queue: &str,
    victims: usize,
    summary: &str,
    cost: PreemptionCost,
    now: DateTime<Utc>,
) -> Option<Write> {
    let closed: Vec<String> = gates(wl)
        .into_iter()
        .filter(|g| g.state == GateState::Closed)
        .map(|g| g.name)
        .collect();
    let message = format!(
        "The workload needs to preempt {victims} workload{} to reserve quota in ClusterQueue {queue} ({summary}), but preemption gate {} is Closed",
        if victims == 1 { "" } else { "s" },
        closed.join(", ")
    );
    // One event when it starts waiting, not one per cycle.
    let was_blocked = wl
        .status
        .as_ref()
        .is_some_and(|s| is_condition_true(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED));
    let event =
        (!was_blocked).then(|| (EventType::Normal, reason::PREEMPTION_GATED, message.clone()));
    write(wl, status::gated(wl, &message, cost, now), event)
}

#[allow(clippy::too_many_arguments)]
fn preempt_writes(
    rules: &Rules,
    decision: &Decision,
    wl: &Arc<Workload>,
    queue: &str,
    victims: &[VictimChoice],
    summary: &str,
    by_key: &HashMap<WorkloadKey, Arc<Workload>>,
    now: DateTime<Utc>,
) -> Vec<Write> {
    let mut writes: Vec<Write> = victims
        .iter()
        .filter_map(|victim| {
            let v = by_key.get(&victim.key)?;
            let message = format!(
                "Preempted to accommodate workload {} due to {}",
                decision.key,
                status::preemption_cause(victim.reason)
            );
            eviction(
                v,
                &decision.key,
                status::evicted(v, &decision.key, victim.reason, rules.holding, now),
                Some((EventType::Normal, "Preempted", message)),
            )
        })
        .collect();
    let names: Vec<&str> = victims.iter().map(|v| v.key.as_str()).collect();
    let message = format!(
        "Preempting {} to reserve quota in ClusterQueue {queue} ({summary})",
        names.join(", ")
    );
    writes.extend(write(
        wl,
        status::preempting(wl, &message, now),
        Some((EventType::Normal, "Preempting", message.clone())),
    ));
    writes
}

/// Evictions that did not land (a conflict) are tried again, with the same victims and
/// reasons; their events went out with the first attempt. One that landed (a Job's workload
/// stopping, still holding quota) is left as it is.
fn waiting_writes(
    rules: &Rules,
    decision: &Decision,
    wl: &Arc<Workload>,
    victims: &[WorkloadKey],
    by_key: &HashMap<WorkloadKey, Arc<Workload>>,
    earlier_reasons: &HashMap<(WorkloadKey, WorkloadKey), PreemptReason>,
    now: DateTime<Utc>,
) -> Vec<Write> {
    let mut writes: Vec<Write> = victims
        .iter()
        .filter_map(|key| {
            let v = by_key.get(key)?;
            let landed = v
                .status
                .as_ref()
                .is_some_and(|s| is_condition_true(&s.conditions, condition::EVICTED));
            if landed {
                return None;
            }
            let why = earlier_reasons
                .get(&(decision.key.clone(), key.clone()))
                .copied()
                .unwrap_or(PreemptReason::InClusterQueue);
            eviction(
                v,
                &decision.key,
                status::evicted(v, &decision.key, why, rules.holding, now),
                None,
            )
        })
        .collect();
    let message = format!(
        "Waiting for {} preempted workload(s) to release their quota",
        victims.len()
    );
    writes.extend(write(wl, status::preempting(wl, &message, now), None));
    writes
}

/// A replica holds the baton while the MultiKueue manager's gate on it is Open.
fn holds_baton(wl: &Workload) -> bool {
    gates(wl)
        .iter()
        .any(|g| g.name == MULTIKUEUE_GATE && g.state == GateState::Open)
}

/// The manager asked for release on failure on this replica
/// ([`RELEASE_ON_FAILURE_ANNOTATION`] `"true"`): without it (FCFS by default, upstream
/// managers) a holder keeps its Open gate until the manager's timeout, as KEP-8303 says.
fn release_asked(wl: &Workload) -> bool {
    wl.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RELEASE_ON_FAILURE_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// A replica whose gate is Closed will fit without evicting anyone once workloads already
/// stopping are gone, within `within` seconds (DESIGN.md §3, prefer admission without
/// preemption): `QuotaReservationBlocked=True` with reason `RoomExpected` and a preemption
/// cost of no victims whose `stopSeconds` is `within`. No event: it is no request, and it
/// changes as stopping workloads come and go.
fn room_expected_write(
    wl: &Arc<Workload>,
    within: i64,
    message: &str,
    now: DateTime<Utc>,
) -> Option<Write> {
    let note = format!("{message}; room expected without eviction within {within}s");
    write(wl, status::room_expected(wl, &note, within, now), None)
}

/// The baton holder cannot make room (DESIGN.md §3, release on failure): it gives the baton
/// back in one write — its MultiKueue gate Closed, `QuotaReservationBlocked=False` with the
/// reason — so the manager passes it on at once. It signals again, by a new signal time,
/// once it can preempt again.
fn give_back_write(
    wl: &Arc<Workload>,
    why: ReleaseReason,
    message: &str,
    now: DateTime<Utc>,
) -> Option<Write> {
    let note = format!(
        "gave the baton back ({why}): {message}; preemption gate {MULTIKUEUE_GATE} is Closed until the manager opens it again"
    );
    write(
        wl,
        status::gave_back(wl, why, message, now),
        Some((EventType::Normal, PREEMPTION_GATE_RELEASED, note)),
    )
}

/// The event reason of a baton given back, on the replica (worker) and on the manager
/// Workload.
pub const PREEMPTION_GATE_RELEASED: &str = "PreemptionGateReleased";

fn pending_write(wl: &Arc<Workload>, message: &str, now: DateTime<Utc>) -> Option<Write> {
    let before = wl
        .status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, condition::QUOTA_RESERVED))
        .map(|c| c.message.clone());
    let event = (before.as_deref() != Some(message))
        .then(|| (EventType::Normal, "Pending", message.to_string()));
    write(
        wl,
        status::pending(wl, reason::PENDING, message, now),
        event,
    )
}

/// The writes that keep workloads that hold quota in line with their spec and admission
/// checks, whatever the cycle decided: a deactivated workload (`spec.active: false`) is
/// evicted, a check set to `Retry` or `Rejected` evicts it and queues it again, and
/// `Admitted` follows the reservation and the checks (a check another controller set `Ready`
/// admits the workload). Finished and evicted workloads are left alone: a Job's evicted
/// workload may still hold its quota while it stops.
pub fn upkeep_writes(
    workloads: &[Arc<Workload>],
    holding: Holding,
    now: DateTime<Utc>,
) -> Vec<Write> {
    let mut writes = Vec::new();
    for wl in workloads {
        let Some(current) = wl.status.as_ref() else {
            continue;
        };
        if is_condition_true(&current.conditions, condition::FINISHED)
            || is_condition_true(&current.conditions, condition::EVICTED)
        {
            continue;
        }
        if checks::has_reservation(current) && !wl.spec.active {
            if let Some(status) = status::deactivated(wl, holding, now) {
                writes.push(Write::new(
                    wl,
                    status,
                    Some((
                        EventType::Normal,
                        "EvictedDueToDeactivated",
                        "Evicted: the workload is deactivated (spec.active is false)".into(),
                    )),
                ));
            }
            continue;
        }
        if checks::has_reservation(current)
            && let Some(check) = checks::failing(current)
        {
            if let Some(status) = status::evicted_by_check(wl, &check.name, &check.message, now) {
                let message = format!(
                    "Evicted: admission check {} is {:?}{}",
                    check.name,
                    check.state,
                    if check.message.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", check.message)
                    }
                );
                writes.push(Write::new(
                    wl,
                    status,
                    Some((EventType::Normal, "EvictedDueToAdmissionCheck", message)),
                ));
            }
            continue;
        }
        let mut status = current.clone();
        if checks::sync_admitted(&mut status, now) {
            writes.push(Write::new(wl, status, None));
        }
    }
    writes
}

#[cfg(test)]
mod tests;
