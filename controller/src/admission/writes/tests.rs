use std::collections::HashMap;
use std::sync::Arc;

use baton_crds::Workload;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
use baton_crds::workload::{PreemptionCost, PreemptionGate};
use chrono::{DateTime, Duration, TimeZone, Utc};
use kube::runtime::events::EventType;

use super::*;
use crate::admission::status::Holding;
use crate::admission::status::tests::assignment;
use baton_core::admission::assign::Assignment;
use baton_core::admission::cycle::VictimChoice;

fn key(text: &str) -> WorkloadKey {
    text.parse().unwrap()
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn workload(name: &str) -> Arc<Workload> {
    let mut w: Workload = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"containers": []}}}]}
    }))
    .unwrap();
    w.spec.preemption_gates = vec![PreemptionGate {
        name: MULTIKUEUE_GATE.to_string(),
    }];
    Arc::new(w)
}

/// `w` after `write` landed.
fn after(w: &Arc<Workload>, write: &Write) -> Arc<Workload> {
    let mut next = w.as_ref().clone();
    next.status = Some(write.status.clone());
    Arc::new(next)
}

fn decision(outcome: Outcome, assignment: Option<Assignment>) -> Decision {
    Decision {
        key: key("ns/high"),
        outcome,
        assignment,
        set_aside: false,
    }
}

fn no_victims() -> HashMap<WorkloadKey, Arc<Workload>> {
    HashMap::new()
}

fn event(write: &Write) -> Option<(&'static str, &str)> {
    write.event.as_ref().map(|(type_, why, note)| {
        assert_eq!(*type_, EventType::Normal);
        (*why, note.as_str())
    })
}

#[test]
fn an_admission_reserves_quota_and_says_how_long_it_waited() {
    let high = workload("high");
    let writes = writes_for(
        &Rules::default(),
        &decision(Outcome::Admit, Some(assignment())),
        &high,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0() + Duration::seconds(42),
    );
    assert_eq!(writes.len(), 1);
    let admitted = after(&high, &writes[0]);
    let conditions = &admitted.status.as_ref().unwrap().conditions;
    assert!(is_condition_true(conditions, condition::QUOTA_RESERVED));
    assert_eq!(
        event(&writes[0]),
        Some((
            "QuotaReserved",
            "Quota reserved in ClusterQueue cq, wait time since queued was 42s"
        ))
    );
}

#[test]
fn an_admission_without_an_assignment_writes_nothing() {
    let writes = writes_for(
        &Rules::default(),
        &decision(Outcome::Admit, None),
        &workload("high"),
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    assert!(writes.is_empty());
}

#[test]
fn a_gated_workload_names_its_closed_gate_and_tells_once() {
    let high = workload("high");
    let gated = decision(
        Outcome::Gated {
            victims: 2,
            summary: "2 of priority 0".into(),
            cost: PreemptionCost {
                victims: 2,
                highest_priority: 0,
                pods: 2,
                stop_seconds: None,
            },
        },
        None,
    );
    let first = writes_for(
        &Rules::default(),
        &gated,
        &high,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    let (why, note) = event(&first[0]).expect("an event when it starts waiting");
    assert_eq!(why, reason::PREEMPTION_GATED);
    // The cost travels in the same write as the signal.
    assert_eq!(
        first[0].status.preemption_cost,
        Some(PreemptionCost {
            victims: 2,
            highest_priority: 0,
            pods: 2,
            stop_seconds: None,
        })
    );
    assert_eq!(
        note,
        format!(
            "The workload needs to preempt 2 workloads to reserve quota in ClusterQueue cq (2 of priority 0), but preemption gate {MULTIKUEUE_GATE} is Closed"
        )
    );
    let waiting = after(&high, &first[0]);
    let again = writes_for(
        &Rules::default(),
        &decision(
            Outcome::Gated {
                victims: 1,
                summary: "1 of priority 0".into(),
                cost: PreemptionCost {
                    victims: 1,
                    highest_priority: 0,
                    pods: 1,
                    stop_seconds: None,
                },
            },
            None,
        ),
        &waiting,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0() + Duration::seconds(5),
    );
    assert_eq!(again.len(), 1, "the message changed: a write");
    assert!(again[0].event.is_none(), "but no second event");
    assert!(
        again[0]
            .status
            .conditions
            .iter()
            .any(|c| c.message.contains("1 workload to"))
    );
}

#[test]
fn a_preemption_evicts_each_victim_with_its_reason_and_tells_both_sides() {
    let (high, low1, low2) = (workload("high"), workload("low-1"), workload("low-2"));
    let by_key = HashMap::from([
        (key("ns/low-1"), low1.clone()),
        (key("ns/low-2"), low2.clone()),
    ]);
    let preempt = decision(
        Outcome::Preempt {
            victims: vec![
                VictimChoice {
                    key: key("ns/low-1"),
                    reason: PreemptReason::InClusterQueue,
                },
                VictimChoice {
                    key: key("ns/low-2"),
                    reason: PreemptReason::InCohortReclamation,
                },
                // Gone meanwhile: nothing to write.
                VictimChoice {
                    key: key("ns/low-3"),
                    reason: PreemptReason::InClusterQueue,
                },
            ],
            summary: "lowest priority first".into(),
        },
        Some(assignment()),
    );
    let writes = writes_for(
        &Rules::default(),
        &preempt,
        &high,
        "cq",
        &by_key,
        &HashMap::new(),
        t0(),
    );
    let targets: Vec<String> = writes
        .iter()
        .map(|w| w.workload.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(targets, vec!["low-1", "low-2", "high"]);
    // Each victim records its preemptor; the preemptor's own write records nothing.
    let recorded: Vec<Option<&str>> = writes
        .iter()
        .map(|w| w.preempted_by.as_ref().map(WorkloadKey::as_str))
        .collect();
    assert_eq!(recorded, vec![Some("ns/high"), Some("ns/high"), None]);
    let reasons: Vec<String> = writes[..2]
        .iter()
        .map(|w| {
            find_condition(&w.status.conditions, condition::PREEMPTED)
                .map(|c| c.reason.clone())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(reasons, vec!["InClusterQueue", "InCohortReclamation"]);
    let (why, note) = event(&writes[0]).unwrap();
    assert_eq!(why, "Preempted");
    assert!(
        note.starts_with("Preempted to accommodate workload ns/high due to"),
        "{note}"
    );
    assert_eq!(
        event(&writes[2]),
        Some((
            "Preempting",
            "Preempting ns/low-1, ns/low-2, ns/low-3 to reserve quota in ClusterQueue cq (lowest priority first)"
        ))
    );
}

#[test]
fn waiting_retries_evictions_with_their_first_reason_and_no_new_events() {
    let (high, low) = (workload("high"), workload("low-1"));
    let by_key = HashMap::from([(key("ns/low-1"), low.clone())]);
    let reasons = HashMap::from([(
        (key("ns/high"), key("ns/low-1")),
        PreemptReason::InCohortReclaimWhileBorrowing,
    )]);
    let writes = writes_for(
        &Rules::default(),
        &decision(
            Outcome::Waiting {
                victims: vec![key("ns/low-1")],
            },
            None,
        ),
        &high,
        "cq",
        &by_key,
        &reasons,
        t0(),
    );
    assert_eq!(writes.len(), 2);
    assert!(writes.iter().all(|w| w.event.is_none()));
    assert_eq!(writes[0].preempted_by, Some(key("ns/high")));
    assert_eq!(writes[1].preempted_by, None);
    let preempted = find_condition(&writes[0].status.conditions, condition::PREEMPTED).unwrap();
    assert_eq!(preempted.reason, "InCohortReclaimWhileBorrowing");
    assert!(
        writes[1].status.conditions.iter().any(|c| c
            .message
            .contains("Waiting for 1 preempted workload(s) to release their quota")),
        "{:?}",
        writes[1].status
    );
}

#[test]
fn a_victim_that_already_names_its_preemptor_is_not_recorded_again() {
    let high = workload("high");
    let annotated = |value: &str| {
        let mut w = workload("low-1").as_ref().clone();
        w.metadata.annotations = Some(
            [(PREEMPTED_BY_ANNOTATION.to_string(), value.to_string())]
                .into_iter()
                .collect(),
        );
        Arc::new(w)
    };
    let waiting = decision(
        Outcome::Waiting {
            victims: vec![key("ns/low-1")],
        },
        None,
    );
    let recorded = |victim: Arc<Workload>| {
        let by_key = HashMap::from([(key("ns/low-1"), victim)]);
        let writes = writes_for(
            &Rules::default(),
            &waiting,
            &high,
            "cq",
            &by_key,
            &HashMap::new(),
            t0(),
        );
        assert_eq!(writes.len(), 2, "the eviction is still written");
        writes[0].preempted_by.clone()
    };
    // The record landed with an attempt whose status did not: only the status is written.
    assert_eq!(recorded(annotated("ns/high")), None);
    // A record of an earlier preemptor is replaced.
    assert_eq!(recorded(annotated("ns/earlier")), Some(key("ns/high")));
}

#[test]
fn a_pending_workload_is_told_only_when_the_reason_changes() {
    let high = workload("high");
    let pending = |message: &str| {
        decision(
            Outcome::Pending {
                message: message.into(),
                gives_back: None,
                room_expected: None,
            },
            None,
        )
    };
    let first = writes_for(
        &Rules::default(),
        &pending("no quota"),
        &high,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    assert_eq!(event(&first[0]), Some(("Pending", "no quota")));
    let waiting = after(&high, &first[0]);
    let same = writes_for(
        &Rules::default(),
        &pending("no quota"),
        &waiting,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    assert!(same.is_empty(), "nothing changed: no write, no event");
    let other = writes_for(
        &Rules::default(),
        &pending("still no quota"),
        &waiting,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    assert_eq!(event(&other[0]), Some(("Pending", "still no quota")));
}

#[test]
fn waiting_leaves_a_victim_whose_eviction_landed_alone() {
    // A Job's workload, evicted for cohort reclamation and still holding quota while its
    // pods stop; the preemptor (after a restart) no longer remembers why it was chosen.
    let high = workload("high");
    let stopping = workload("low-1");
    let first = writes_for(
        &Rules::default(),
        &decision(
            Outcome::Preempt {
                victims: vec![VictimChoice {
                    key: key("ns/low-1"),
                    reason: PreemptReason::InCohortReclamation,
                }],
                summary: String::new(),
            },
            None,
        ),
        &high,
        "cq",
        &HashMap::from([(key("ns/low-1"), stopping.clone())]),
        &HashMap::new(),
        t0(),
    );
    let stopping = after(&stopping, &first[0]);
    let writes = writes_for(
        &Rules::default(),
        &decision(
            Outcome::Waiting {
                victims: vec![key("ns/low-1")],
            },
            None,
        ),
        &high,
        "cq",
        &HashMap::from([(key("ns/low-1"), stopping)]),
        &HashMap::new(),
        t0() + Duration::seconds(1),
    );
    assert!(
        writes
            .iter()
            .all(|w| w.workload.metadata.name.as_deref() == Some("high")),
        "no write to the stopping victim: {writes:?}"
    );
}

/// `w` holding quota in `cq` with one check in `state`.
fn reserved_with_check(state: baton_crds::workload::CheckState) -> Arc<Workload> {
    let w = workload("mw");
    let status =
        crate::admission::status::admitted(&w, "cq", &assignment(), &["mk".into()], t0()).unwrap();
    let mut next = w.as_ref().clone();
    next.status = Some(status);
    next.status.as_mut().unwrap().admission_checks[0].state = state;
    Arc::new(next)
}

#[test]
fn upkeep_evicts_a_workload_whose_check_asks_for_a_retry() {
    let w = reserved_with_check(baton_crds::workload::CheckState::Retry);
    let writes = upkeep_writes(std::slice::from_ref(&w), Holding::Never, t0());
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0].status.admission, None);
    assert_eq!(
        event(&writes[0]).map(|(why, _)| why),
        Some("EvictedDueToAdmissionCheck")
    );
    // Once evicted it is left alone.
    let w = after(&w, &writes[0]);
    assert!(upkeep_writes(&[w], Holding::Never, t0()).is_empty());
}

#[test]
fn upkeep_admits_once_every_check_is_ready_and_only_once() {
    let pending = reserved_with_check(baton_crds::workload::CheckState::Pending);
    assert!(upkeep_writes(std::slice::from_ref(&pending), Holding::Never, t0()).is_empty());
    let ready = reserved_with_check(baton_crds::workload::CheckState::Ready);
    let writes = upkeep_writes(std::slice::from_ref(&ready), Holding::Never, t0());
    assert_eq!(writes.len(), 1);
    assert!(is_condition_true(
        &writes[0].status.conditions,
        condition::ADMITTED
    ));
    assert!(writes[0].event.is_none());
    assert!(upkeep_writes(&[after(&ready, &writes[0])], Holding::Never, t0()).is_empty());
}

#[test]
fn upkeep_leaves_finished_and_unstatused_workloads_alone() {
    let mut finished = reserved_with_check(baton_crds::workload::CheckState::Retry)
        .as_ref()
        .clone();
    baton_crds::conditions::set_condition(
        &mut finished.status.as_mut().unwrap().conditions,
        baton_crds::conditions::NewCondition::new(
            condition::FINISHED,
            baton_crds::conditions::ConditionStatus::True,
            "Succeeded",
            "",
        ),
        t0(),
    );
    assert!(
        upkeep_writes(
            &[Arc::new(finished), workload("fresh")],
            Holding::Never,
            t0()
        )
        .is_empty()
    );
}

#[test]
fn upkeep_evicts_a_deactivated_workload_without_queueing_it_again() {
    let mut w = reserved_with_check(baton_crds::workload::CheckState::Ready)
        .as_ref()
        .clone();
    w.spec.active = false;
    let w = Arc::new(w);
    let writes = upkeep_writes(std::slice::from_ref(&w), Holding::Never, t0());
    assert_eq!(writes.len(), 1);
    let status = &writes[0].status;
    assert!(status.admission.is_none());
    let evicted = find_condition(&status.conditions, condition::EVICTED).unwrap();
    assert_eq!(evicted.reason, "Deactivated");
    let requeued = find_condition(&status.conditions, condition::REQUEUED).unwrap();
    assert_eq!(requeued.status, "False");
    assert_eq!(
        event(&writes[0]).map(|(why, _)| why),
        Some("EvictedDueToDeactivated")
    );
    assert!(upkeep_writes(&[after(&w, &writes[0])], Holding::Never, t0()).is_empty());
}

/// `w` with its MultiKueue gate Open since `at` (the manager gave it the baton), made by a
/// manager that asks for release on failure.
fn holding_the_baton(w: &Arc<Workload>, at: DateTime<Utc>) -> Arc<Workload> {
    let mut next = holding_the_baton_kep(w, at).as_ref().clone();
    next.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            baton_crds::constants::RELEASE_ON_FAILURE_ANNOTATION.to_string(),
            "true".to_string(),
        );
    Arc::new(next)
}

/// The same from a manager that does not ask for releases (FCFS by default: KEP-8303).
fn holding_the_baton_kep(w: &Arc<Workload>, at: DateTime<Utc>) -> Arc<Workload> {
    let mut next = w.as_ref().clone();
    let status = next.status.get_or_insert_with(Default::default);
    baton_crds::gates::set_gate_state(status, MULTIKUEUE_GATE, GateState::Open, at);
    Arc::new(next)
}

fn failing(gives_back: Option<ReleaseReason>) -> Decision {
    decision(
        Outcome::Pending {
            message: "insufficient quota for cpu in flavor default".into(),
            gives_back,
            room_expected: None,
        },
        None,
    )
}

#[test]
fn a_holder_that_cannot_make_room_gives_the_baton_back_in_one_write() {
    let held = holding_the_baton(&workload("high"), t0());
    let now = t0() + Duration::seconds(7);
    let writes = writes_for(
        &Rules::default(),
        &failing(Some(ReleaseReason::Insufficient)),
        &held,
        "cq",
        &no_victims(),
        &HashMap::new(),
        now,
    );
    assert_eq!(writes.len(), 1);
    let w = &writes[0];
    let gate = w
        .status
        .preemption_gates
        .iter()
        .find(|g| g.name == MULTIKUEUE_GATE)
        .expect("the gate");
    assert_eq!(
        baton_crds::gates::gate_state(&after(&held, w), MULTIKUEUE_GATE),
        Some(GateState::Closed)
    );
    assert_eq!(baton_crds::time::to_chrono(&gate.last_transition_time), now);
    let blocked = find_condition(&w.status.conditions, condition::QUOTA_RESERVATION_BLOCKED)
        .expect("the signal");
    assert_eq!(blocked.status, "False");
    assert_eq!(blocked.reason, "PreemptionInsufficient");
    assert_eq!(w.status.preemption_cost, None);
    let (why, note) = event(w).expect("an event");
    assert_eq!(why, PREEMPTION_GATE_RELEASED);
    assert!(
        note.starts_with("gave the baton back (PreemptionInsufficient): "),
        "{note}"
    );
    // The manager reads it as a release.
    let view = baton_core::ungate::view_of("worker-1", &after(&held, w));
    assert_eq!(view.released, Some(ReleaseReason::Insufficient));
    // Once given back, the next cycle's same outcome is a plain pending write: the release
    // stays as written, no second event.
    let next = writes_for(
        &Rules::default(),
        &failing(Some(ReleaseReason::Insufficient)),
        &after(&held, w),
        "cq",
        &no_victims(),
        &HashMap::new(),
        now + Duration::seconds(1),
    );
    assert!(next.iter().all(|w| w.event.is_none()), "{next:?}");
    assert!(next.iter().all(|w| {
        find_condition(&w.status.conditions, condition::QUOTA_RESERVATION_BLOCKED)
            .is_some_and(|c| c.reason == "PreemptionInsufficient")
    }));
}

#[test]
fn a_workload_without_the_baton_or_only_waiting_gives_nothing_back() {
    // Closed gate: a plain pending write.
    let closed = workload("high");
    for w in writes_for(
        &Rules::default(),
        &failing(Some(ReleaseReason::NoCandidates)),
        &closed,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    ) {
        assert_eq!(
            baton_crds::gates::gate_state(&after(&closed, &w), MULTIKUEUE_GATE),
            Some(GateState::Closed)
        );
        assert!(
            w.event
                .as_ref()
                .is_none_or(|e| e.1 != PREEMPTION_GATE_RELEASED)
        );
    }
    // Open gate but nothing to give back (waiting for victims): the gate stays Open.
    let held = holding_the_baton(&workload("high"), t0());
    for w in writes_for(
        &Rules::default(),
        &failing(None),
        &held,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    ) {
        assert_eq!(
            baton_crds::gates::gate_state(&after(&held, &w), MULTIKUEUE_GATE),
            Some(GateState::Open)
        );
    }
}

#[test]
fn a_holder_not_asked_to_release_keeps_its_open_gate() {
    // FCFS by default (KEP-8303): the manager's timeout passes the baton on, not the worker.
    let held = holding_the_baton_kep(&workload("high"), t0());
    let writes = writes_for(
        &Rules::default(),
        &failing(Some(ReleaseReason::Insufficient)),
        &held,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0() + Duration::seconds(7),
    );
    for w in &writes {
        assert_eq!(
            baton_crds::gates::gate_state(&after(&held, w), MULTIKUEUE_GATE),
            Some(GateState::Open)
        );
        assert_ne!(event(w).map(|(why, _)| why), Some(PREEMPTION_GATE_RELEASED));
    }
    let view = baton_core::ungate::view_of("worker-1", &held);
    assert_eq!(view.released, None);
}

fn expecting_room(within: i64) -> Decision {
    decision(
        Outcome::Pending {
            message: "waiting for preempted workloads to release their quota".into(),
            gives_back: None,
            room_expected: Some(within),
        },
        None,
    )
}

#[test]
fn room_expected_without_eviction_is_told_to_the_manager_and_then_gives_way_to_a_signal() {
    let high = workload("high");
    let writes = writes_for(
        &Rules::default(),
        &expecting_room(12),
        &high,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0(),
    );
    assert_eq!(writes.len(), 1);
    let w = &writes[0];
    assert!(w.event.is_none());
    let blocked = find_condition(&w.status.conditions, condition::QUOTA_RESERVATION_BLOCKED)
        .expect("the signal");
    assert_eq!(
        (blocked.status.as_str(), blocked.reason.as_str()),
        ("True", reason::ROOM_EXPECTED)
    );
    assert_eq!(
        w.status
            .preemption_cost
            .map(|c| (c.victims, c.stop_seconds)),
        Some((0, Some(12)))
    );
    // The manager reads it as an expectation, not as a candidate.
    let expecting = after(&high, w);
    let view = baton_core::ungate::view_of("worker-1", &expecting);
    let signal = view.signal.expect("a signal");
    assert_eq!(signal.reason, reason::ROOM_EXPECTED);
    assert_eq!(signal.since, t0());
    // The same again changes nothing: no write.
    let again = writes_for(
        &Rules::default(),
        &expecting_room(12),
        &expecting,
        "cq",
        &no_victims(),
        &HashMap::new(),
        t0() + Duration::seconds(1),
    );
    assert!(again.is_empty(), "{again:?}");
    // Later the room went elsewhere and it must preempt: a PreemptionGated signal with its
    // own time (not the expectation's).
    let later = t0() + Duration::seconds(9);
    let gated = decision(
        Outcome::Gated {
            victims: 1,
            summary: "1 victim".into(),
            cost: PreemptionCost {
                victims: 1,
                highest_priority: 0,
                pods: 1,
                stop_seconds: Some(3),
            },
        },
        None,
    );
    let writes = writes_for(
        &Rules::default(),
        &gated,
        &expecting,
        "cq",
        &no_victims(),
        &HashMap::new(),
        later,
    );
    let signalled = after(&expecting, &writes[0]);
    let view = baton_core::ungate::view_of("worker-1", &signalled);
    let signal = view.signal.expect("a signal");
    assert_eq!(signal.reason, reason::PREEMPTION_GATED);
    assert_eq!(signal.since, later);
}
