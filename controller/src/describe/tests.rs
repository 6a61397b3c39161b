use super::*;
use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::time::to_kube;
use baton_crds::workload::{AdmissionCheckState, BatonStatus, ReplicaBaton, WorkloadSpec};
use chrono::TimeZone;
use k8s_openapi::api::core::v1::{EventSeries, ObjectReference};

fn t(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 0)
        .single()
        .expect("valid time")
}

fn replica(cluster: &str, gate: GateState, signal: Option<i64>) -> ReplicaBaton {
    ReplicaBaton {
        cluster: cluster.into(),
        gate: Some(gate),
        signalling_since: signal.map(|s| to_kube(t(s))),
        position: None,
        admitted: false,
        removed: false,
    }
}

/// Dispatched to w1 and w2, both signalled, w1 holds the baton and w2 waits.
fn waiting() -> Workload {
    let mut wl = Workload::new(
        "job",
        WorkloadSpec {
            queue_name: Some("user-queue".into()),
            ..Default::default()
        },
    );
    wl.metadata.namespace = Some("team-a".into());
    wl.metadata.creation_timestamp = Some(to_kube(t(0)));
    let status = wl.status.get_or_insert_with(Default::default);
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::QUOTA_RESERVED,
            ConditionStatus::True,
            "QuotaReserved",
            "Quota reserved in ClusterQueue cq",
        ),
        t(1),
    );
    status.admission_checks.push(AdmissionCheckState {
        name: "mk".into(),
        state: CheckState::Pending,
        last_transition_time: to_kube(t(1)),
        message: "dispatched to w1, w2".into(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: vec![],
    });
    let mut w2 = replica("w2", GateState::Closed, Some(3));
    w2.position = Some(1);
    status.baton = Some(Box::new(BatonStatus {
        holder: Some("w1".into()),
        holder_since: Some(to_kube(t(4))),
        passes_after: Some(to_kube(t(35))),
        waiting: 1,
        replicas: vec![replica("w1", GateState::Open, Some(2)), w2],
    }));
    wl
}

fn event(reason: &str, action: &str, cluster: Option<&str>, at: i64, message: &str) -> Event {
    Event {
        reason: Some(reason.into()),
        action: Some(action.into()),
        message: Some(message.into()),
        first_timestamp: Some(to_kube(t(at))),
        related: cluster.map(|c| ObjectReference {
            name: Some(c.into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn kinds(story: &Story) -> Vec<(Kind, Option<&str>)> {
    story
        .timeline
        .iter()
        .map(|e| (e.kind, e.cluster.as_deref()))
        .collect()
}

#[test]
fn a_waiting_workload_tells_who_holds_the_baton_and_who_waits() {
    let story = story(&waiting(), &[]);
    assert_eq!(
        story.now,
        "w1 holds the baton; 1 waiting; it may pass after 2027-01-15T08:00:35Z"
    );
    assert_eq!(
        kinds(&story),
        vec![
            (Kind::Created, None),
            (Kind::QuotaReserved, None),
            (Kind::Dispatched, None),
            (Kind::Signalled, Some("w1")),
            (Kind::Signalled, Some("w2")),
            (Kind::GateOpened, Some("w1")),
        ]
    );
    let states: Vec<&str> = story.replicas.iter().map(|r| r.state).collect();
    assert_eq!(states, vec!["holds the baton", "waiting"]);
}

#[test]
fn events_tell_openings_passes_and_the_win_in_time_order() {
    let mut wl = waiting();
    let status = wl.status.get_or_insert_with(Default::default);
    status.cluster_name = Some("w2".into());
    set_condition(
        &mut status.conditions,
        NewCondition::new(condition::ADMITTED, ConditionStatus::True, "Admitted", ""),
        t(40),
    );
    status.admission_checks[0].state = CheckState::Ready;
    if let Some(b) = status.baton.as_mut() {
        b.holder = Some("w2".into());
        b.passes_after = None;
        b.waiting = 0;
        b.replicas[0].removed = true;
        b.replicas[1].admitted = true;
        b.replicas[1].position = None;
    }
    let mut passed = event(
        "PreemptionGateTimedOut",
        "PreemptionGateTimedOut",
        Some("w1"),
        35,
        "timed out",
    );
    passed.series = Some(EventSeries {
        count: Some(2),
        last_observed_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
    });
    let events = [
        event(
            "MultiKueue",
            "Admitted",
            Some("w2"),
            40,
            "The workload was admitted on \"w2\"",
        ),
        event(
            "PreemptionGateOpened",
            "OpenGate",
            Some("w1"),
            4,
            "opened on w1",
        ),
        passed,
        event(
            "PreemptionGateOpened",
            "OpenGate",
            Some("w2"),
            35,
            "opened on w2",
        ),
        event("Pending", "Pending", None, 0, "waiting for quota"),
    ];
    let story = story(&wl, &events);
    assert_eq!(story.now, "admitted on w2");
    assert_eq!(
        kinds(&story),
        vec![
            (Kind::Created, None),
            (Kind::Event, None),
            (Kind::QuotaReserved, None),
            (Kind::Dispatched, None),
            (Kind::Signalled, Some("w1")),
            (Kind::Signalled, Some("w2")),
            (Kind::GateOpened, Some("w1")),
            (Kind::BatonPassed, Some("w1")),
            (Kind::GateOpened, Some("w2")),
            (Kind::Admitted, Some("w2")),
            (Kind::ReplicaRemoved, Some("w1")),
        ]
    );
    assert_eq!(story.timeline[7].count, Some(2));
    assert_eq!(story.timeline[1].message, "Pending: waiting for quota");
    let states: Vec<&str> = story.replicas.iter().map(|r| r.state).collect();
    assert_eq!(states, vec!["removed", "admitted"]);

    let text = render_text(&story);
    assert!(text.contains("Now:       admitted on w2"), "{text}");
    assert!(text.contains("baton passed     timed out (x2)"), "{text}");
    assert!(
        text.contains("replica removed  removed: admitted on w2 first"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::to_value(&story).expect("json");
    assert_eq!(json["timeline"][7]["kind"], "batonPassed");
    assert_eq!(json["timeline"][3]["message"], "replicas on w1, w2");
    assert_eq!(json["replicas"][1]["state"], "admitted");
}

#[test]
fn the_summary_covers_every_standing() {
    let mut wl = waiting();
    let status = wl.status.get_or_insert_with(Default::default);
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::FINISHED,
            ConditionStatus::True,
            "Succeeded",
            "done",
        ),
        t(50),
    );
    status.cluster_name = Some("w1".into());
    let finished = story(&wl, &[]);
    assert_eq!(finished.now, "finished on w1");
    assert_eq!(
        finished.timeline.last().map(|e| e.kind),
        Some(Kind::Finished)
    );

    let mut pending = waiting();
    pending.status = None;
    assert_eq!(
        story_now(&pending),
        "pending on the manager: no quota reserved, no replica"
    );

    let mut no_holder = waiting();
    if let Some(b) = no_holder.status.as_mut().and_then(|s| s.baton.as_mut()) {
        b.holder = None;
        b.passes_after = None;
    }
    assert_eq!(story_now(&no_holder), "1 waiting for the baton");

    let mut quiet = waiting();
    if let Some(s) = quiet.status.as_mut() {
        s.baton = None;
        s.nominated_cluster_names = vec!["w1".to_string(), "w2".to_string()].into();
    }
    assert_eq!(story_now(&quiet), "dispatched to w1, w2");
    if let Some(s) = quiet.status.as_mut() {
        s.nominated_cluster_names.clear();
    }
    assert_eq!(story_now(&quiet), "dispatched");
    assert!(story(&quiet, &[]).replicas.is_empty());
}

fn story_now(wl: &Workload) -> String {
    story(wl, &[]).now
}

#[test]
fn event_reasons_map_to_kinds() {
    let kind = |reason: &str, action: &str| event_kind(&event(reason, action, None, 0, ""));
    assert_eq!(kind("PreemptionGateReleased", "x"), Kind::BatonPassed);
    assert_eq!(kind("ReplicaRemoved", "x"), Kind::ReplicaRemoved);
    assert_eq!(kind("MultiKueue", "EvictedOnWorker"), Kind::Redispatched);
    assert_eq!(kind("MultiKueue", "WorkerLost"), Kind::Redispatched);
    assert_eq!(kind("MultiKueue", "Other"), Kind::Event);
    assert_eq!(kind("Preempted", "x"), Kind::Evicted);
    assert_eq!(kind("QuotaReserved", "x"), Kind::QuotaReserved);
}

#[test]
fn event_times_fall_back_and_micro_times_convert() {
    let mut e = event("X", "X", None, 5, "m");
    e.first_timestamp = None;
    e.last_timestamp = Some(to_kube(t(7)));
    assert_eq!(event_entry(&e, Kind::Event).time, Some(t(7)));
    e.event_time = Some(MicroTime(
        k8s_openapi::jiff::Timestamp::from_nanosecond(
            i128::from(t(9).timestamp()) * 1_000_000_000 + 700_000_000,
        )
        .expect("valid"),
    ));
    assert_eq!(
        event_entry(&e, Kind::Event).time,
        Some(t(9)),
        "whole seconds, as the rest of the story"
    );
    e.count = Some(3);
    assert_eq!(event_entry(&e, Kind::Event).count, Some(3));
    assert_eq!(stamp(None), "-");
}
