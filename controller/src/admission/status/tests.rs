use std::collections::BTreeMap;

use baton_crds::Workload;
use baton_crds::conditions::find_condition;
use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
use baton_crds::gates::{gate_state, set_gate_state};
use baton_crds::workload::{GateState, PreemptionCost, PreemptionGate};
use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;
use baton_core::admission::assign::{Assignment, Mode, PodSetAssignment};

fn t0() -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default()
}

fn cost(victims: i32) -> PreemptionCost {
    PreemptionCost {
        victims,
        highest_priority: 10,
        pods: 2 * i64::from(victims),
        stop_seconds: None,
    }
}

fn cost_of(w: &Workload) -> Option<PreemptionCost> {
    w.status.as_ref().and_then(|s| s.preemption_cost)
}

fn gated_workload() -> Workload {
    let mut w: Workload = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}
    }))
    .unwrap();
    w.spec.preemption_gates = vec![PreemptionGate {
        name: MULTIKUEUE_GATE.to_string(),
    }];
    w
}

/// A fitting one-pod assignment of 1.5 CPUs of flavor `default` (also used by `writes`).
pub(crate) fn assignment() -> Assignment {
    Assignment {
        mode: Mode::Fit,
        borrowing: false,
        pod_sets: vec![PodSetAssignment {
            name: "main".into(),
            count: 1,
            flavors: BTreeMap::from([("cpu".to_string(), "default".to_string())]),
            usage: BTreeMap::from([("cpu".to_string(), 1500)]),
        }],
        usage: Vec::new(),
        short: Vec::new(),
        reasons: Vec::new(),
        no_fit: None,
    }
}

fn status_of(w: &Workload, s: Option<WorkloadStatus>) -> Workload {
    let mut w = w.clone();
    w.status = Some(s.expect("a change"));
    w
}

fn cond<'a>(
    w: &'a Workload,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    find_condition(&w.status.as_ref().unwrap().conditions, type_).expect(type_)
}

#[test]
fn any_write_initialises_missing_gate_entries_closed() {
    let w = gated_workload();
    let w = status_of(&w, pending(&w, reason::PENDING, "no quota", t0()));
    let entries = &w.status.as_ref().unwrap().preemption_gates;
    assert_eq!(entries.len(), 1);
    assert_eq!(gate_state(&w, MULTIKUEUE_GATE), Some(GateState::Closed));
}

#[test]
fn gated_keeps_its_transition_time_while_true() {
    let w = gated_workload();
    let w = status_of(&w, gated(&w, "needs 2 victims", cost(1), t0()));
    let blocked = cond(&w, condition::QUOTA_RESERVATION_BLOCKED);
    assert_eq!(blocked.status, "True");
    assert_eq!(blocked.reason, reason::PREEMPTION_GATED);
    let later = t0() + Duration::seconds(30);
    let w = status_of(&w, gated(&w, "needs 3 victims", cost(1), later));
    let blocked = cond(&w, condition::QUOTA_RESERVATION_BLOCKED);
    assert_eq!(blocked.message, "needs 3 victims");
    assert_eq!(
        baton_crds::time::to_chrono(&blocked.last_transition_time),
        t0()
    );
    // Same decision again: nothing to write.
    assert!(gated(&w, "needs 3 victims", cost(1), later).is_none());
}

#[test]
fn admission_writes_the_assignment_and_clears_the_block() {
    let w = gated_workload();
    let w = status_of(&w, gated(&w, "needs 1 victim", cost(1), t0()));
    let w = status_of(&w, admitted(&w, "cq", &assignment(), &[], t0()));
    let status = w.status.as_ref().unwrap();
    let admission = status.admission.as_ref().unwrap();
    assert_eq!(admission.cluster_queue, "cq");
    assert_eq!(
        admission.pod_set_assignments[0]
            .flavors
            .get("cpu")
            .expect("cpu flavor")
            .0,
        "default"
    );
    assert_eq!(
        admission.pod_set_assignments[0]
            .resource_usage
            .get("cpu")
            .expect("cpu usage")
            .0,
        "1500m"
    );
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "True");
    assert_eq!(cond(&w, condition::ADMITTED).status, "True");
    assert_eq!(
        cond(&w, condition::QUOTA_RESERVATION_BLOCKED).status,
        "False"
    );
    assert!(admitted(&w, "cq", &assignment(), &[], t0()).is_none());
}

#[test]
fn eviction_releases_quota_and_closes_every_gate() {
    let mut w = gated_workload();
    w = status_of(&w, admitted(&w, "cq", &assignment(), &[], t0()));
    if let Some(s) = w.status.as_mut() {
        set_gate_state(s, MULTIKUEUE_GATE, GateState::Open, t0());
    }
    let w = status_of(
        &w,
        evicted(
            &w,
            &"ns/boss".parse().unwrap(),
            PreemptReason::InCohortReclamation,
            Holding::UntilJobStops,
            t0(),
        ),
    );
    assert!(w.status.as_ref().unwrap().admission.is_none());
    assert_eq!(gate_state(&w, MULTIKUEUE_GATE), Some(GateState::Closed));
    let evicted_cond = cond(&w, condition::EVICTED);
    assert_eq!(
        (evicted_cond.status.as_str(), evicted_cond.reason.as_str()),
        ("True", reason::PREEMPTED)
    );
    assert!(evicted_cond.message.contains("ns/boss"));
    assert_eq!(cond(&w, condition::PREEMPTED).reason, "InCohortReclamation");
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "False");
    // Re-admission marks the old eviction as over.
    let w = status_of(&w, admitted(&w, "cq", &assignment(), &[], t0()));
    assert_eq!(cond(&w, condition::EVICTED).status, "False");
}

#[test]
fn pending_lifts_a_stale_block() {
    let w = gated_workload();
    let w = status_of(&w, gated(&w, "needs 1 victim", cost(1), t0()));
    let w = status_of(
        &w,
        pending(&w, reason::PENDING, "no victims any more", t0()),
    );
    assert_eq!(
        cond(&w, condition::QUOTA_RESERVATION_BLOCKED).status,
        "False"
    );
}

/// An admitted workload controlled by Job `ns/j`.
fn admitted_job_workload() -> Workload {
    let mut w = gated_workload();
    w.spec.preemption_gates.clear();
    w.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "j".into(),
            uid: "uid-j".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        },
    ]);
    status_of(&w, admitted(&w, "cq", &assignment(), &[], t0()))
}

#[test]
fn a_jobs_workload_keeps_its_quota_when_evicted_until_released() {
    let w = admitted_job_workload();
    let later = t0() + Duration::seconds(5);
    let w = status_of(
        &w,
        evicted(
            &w,
            &"ns/boss".parse().unwrap(),
            PreemptReason::InClusterQueue,
            Holding::UntilJobStops,
            later,
        ),
    );
    assert!(
        w.status.as_ref().unwrap().admission.is_some(),
        "admission kept"
    );
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "True");
    assert_eq!(cond(&w, condition::EVICTED).status, "True");
    assert_eq!(cond(&w, condition::PREEMPTED).reason, "InClusterQueue");
    assert_eq!(cond(&w, condition::ADMITTED).status, "False");
    assert!(find_condition(&w.status.as_ref().unwrap().conditions, condition::REQUEUED).is_none());
    // The retried eviction of a preemptor still waiting changes nothing.
    assert!(
        evicted(
            &w,
            &"ns/boss".parse().unwrap(),
            PreemptReason::InClusterQueue,
            Holding::UntilJobStops,
            later
        )
        .is_none()
    );

    let w = status_of(&w, released(&w, later));
    assert!(w.status.as_ref().unwrap().admission.is_none());
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "False");
    assert_eq!(cond(&w, condition::ADMITTED).status, "False");
    assert_eq!(cond(&w, condition::REQUEUED).status, "True");
    assert_eq!(
        cond(&w, condition::EVICTED).status,
        "True",
        "still says why"
    );
    assert!(released(&w, later).is_none());
}

#[test]
fn finished_records_the_jobs_outcome() {
    let w = admitted_job_workload();
    let done = status_of(&w, finished(&w, true, "Job completed", t0()));
    let c = cond(&done, condition::FINISHED);
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("True", "Succeeded", "Job completed")
    );
    assert!(finished(&done, true, "Job completed", t0()).is_none());
    let failed = status_of(&w, finished(&w, false, "BackoffLimitExceeded", t0()));
    assert_eq!(cond(&failed, condition::FINISHED).reason, "Failed");
}

#[test]
fn gated_writes_the_cost_with_the_signal_and_updates_it() {
    let w = gated_workload();
    let w = status_of(&w, gated(&w, "needs 1 victim", cost(1), t0()));
    assert_eq!(cost_of(&w), Some(cost(1)));
    // Same message, different victim set: the cost alone makes a write.
    let w = status_of(&w, gated(&w, "needs 1 victim", cost(2), t0()));
    assert_eq!(cost_of(&w), Some(cost(2)));
    assert!(gated(&w, "needs 1 victim", cost(2), t0()).is_none());
}

#[test]
fn the_cost_goes_when_no_longer_gated() {
    let w = gated_workload();
    let w = status_of(&w, gated(&w, "needs 1 victim", cost(1), t0()));
    let admitted_w = status_of(&w, admitted(&w, "cq", &assignment(), &[], t0()));
    assert_eq!(cost_of(&admitted_w), None);
    let pending_w = status_of(&w, pending(&w, reason::PENDING, "no victims", t0()));
    assert_eq!(cost_of(&pending_w), None);
    // Its gate opened: preempting, no longer gated (even with the same message).
    let message = cond(&w, condition::QUOTA_RESERVED).message.clone();
    let preempting_w = status_of(&w, preempting(&w, &message, t0()));
    assert_eq!(cost_of(&preempting_w), None);
    // The cost serializes camelCase, as documented.
    let json = serde_json::to_value(w.status.as_ref().unwrap()).unwrap();
    assert_eq!(
        json["preemptionCost"],
        serde_json::json!({"victims": 1, "highestPriority": 10, "pods": 2})
    );
}

#[test]
fn on_the_manager_a_jobs_workload_gives_its_quota_back_at_once() {
    let mut w = admitted_job_workload();
    w.status.as_mut().unwrap().cluster_name = Some("worker-1".into());
    let later = t0() + Duration::seconds(5);
    let w = status_of(
        &w,
        evicted(
            &w,
            &"ns/boss".parse().unwrap(),
            PreemptReason::InClusterQueue,
            Holding::Never,
            later,
        ),
    );
    let status = w.status.as_ref().unwrap();
    assert!(status.admission.is_none());
    assert_eq!(status.cluster_name, None, "dispatched afresh next time");
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "False");
    assert_eq!(cond(&w, condition::EVICTED).reason, "Preempted");
    assert_eq!(cond(&w, condition::REQUEUED).status, "True");
}

#[test]
fn a_reservation_waits_for_the_queues_checks_before_admitting() {
    let w = gated_workload();
    let w = status_of(
        &w,
        admitted(&w, "cq", &assignment(), &["multikueue".into()], t0()),
    );
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "True");
    // Not admitted yet, never was: no condition, as Kueue writes none.
    assert!(find_condition(&w.status.as_ref().unwrap().conditions, condition::ADMITTED).is_none());
    let checks = &w.status.as_ref().unwrap().admission_checks;
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].state, baton_crds::workload::CheckState::Pending);
}

#[test]
fn a_check_asking_for_a_retry_evicts_and_requeues() {
    let w = gated_workload();
    let mut w = status_of(
        &w,
        admitted(&w, "cq", &assignment(), &["multikueue".into()], t0()),
    );
    {
        let status = w.status.as_mut().unwrap();
        status.cluster_name = Some("worker-1".into());
        status.admission_checks[0].state = baton_crds::workload::CheckState::Retry;
    }
    let later = t0() + Duration::seconds(5);
    let w = status_of(
        &w,
        evicted_by_check(&w, "multikueue", "evicted on worker-1", later),
    );
    let status = w.status.as_ref().unwrap();
    assert!(status.admission.is_none() && status.cluster_name.is_none());
    assert_eq!(
        status.admission_checks[0].state,
        baton_crds::workload::CheckState::Pending
    );
    assert_eq!(cond(&w, condition::EVICTED).reason, "AdmissionCheck");
    assert!(
        cond(&w, condition::EVICTED)
            .message
            .contains("evicted on worker-1")
    );
    assert_eq!(cond(&w, condition::QUOTA_RESERVED).status, "False");
    assert_eq!(cond(&w, condition::REQUEUED).reason, "AdmissionCheck");
    assert!(evicted_by_check(&w, "multikueue", "evicted on worker-1", later).is_none());
}
