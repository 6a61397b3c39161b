use std::collections::BTreeMap;

use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{
    Admission, PodSet, PreemptionCost, PriorityClassKind, PriorityClassRef, WorkloadStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::manager::plan::replica::build_replica;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("time")
}

fn manager() -> Workload {
    let mut wl = Workload::new(
        "job",
        WorkloadSpec {
            queue_name: Some("user-queue".into()),
            pod_sets: vec![PodSet {
                name: "main".into(),
                count: 1,
                ..Default::default()
            }],
            ..Default::default()
        },
    );
    wl.metadata.namespace = Some("team".into());
    wl
}

/// The manager's workload as a gated replica, no priority resolved.
fn gated_replica() -> Workload {
    build_replica(
        &manager(),
        None,
        "mk",
        baton_core::ungate::ReplicaGating::Gated,
    )
}

fn with_condition(mut wl: Workload, type_: &str, reason: &str, secs: i64) -> Workload {
    let status = wl.status.get_or_insert_with(Default::default);
    set_condition(
        &mut status.conditions,
        NewCondition::new(type_, ConditionStatus::True, reason, "a long human message"),
        at(secs),
    );
    wl
}

fn sync(m: &Workload, r: &Workload) -> bool {
    in_sync(&SpecDigest::of(&m.spec), &CachedReplica::compact(r))
}

fn priority_sync(m: &Workload, r: &Workload) -> bool {
    priority_in_sync(&SpecDigest::of(&m.spec), &CachedReplica::compact(r))
}

#[test]
fn sync_ignores_gates_and_a_worker_filled_priority() {
    let m = manager();
    let mut replica = build_replica(&m, None, "mk", baton_core::ungate::ReplicaGating::Gated);
    assert!(sync(&m, &replica) && priority_sync(&m, &replica));
    replica.spec.priority = Some(100);
    assert!(sync(&m, &replica) && priority_sync(&m, &replica));
    replica.spec.queue_name = Some("other".into());
    assert!(!sync(&m, &replica));
    let mut with_priority = m.clone();
    with_priority.spec.priority = Some(5);
    let mut replica = build_replica(
        &with_priority,
        None,
        "mk",
        baton_core::ungate::ReplicaGating::Gated,
    );
    assert!(sync(&with_priority, &replica) && priority_sync(&with_priority, &replica));
    // Another value: in sync otherwise, its priority is not (it is updated in place).
    replica.spec.priority = Some(6);
    assert!(sync(&with_priority, &replica));
    assert!(!priority_sync(&with_priority, &replica));
    replica.spec.priority = None;
    assert!(!priority_sync(&with_priority, &replica));
}

fn class(group: PriorityClassGroup, name: &str) -> Option<PriorityClassRef> {
    Some(PriorityClassRef {
        group,
        kind: match group {
            PriorityClassGroup::Kueue => PriorityClassKind::WorkloadPriorityClass,
            PriorityClassGroup::Scheduling => PriorityClassKind::PriorityClass,
        },
        name: name.into(),
    })
}

#[test]
fn a_resolved_priority_stands_in_only_where_the_spec_has_none() {
    let m = manager();
    let carried = CachedReplica::compact(&build_replica(
        &m,
        Some(100),
        "mk",
        baton_core::ungate::ReplicaGating::Gated,
    ));
    let resolved = SpecDigest::of(&m.spec).with_resolved_priority(Some(100));
    assert!(priority_in_sync(&resolved, &carried));
    let other = SpecDigest::of(&m.spec).with_resolved_priority(Some(5));
    assert!(!priority_in_sync(&other, &carried));
    let mut own = m.clone();
    own.spec.priority = Some(7);
    let kept = SpecDigest::of(&own.spec).with_resolved_priority(Some(100));
    assert_eq!(kept, SpecDigest::of(&own.spec));
}

#[test]
fn a_class_change_is_updatable_in_place_only_between_workload_priority_classes() {
    let updatable = |from: Option<PriorityClassRef>, to: Option<PriorityClassRef>| {
        let mut m = manager();
        m.spec.priority_class_ref = from.map(Box::new);
        let replica = CachedReplica::compact(&build_replica(
            &m,
            Some(1),
            "mk",
            baton_core::ungate::ReplicaGating::Gated,
        ));
        m.spec.priority_class_ref = to.map(Box::new);
        m.spec.priority = Some(2);
        let expected = SpecDigest::of(&m.spec);
        assert!(in_sync(&expected, &replica));
        assert!(!priority_in_sync(&expected, &replica));
        priority_updatable(&expected, &replica)
    };
    let k = PriorityClassGroup::Kueue;
    let s = PriorityClassGroup::Scheduling;
    assert!(updatable(class(k, "high"), class(k, "low")));
    assert!(updatable(class(k, "high"), class(k, "high")));
    assert!(updatable(class(s, "high"), class(s, "high")));
    assert!(updatable(None, None));
    assert!(!updatable(class(s, "high"), class(s, "low")));
    assert!(!updatable(class(s, "high"), class(k, "high")));
    assert!(!updatable(None, class(k, "high")));
    assert!(!updatable(class(k, "high"), None));
}

#[test]
fn a_finish_out_of_sync_is_recorded_and_never_mirrored() {
    let full = with_condition(
        gated_replica(),
        condition::FINISHED,
        reason::OUT_OF_SYNC,
        10,
    );
    let replica = CachedReplica::compact(&full);
    assert!(replica.finished_out_of_sync());
    assert!(replica.mirrored().is_empty());
    let done = with_condition(gated_replica(), condition::FINISHED, "Succeeded", 10);
    let replica = CachedReplica::compact(&done);
    assert!(!replica.finished_out_of_sync());
    assert_eq!(replica.mirrored().len(), 1);
    assert!(replica.differs_beyond_version(&CachedReplica::compact(&full)));
}

#[test]
fn a_pod_template_change_is_seen_though_the_record_keeps_no_template() {
    let mut m = manager();
    let replica = CachedReplica::compact(&build_replica(
        &m,
        None,
        "mk",
        baton_core::ungate::ReplicaGating::Gated,
    ));
    assert!(in_sync(&SpecDigest::of(&m.spec), &replica));
    m.spec.pod_sets[0].template = m.spec.pod_sets[0]
        .template
        .modified(|t| {
            t.metadata = Some(ObjectMeta {
                labels: Some(BTreeMap::from([("new".to_string(), "label".to_string())])),
                ..Default::default()
            });
        })
        .expect("a template");
    assert!(!in_sync(&SpecDigest::of(&m.spec), &replica));
}

#[test]
fn a_pending_signalling_replica_is_read_as_the_ungating_rule_reads_it() {
    let mut full = gated_replica();
    full.metadata.uid = Some("u-1".into());
    full.metadata.resource_version = Some("7".into());
    full.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(REDISPATCH_ANNOTATION.into(), "2026-01-01T00:00:00Z".into());
    let mut full = with_condition(
        full,
        condition::QUOTA_RESERVATION_BLOCKED,
        "PreemptionGated",
        10,
    );
    full.status
        .get_or_insert_with(Default::default)
        .preemption_cost = Some(PreemptionCost {
        victims: 2,
        highest_priority: 5,
        pods: 4,
        stop_seconds: None,
    });
    let cached = CachedReplica::compact(&full);
    assert_eq!(cached.view("w1"), ungate::view_of("w1", &full));
    assert_eq!(cached.uid().as_deref(), Some("u-1"));
    assert_eq!(cached.resource_version().as_deref(), Some("7"));
    assert_eq!(cached.stamp(), Some("2026-01-01T00:00:00Z"));
    assert_eq!(cached.admitted_at(), None);
    assert_eq!(cached.evicted(), None);
    assert!(!cached.quota_reserved() && !cached.holds_quota());
    assert!(!cached.may_have_preempted());
    assert!(cached.mirrored().is_empty());
}

#[test]
fn an_admitted_then_evicted_winner_keeps_times_reasons_and_mirrored_conditions() {
    let full = gated_replica();
    let full = with_condition(full, condition::QUOTA_RESERVED, "QuotaReserved", 20);
    let full = with_condition(full, condition::ADMITTED, "Admitted", 21);
    let full = with_condition(full, condition::POD_READY, "PodsReady", 22);
    let admitted = CachedReplica::compact(&full);
    assert_eq!(admitted.admitted_at(), Some(at(21)));
    assert!(admitted.holds_quota() && admitted.may_have_preempted());
    assert_eq!(admitted.mirrored().len(), 1);
    assert_eq!(admitted.mirrored()[0].message, "a long human message");
    let evicted =
        CachedReplica::compact(&with_condition(full, condition::EVICTED, "Preempted", 30));
    assert_eq!(evicted.evicted(), Some("Preempted"));
    assert!(!evicted.holds_quota());
}

#[test]
fn an_admission_or_an_open_gate_means_it_may_have_preempted() {
    let mut full = gated_replica();
    full.status = Some(WorkloadStatus {
        admission: Some(Admission::default()),
        ..Default::default()
    });
    assert!(CachedReplica::compact(&full).may_have_preempted());
    let mut full = gated_replica();
    set_gate_state(
        full.status.get_or_insert_with(Default::default),
        MULTIKUEUE_GATE,
        GateState::Open,
        at(40),
    );
    let cached = CachedReplica::compact(&full);
    assert!(cached.may_have_preempted());
    assert_eq!(
        cached
            .clone()
            .with_open_time(at(50))
            .gate()
            .and_then(|g| g.since),
        Some(at(50))
    );
    let closed = CachedReplica::compact(&gated_replica());
    assert_eq!(
        closed.clone().with_open_time(at(50)),
        closed,
        "only an Open gate moves"
    );
}

#[test]
fn a_pending_replica_is_a_record_without_rare_parts() {
    let mut full = gated_replica();
    full.metadata.uid = Some("348f8e46-0c5c-4b77-8aff-aeab87be8b60".into());
    full.metadata.resource_version = Some("6138".into());
    let cached = CachedReplica::compact(&full);
    assert!(cached.rare.is_none());
    assert_eq!(
        cached.uid().as_deref(),
        Some("348f8e46-0c5c-4b77-8aff-aeab87be8b60")
    );
    assert_eq!(cached.resource_version().as_deref(), Some("6138"));
    let size = std::mem::size_of::<CachedReplica>();
    assert!(size <= 56, "{size} bytes");
}

#[test]
fn a_version_in_an_unusual_form_is_kept_but_moves_nothing_a_reader_sees() {
    let mut full = gated_replica();
    full.metadata.uid = Some("u-1".into());
    full.metadata.resource_version = Some("v1".into());
    let first = CachedReplica::compact(&full);
    full.metadata.resource_version = Some("v2".into());
    let second = CachedReplica::compact(&full);
    assert_eq!(first.resource_version().as_deref(), Some("v1"));
    assert_eq!(second.resource_version().as_deref(), Some("v2"));
    assert!(!first.differs_beyond_version(&second));
    full.metadata.uid = Some("u-2".into());
    assert!(first.differs_beyond_version(&CachedReplica::compact(&full)));
    full.metadata.resource_version = Some("7".into());
    let plain_version = CachedReplica::compact(&full);
    full.metadata.uid = Some("u-1".into());
    assert!(
        !first.differs_beyond_version(&CachedReplica::compact(&full)),
        "from text to a number is a version move too"
    );
    assert!(plain_version.differs_beyond_version(&first));
}

#[test]
fn every_signal_reason_is_read_back_as_the_ungating_rule_reads_it() {
    for reason in ["PreemptionGated", "RoomExpected", "SomethingElse", ""] {
        let full = with_condition(
            gated_replica(),
            condition::QUOTA_RESERVATION_BLOCKED,
            reason,
            10,
        );
        let cached = CachedReplica::compact(&full);
        assert_eq!(cached.view("w1"), ungate::view_of("w1", &full), "{reason}");
        let usual = matches!(reason, "PreemptionGated" | "RoomExpected");
        assert_eq!(cached.rare.is_none(), usual, "{reason}: kept as a tag");
    }
}
