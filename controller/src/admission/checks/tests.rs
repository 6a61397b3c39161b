use baton_crds::ClusterQueue;
use baton_crds::conditions::find_condition;
use baton_crds::constants::condition;
use baton_crds::workload::{Admission, CheckState, WorkloadStatus};
use chrono::{DateTime, Duration, TimeZone, Utc};

use super::*;

fn t0() -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default()
}

fn queue(rules: serde_json::Value) -> ClusterQueue {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"admissionChecksStrategy": {"admissionChecks": rules}}
    }))
    .unwrap()
}

fn reserved() -> WorkloadStatus {
    let mut s = WorkloadStatus {
        admission: Some(Admission {
            cluster_queue: "cq".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    set_condition(
        &mut s.conditions,
        NewCondition::new(
            condition::QUOTA_RESERVED,
            ConditionStatus::True,
            "QuotaReserved",
            "",
        ),
        t0(),
    );
    s
}

fn admitted(s: &WorkloadStatus) -> Option<(String, String)> {
    find_condition(&s.conditions, condition::ADMITTED).map(|c| (c.status.clone(), c.reason.clone()))
}

#[test]
fn checks_apply_to_every_flavor_unless_limited() {
    let cq = queue(serde_json::json!([
        {"name": "multikueue"},
        {"name": "prov", "onFlavors": ["gpu"]}
    ]));
    assert_eq!(checks_for(&cq, ["cpu"]), vec!["multikueue"]);
    assert_eq!(checks_for(&cq, ["cpu", "gpu"]), vec!["multikueue", "prov"]);
    let none: [&str; 0] = [];
    assert_eq!(checks_for(&cq, none), vec!["multikueue"]);
}

#[test]
fn a_queue_without_checks_has_none() {
    let cq: ClusterQueue = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cq"}, "spec": {}
    }))
    .unwrap();
    assert!(checks_for(&cq, ["cpu"]).is_empty());
}

#[test]
fn missing_checks_are_added_pending_and_existing_ones_kept() {
    let mut s = reserved();
    assert!(add_missing(&mut s, &["a".into()], t0()));
    s.admission_checks[0].state = CheckState::Ready;
    assert!(add_missing(&mut s, &["a".into(), "b".into()], t0()));
    let states: Vec<_> = s
        .admission_checks
        .iter()
        .map(|c| (c.name.as_str(), c.state))
        .collect();
    assert_eq!(
        states,
        vec![("a", CheckState::Ready), ("b", CheckState::Pending)]
    );
    assert!(!add_missing(&mut s, &["a".into(), "b".into()], t0()));
}

#[test]
fn reset_moves_every_check_back_to_pending_once() {
    let mut s = reserved();
    add_missing(&mut s, &["a".into(), "b".into()], t0());
    s.admission_checks[0].state = CheckState::Retry;
    let later = t0() + Duration::seconds(5);
    assert!(reset(&mut s, later));
    assert!(
        s.admission_checks
            .iter()
            .all(|c| c.state == CheckState::Pending)
    );
    assert_eq!(
        baton_crds::time::to_chrono(&s.admission_checks[0].last_transition_time),
        later
    );
    assert!(!reset(&mut s, later));
}

#[test]
fn reset_counts_a_retry_as_upstream_does() {
    let mut s = reserved();
    add_missing(&mut s, &["a".into(), "b".into()], t0());
    s.admission_checks[0].state = CheckState::Retry;
    s.admission_checks[1].state = CheckState::Ready;
    s.admission_checks[1].retry_count = Some(3);
    assert!(reset(&mut s, t0()));
    assert_eq!(s.admission_checks[0].retry_count, Some(1));
    assert_eq!(
        s.admission_checks[0].message,
        "Reset to Pending after eviction. Previously: Retry"
    );
    // A check that did not ask for the retry starts its count again.
    assert_eq!(s.admission_checks[1].retry_count, None);
    assert_eq!(
        s.admission_checks[1].message,
        "Reset to Pending after eviction. Previously: Ready"
    );
    s.admission_checks[0].state = CheckState::Retry;
    assert!(reset(&mut s, t0()));
    assert_eq!(s.admission_checks[0].retry_count, Some(2));
}

#[test]
fn a_reservation_with_every_check_ready_is_admitted() {
    let mut s = reserved();
    add_missing(&mut s, &["a".into()], t0());
    // Never admitted, and not yet: nothing to say (Kueue's SyncAdmittedCondition).
    assert!(!sync_admitted(&mut s, t0()));
    assert_eq!(admitted(&s), None);
    s.admission_checks[0].state = CheckState::Ready;
    assert!(sync_admitted(&mut s, t0()));
    assert_eq!(admitted(&s), Some(("True".into(), "Admitted".into())));
    assert!(!sync_admitted(&mut s, t0()));
}

#[test]
fn a_reservation_without_checks_is_admitted_at_once() {
    let mut s = reserved();
    assert!(sync_admitted(&mut s, t0()));
    assert_eq!(admitted(&s), Some(("True".into(), "Admitted".into())));
}

#[test]
fn a_check_leaving_ready_takes_admission_back() {
    let mut s = reserved();
    add_missing(&mut s, &["a".into()], t0());
    s.admission_checks[0].state = CheckState::Ready;
    sync_admitted(&mut s, t0());
    s.admission_checks[0].state = CheckState::Retry;
    assert!(sync_admitted(&mut s, t0()));
    assert_eq!(
        admitted(&s),
        Some(("False".into(), "UnsatisfiedChecks".into()))
    );
    assert_eq!(failing(&s).map(|c| c.name.as_str()), Some("a"));
}

#[test]
fn without_a_reservation_nothing_is_said_until_there_was_one() {
    let mut s = WorkloadStatus::default();
    assert!(!sync_admitted(&mut s, t0()));
    assert!(admitted(&s).is_none());
    assert!(!has_reservation(&s));
}

#[test]
fn losing_the_reservation_takes_admission_back_and_keeps_an_eviction_reason() {
    let mut s = reserved();
    sync_admitted(&mut s, t0());
    s.admission = None;
    assert!(sync_admitted(&mut s, t0()));
    assert_eq!(admitted(&s), Some(("False".into(), "NoReservation".into())));
    // An existing False (say, the eviction's) keeps its reason.
    set_condition(
        &mut s.conditions,
        NewCondition::new(
            condition::ADMITTED,
            ConditionStatus::False,
            "Pending",
            "Evicted",
        ),
        t0(),
    );
    assert!(!sync_admitted(&mut s, t0()));
    assert_eq!(admitted(&s), Some(("False".into(), "Pending".into())));
}

#[test]
fn no_reservation_and_unready_checks_have_their_own_reason() {
    let mut s = reserved();
    sync_admitted(&mut s, t0());
    add_missing(&mut s, &["a".into()], t0());
    s.admission = None;
    assert!(sync_admitted(&mut s, t0()));
    assert_eq!(
        admitted(&s),
        Some(("False".into(), "NoReservationUnsatisfiedChecks".into()))
    );
}
