use super::*;
use crate::manager::plan::replica::build_replica;
use baton_core::dispatch::Dispatcher;
use baton_core::ungate;
use baton_crds::constants::{MULTIKUEUE_GATE, reason};
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{
    Admission, GateState, PriorityClassGroup, PriorityClassKind, WorkloadSpec,
};
use chrono::TimeZone;

mod props;

fn t(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 0)
        .single()
        .expect("valid")
}

fn route() -> Route {
    Route {
        check: "mk".into(),
        config: "workers".into(),
        clusters: vec!["w1".into(), "w2".into(), "w3".into()],
    }
}

fn config() -> LifecycleConfig {
    LifecycleConfig {
        orchestrated: true,
        worker_lost_timeout: Duration::from_secs(900),
        preemption_timeout: Duration::from_secs(300),
        dispatcher: Dispatcher::default(),
        ungating_policy: Default::default(),
    }
}

fn active(names: &[&str]) -> Vec<ClusterView> {
    names
        .iter()
        .map(|n| ClusterView {
            name: n.to_string(),
            state: ClusterState::Active,
        })
        .collect()
}

fn manager() -> Workload {
    let mut wl = Workload::new(
        "job",
        WorkloadSpec {
            queue_name: Some("user-queue".into()),
            ..Default::default()
        },
    );
    wl.metadata.namespace = Some("default".into());
    wl.metadata.finalizers = Some(vec![FINALIZER.into()]);
    reserved(wl)
}

/// Quota reserved in the manager's ClusterQueue (manager-side quota): only then is a
/// workload dispatched.
fn reserved(mut wl: Workload) -> Workload {
    let status = wl.status.get_or_insert_with(Default::default);
    status.admission = Some(Admission {
        cluster_queue: "manager-cq".into(),
        pod_set_assignments: vec![],
    });
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::QUOTA_RESERVED,
            ConditionStatus::True,
            "QuotaReserved",
            "",
        ),
        t(0),
    );
    wl
}

fn replica(created: i64) -> Workload {
    let mut r = build_replica(
        &manager(),
        None,
        "multikueue",
        baton_core::ungate::ReplicaGating::Gated,
    );
    r.metadata.creation_timestamp = Some(to_kube(t(created)));
    r
}

fn with_conditions(mut r: Workload, conds: &[(&str, ConditionStatus, &str)], at: i64) -> Workload {
    let status = r.status.get_or_insert_with(Default::default);
    for (type_, value, why) in conds {
        set_condition(
            &mut status.conditions,
            NewCondition::new(*type_, *value, *why, ""),
            t(at),
        );
    }
    r
}

fn admitted(r: Workload, at: i64) -> Workload {
    let mut r = with_conditions(
        r,
        &[
            (
                condition::QUOTA_RESERVED,
                ConditionStatus::True,
                "QuotaReserved",
            ),
            (condition::ADMITTED, ConditionStatus::True, "Admitted"),
        ],
        at,
    );
    r.status.get_or_insert_with(Default::default).admission = Some(Admission {
        cluster_queue: "worker-cq".into(),
        pod_set_assignments: vec![],
    });
    r
}

fn signalling(r: Workload, at: i64) -> Workload {
    with_conditions(
        r,
        &[(
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::True,
            reason::PREEMPTION_GATED,
        )],
        at,
    )
}

fn run(
    wl: &Workload,
    clusters: &[ClusterView],
    replicas: &BTreeMap<String, Workload>,
    now: i64,
) -> Plan {
    run_with(wl, clusters, replicas, now, &config())
}

fn run_with(
    wl: &Workload,
    clusters: &[ClusterView],
    replicas: &BTreeMap<String, Workload>,
    now: i64,
    config: &LifecycleConfig,
) -> Plan {
    let route = route();
    plan(
        &Observation {
            workload: wl,
            route: Some(&route),
            clusters,
            replicas: &cached(replicas),
            priority: wl.spec.priority,
            view: Default::default(),
            now: t(now),
        },
        config,
    )
}

/// Replicas as the manager's cache holds them.
fn cached(replicas: &BTreeMap<String, Workload>) -> BTreeMap<String, CachedReplica> {
    replicas
        .iter()
        .map(|(c, r)| (c.clone(), CachedReplica::compact(r)))
        .collect()
}

fn with_status(mut wl: Workload, plan: &Plan) -> Workload {
    if let Some(status) = &plan.status {
        wl.status = Some(status.clone());
    }
    wl
}

fn deleted(plan: &Plan) -> Vec<&str> {
    plan.delete.iter().map(|d| d.cluster.as_str()).collect()
}

fn check_message(wl: &Workload) -> String {
    wl.status
        .as_ref()
        .and_then(|s| s.admission_checks.iter().find(|c| c.name == "mk"))
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

fn check_state(wl: &Workload) -> Option<CheckState> {
    wl.status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|c| c.name == "mk")
        .map(|c| c.state)
}

#[test]
fn a_new_workload_gets_a_finalizer_and_replicas_on_every_connected_cluster() {
    let mut wl = manager();
    wl.metadata.finalizers = None;
    let mut clusters = active(&["w1", "w2"]);
    clusters.push(ClusterView {
        name: "w3".into(),
        state: ClusterState::Unreachable {
            since: t(0),
            last_known: LastKnown::Seen(None),
        },
    });
    let plan = run(&wl, &clusters, &BTreeMap::new(), 10);
    assert!((plan.finalizer == Some(FinalizerAction::Add)));
    assert_eq!(plan.create, vec!["w1", "w2"]);
    let wl = with_status(wl, &plan);
    let status = wl.status.as_ref().expect("status");
    assert_eq!(status.nominated_cluster_names, vec!["w1", "w2"]);
    assert_eq!(check_state(&wl), Some(CheckState::Pending));
    assert!(
        status.admission_checks[0]
            .message
            .contains("2 of 3 worker clusters connected")
    );
    assert!(plan.open_gate.is_none());
}

#[test]
fn planning_twice_is_a_no_op() {
    let wl = manager();
    let replicas = BTreeMap::from([
        ("w1".to_string(), replica(0)),
        ("w2".to_string(), replica(0)),
    ]);
    let first = run(&wl, &active(&["w1", "w2"]), &replicas, 10);
    let wl = with_status(wl, &first);
    let second = run(&wl, &active(&["w1", "w2"]), &replicas, 20);
    assert_eq!(second, Plan::default());
}

#[test]
fn the_first_signalling_replica_gets_the_gate_opened() {
    let wl = manager();
    let replicas = BTreeMap::from([
        ("w1".to_string(), signalling(replica(0), 12)),
        ("w2".to_string(), signalling(replica(0), 11)),
        ("w3".to_string(), replica(0)),
    ]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 15);
    assert_eq!(
        plan.open_gate,
        Some(GateOpening {
            cluster: "w2".into(),
            signalled_at: t(11),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: None,
            why: baton_core::ungate::OpenReason::FirstSignaller { signalling: 2 },
        })
    );
    // Back when the holder's view is due (the timeout's look comes later).
    assert_eq!(plan.requeue_after, Some(baton_view::QUIET_AFTER_OPENING));
}

#[test]
fn without_orchestration_no_gate_is_ever_opened() {
    let wl = manager();
    let replicas = BTreeMap::from([("w1".to_string(), signalling(replica(0), 1))]);
    let mut cfg = config();
    cfg.orchestrated = false;
    let plan = run_with(&wl, &active(&["w1"]), &replicas, 1000, &cfg);
    assert!(plan.open_gate.is_none());
}

#[test]
fn a_gate_opened_recently_makes_the_others_wait() {
    let wl = manager();
    let mut first = signalling(replica(0), 1);
    set_gate_state(
        first.status.get_or_insert_with(Default::default),
        MULTIKUEUE_GATE,
        GateState::Open,
        t(5),
    );
    let replicas = BTreeMap::from([
        ("w1".to_string(), first),
        ("w2".to_string(), signalling(replica(0), 2)),
    ]);
    let plan = run(&wl, &active(&["w1", "w2"]), &replicas, 65);
    assert!(plan.open_gate.is_none());
    // Stored at t(5), the opening may have happened as late as 5.999s: 241s remain.
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(241)));
    let plan = run(&wl, &active(&["w1", "w2"]), &replicas, 306);
    assert_eq!(
        plan.open_gate
            .map(|g| (g.cluster, g.previous_opened_at, g.previous_cluster)),
        Some(("w2".into(), Some(t(5)), Some("w1".into())))
    );
}

#[test]
fn the_earliest_admitted_replica_wins_and_the_others_are_deleted() {
    let wl = manager();
    let replicas = BTreeMap::from([
        ("w1".to_string(), admitted(replica(0), 30)),
        ("w2".to_string(), admitted(replica(0), 20)),
        ("w3".to_string(), signalling(replica(0), 5)),
    ]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 40);
    assert_eq!(plan.admitted_on.as_deref(), Some("w2"));
    assert_eq!(deleted(&plan), vec!["w1", "w3"]);
    assert!(plan.open_gate.is_none() && plan.create.is_empty());
    // One event, upstream's (reason and words); the losers go without an event each.
    assert!(plan.delete.iter().all(|d| !d.announce));
    let events: Vec<(&str, &str)> = plan
        .events
        .iter()
        .map(|e| (e.reason.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        events,
        vec![("MultiKueue", r#"The workload was admitted on "w2""#)]
    );
    let wl = with_status(wl, &plan);
    let status = wl.status.as_ref().expect("status");
    assert_eq!(status.cluster_name.as_deref(), Some("w2"));
    assert!(status.nominated_cluster_names.is_empty());
    assert_eq!(
        status.admission.as_ref().map(|a| a.cluster_queue.as_str()),
        Some("manager-cq"),
        "the reservation stays the manager's"
    );
    assert!(is_true(&status.conditions, condition::ADMITTED));
    assert_eq!(
        find_condition(&status.conditions, condition::ADMITTED)
            .map(|c| to_chrono(&c.last_transition_time)),
        Some(t(40)),
        "the manager's own Admitted: when its check turned Ready"
    );
    assert_eq!(check_state(&wl), Some(CheckState::Ready));
    assert_eq!(check_message(&wl), r#"The workload was admitted on "w2""#);
}

#[test]
fn admission_ties_go_by_cluster_order() {
    let replicas = BTreeMap::from([
        ("w3".to_string(), admitted(replica(0), 20)),
        ("w2".to_string(), admitted(replica(0), 20)),
    ]);
    let plan = run(&manager(), &active(&["w1", "w2", "w3"]), &replicas, 40);
    assert_eq!(plan.admitted_on.as_deref(), Some("w2"));
}

fn won_on_w2() -> Workload {
    let replicas = BTreeMap::from([("w2".to_string(), admitted(replica(0), 20))]);
    let wl = manager();
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 21);
    with_status(wl, &plan)
}

#[test]
fn after_winning_late_losers_are_deleted_and_finished_is_mirrored() {
    let wl = won_on_w2();
    let winner = with_conditions(
        admitted(replica(0), 20),
        &[(condition::FINISHED, ConditionStatus::True, "Succeeded")],
        90,
    );
    let replicas = BTreeMap::from([("w2".to_string(), winner), ("w3".to_string(), replica(0))]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 100);
    assert_eq!(deleted(&plan), vec!["w3"]);
    let wl = with_status(wl, &plan);
    assert!(is_true(
        &wl.status.as_ref().expect("status").conditions,
        condition::FINISHED
    ));
    // Once finished, every replica goes, the winner's too.
    let replicas = BTreeMap::from([("w2".to_string(), replica(0))]);
    assert_eq!(
        deleted(&run(&wl, &active(&["w2"]), &replicas, 110)),
        vec!["w2"]
    );
}

#[test]
fn an_evicted_winner_sends_the_workload_back_to_dispatch() {
    let wl = won_on_w2();
    let evicted = with_conditions(
        admitted(replica(0), 20),
        &[
            (condition::EVICTED, ConditionStatus::True, "Preempted"),
            (condition::QUOTA_RESERVED, ConditionStatus::False, "Pending"),
        ],
        50,
    );
    let replicas = BTreeMap::from([("w2".to_string(), evicted)]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 60);
    assert_eq!(deleted(&plan), vec!["w2"]);
    assert_eq!(plan.requeue_after, Some(Duration::ZERO));
    assert_eq!(plan.events[0].reason, "MultiKueue");
    assert_eq!(plan.events[0].type_, EventType::Normal);
    assert_eq!(plan.events[0].action, "EvictedOnWorker");
    let message = r#"Workload evicted on worker cluster: "w2", resetting for re-admission. Previously: "Ready""#;
    assert_eq!(plan.events[0].message, message);
    let wl = with_status(wl, &plan);
    assert_eq!(check_message(&wl), message);
    let status = wl.status.as_ref().expect("status");
    assert_eq!(status.cluster_name, None);
    assert!(!is_true(&status.conditions, condition::ADMITTED));
    assert_eq!(check_state(&wl), Some(CheckState::Retry));
    // Until the admission loop evicts it on the manager, nothing is dispatched.
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &BTreeMap::new(), 61);
    assert!(plan.create.is_empty() && plan.status.is_none());
    // Evicted on the manager: its quota goes back, and so does every replica.
    let wl = evicted_on_manager(wl, 62);
    let replicas = BTreeMap::from([("w1".to_string(), replica(0))]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 63);
    assert_eq!(deleted(&plan), vec!["w1"]);
    assert!(plan.create.is_empty());
    // Reserved again: dispatched to every cluster afresh.
    let wl = reserved(wl);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &BTreeMap::new(), 64);
    assert_eq!(plan.create, vec!["w1", "w2", "w3"]);
    assert_eq!(
        check_state(&with_status(wl, &plan)),
        Some(CheckState::Pending)
    );
}

/// What the admission loop writes when a check asks for a retry.
fn evicted_on_manager(mut wl: Workload, at: i64) -> Workload {
    let check = crate::admission::checks::failing(wl.status.as_ref().expect("status"))
        .expect("a failing check")
        .clone();
    wl.status = crate::admission::status::evicted_by_check(&wl, &check.name, &check.message, t(at));
    wl
}

#[test]
fn a_workload_without_a_manager_reservation_has_no_replicas() {
    let mut wl = manager();
    wl.status = None;
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &BTreeMap::new(), 10);
    assert!(plan.create.is_empty() && plan.status.is_none() && plan.open_gate.is_none());
    // Preempted on the manager while dispatched: its replicas go everywhere, named so.
    let mut wl = won_on_w2();
    let status = wl.status.as_mut().expect("status");
    status.admission = None;
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::EVICTED,
            ConditionStatus::True,
            "Preempted",
            "Preempted to accommodate workload default/boss",
        ),
        t(30),
    );
    let replicas = BTreeMap::from([("w2".to_string(), admitted(replica(0), 20))]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 31);
    assert_eq!(deleted(&plan), vec!["w2"]);
    assert!(
        plan.delete[0]
            .cause
            .to_string()
            .contains("evicted on the manager")
    );
    assert!(plan.create.is_empty() && plan.status.is_none());
}

#[test]
fn a_lost_worker_keeps_its_workload_until_the_timeout() {
    let wl = won_on_w2();
    let mut clusters = active(&["w1", "w3"]);
    clusters.push(ClusterView {
        name: "w2".into(),
        state: ClusterState::Unreachable {
            since: t(100),
            last_known: LastKnown::Seen(None),
        },
    });
    let plan = run(&wl, &clusters, &BTreeMap::new(), 400);
    assert_eq!(plan.status, None);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(600)));
    let plan = run(&wl, &clusters, &BTreeMap::new(), 1000);
    let wl = with_status(wl, &plan);
    assert_eq!(
        wl.status.as_ref().and_then(|s| s.cluster_name.clone()),
        None
    );
    // Upstream's words in the check and the event; the cause in the Requeued condition.
    assert_eq!(
        plan.events[0].message,
        r#"Admitting remote lost, Previously: "Ready""#
    );
    assert!(
        find_condition(
            &wl.status.as_ref().expect("status").conditions,
            condition::REQUEUED
        )
        .is_some_and(|c| c.message.contains("unreachable for more than 900s"))
    );
    // When w2 comes back, its old replica is stale: deleted, never a winner. The one made
    // after the re-dispatch is kept, whatever the worker's clock says of its creation.
    let mut after = build_replica(
        &wl,
        None,
        "multikueue",
        baton_core::ungate::ReplicaGating::Gated,
    );
    after.metadata.creation_timestamp = Some(to_kube(t(900)));
    let replicas = BTreeMap::from([
        ("w2".to_string(), admitted(replica(0), 20)),
        ("w1".to_string(), after),
    ]);
    // (Evicted on the manager after the retry, then reserved again.)
    let wl = reserved(evicted_on_manager(wl, 1001));
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 1002);
    assert_eq!(deleted(&plan), vec!["w2"]);
    assert_eq!(plan.admitted_on, None);
    assert_eq!(plan.create, vec!["w2", "w3"]);
}

#[test]
fn a_winner_whose_replica_vanished_or_cluster_was_removed_is_redispatched() {
    let wl = won_on_w2();
    let requeued = |plan: &Plan| {
        plan.status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, condition::REQUEUED))
            .map(|c| c.message.clone())
            .unwrap_or_default()
    };
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &BTreeMap::new(), 50);
    assert_eq!(
        plan.events[0].message,
        r#"Admitting remote no longer exists, Previously: "Ready""#
    );
    assert!(requeued(&plan).contains("disappeared"));
    let plan = run(&wl, &active(&["w1", "w3"]), &BTreeMap::new(), 50);
    assert_eq!(
        plan.events[0].message,
        r#"Admitting remote lost, Previously: "Ready""#
    );
    assert!(requeued(&plan).contains("was removed"));
}

#[test]
fn deletion_removes_replicas_then_the_finalizer() {
    let mut wl = manager();
    wl.metadata.deletion_timestamp = Some(to_kube(t(5)));
    let replicas = BTreeMap::from([("w1".to_string(), replica(0))]);
    let plan = run(&wl, &active(&["w1"]), &replicas, 6);
    assert_eq!(deleted(&plan), vec!["w1"]);
    assert!(!(plan.finalizer == Some(FinalizerAction::Remove)));
    let plan = run(&wl, &active(&["w1"]), &BTreeMap::new(), 7);
    assert!((plan.finalizer == Some(FinalizerAction::Remove)));
    // Without our finalizer there is nothing to do.
    wl.metadata.finalizers = None;
    assert_eq!(run(&wl, &active(&["w1"]), &replicas, 8), Plan::default());
}

#[test]
fn a_workload_that_leaves_multikueue_is_cleaned_up() {
    let wl = manager();
    let replicas = BTreeMap::from([("w1".to_string(), replica(0))]);
    let clusters = active(&["w1"]);
    let plan = plan(
        &Observation {
            workload: &wl,
            route: None,
            clusters: &clusters,
            replicas: &cached(&replicas),
            priority: None,
            view: Default::default(),
            now: t(1),
        },
        &config(),
    );
    assert_eq!(deleted(&plan), vec!["w1"]);
}

#[test]
fn out_of_sync_replicas_are_replaced_and_inactive_workloads_withdrawn() {
    let wl = manager();
    let mut stale = replica(0);
    stale.spec.queue_name = Some("elsewhere".into());
    let replicas = BTreeMap::from([("w1".to_string(), stale), ("w2".to_string(), replica(0))]);
    let plan = run(&wl, &active(&["w1", "w2"]), &replicas, 5);
    assert_eq!(deleted(&plan), vec!["w1"]);
    let mut inactive = manager();
    inactive.spec.active = false;
    assert_eq!(
        deleted(&run(&inactive, &active(&["w1", "w2"]), &replicas, 5)),
        vec!["w1", "w2"]
    );
}

#[test]
fn incremental_dispatch_grows_round_by_round() {
    let mut cfg = config();
    cfg.dispatcher = Dispatcher::Incremental {
        clusters_per_round: 1,
        round_timeout: Duration::from_secs(60),
    };
    let wl = manager();
    let clusters = active(&["w1", "w2", "w3"]);
    let plan = run_with(&wl, &clusters, &BTreeMap::new(), 0, &cfg);
    assert_eq!(plan.create, vec!["w1"]);
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(60)));
    let wl = with_status(wl, &plan);
    let replicas = BTreeMap::from([("w1".to_string(), replica(0))]);
    let plan = run_with(&wl, &clusters, &replicas, 61, &cfg);
    assert_eq!(plan.create, vec!["w2"]);
}

#[test]
fn a_cluster_not_yet_seen_since_start_may_hold_the_baton() {
    // Just after a restart: worker-1 (not connected yet) may have had its gate opened.
    let wl = manager();
    let mut clusters = active(&["w2"]);
    clusters.push(ClusterView {
        name: "w1".into(),
        state: ClusterState::Unreachable {
            since: t(100),
            last_known: LastKnown::NeverSeen,
        },
    });
    let replicas = BTreeMap::from([("w2".to_string(), signalling(replica(0), 2))]);
    let plan = run(&wl, &clusters, &replicas, 110);
    assert!(
        plan.open_gate.is_none(),
        "no opening before the unseen cluster is known or the timeout passed"
    );
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(291)));
    let plan = run(&wl, &clusters, &replicas, 401);
    assert_eq!(plan.open_gate.map(|g| g.cluster), Some("w2".into()));
}

#[test]
fn a_lost_cluster_keeps_its_last_known_gate_but_cannot_be_opened() {
    let wl = manager();
    let mut held = signalling(replica(0), 1);
    set_gate_state(
        held.status.get_or_insert_with(Default::default),
        MULTIKUEUE_GATE,
        GateState::Open,
        t(50),
    );
    let mut waiting_lost = signalling(replica(0), 0);
    waiting_lost.metadata.name = Some("job".into());
    let mut clusters = active(&["w2"]);
    clusters.push(ClusterView {
        name: "w1".into(),
        state: ClusterState::Unreachable {
            since: t(60),
            last_known: LastKnown::Seen(Some(ungate::view_of("w1", &held))),
        },
    });
    clusters.push(ClusterView {
        name: "w3".into(),
        state: ClusterState::Unreachable {
            since: t(60),
            last_known: LastKnown::Seen(Some(ungate::view_of("w3", &waiting_lost))),
        },
    });
    let replicas = BTreeMap::from([("w2".to_string(), signalling(replica(0), 2))]);
    // w1's gate (opened at 50) still counts while w1 is down...
    assert!(run(&wl, &clusters, &replicas, 200).open_gate.is_none());
    // ...and after the timeout the baton passes to w2, never to the unreachable w3.
    let plan = run(&wl, &clusters, &replicas, 351);
    assert_eq!(plan.open_gate.map(|g| g.cluster), Some("w2".into()));
}

fn costing(r: Workload, at: i64, victims: i32) -> Workload {
    let mut r = signalling(r, at);
    if let Some(s) = r.status.as_mut() {
        s.preemption_cost = Some(baton_crds::workload::PreemptionCost {
            victims,
            highest_priority: 0,
            pods: i64::from(victims),
            stop_seconds: None,
        });
    }
    r
}

#[test]
fn least_disruption_collects_then_opens_the_cheapest_and_waits_for_new_replicas() {
    let config = LifecycleConfig {
        ungating_policy: baton_core::ungate::UngatingPolicy::LeastDisruption {
            window: Duration::from_secs(2),
        },
        ..config()
    };
    let wl = manager();
    let replicas = BTreeMap::from([
        ("w1".to_string(), costing(replica(0), 10, 3)),
        ("w2".to_string(), costing(replica(0), 11, 1)),
        ("w3".to_string(), replica(0)),
    ]);
    let clusters = active(&["w1", "w2", "w3"]);
    let plan = run_with(&wl, &clusters, &replicas, 11, &config);
    assert!(plan.open_gate.is_none());
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(2)));
    let plan = run_with(&wl, &clusters, &replicas, 13, &config);
    let opening = plan.open_gate.expect("the window has passed");
    assert_eq!(opening.cluster, "w2");
    assert!(matches!(
        opening.why,
        baton_core::ungate::OpenReason::LeastDisruptive { signalling: 2, .. }
    ));
    // A replica this plan creates has not signalled yet: it holds the window open too.
    let mut without_w3 = replicas.clone();
    without_w3.remove("w3");
    let plan = run_with(&wl, &clusters, &without_w3, 11, &config);
    assert_eq!(plan.create, vec!["w3"]);
    assert!(plan.open_gate.is_none());
    // An unreachable worker's Closed replica cannot signal: it does not hold the window.
    let mut clusters = active(&["w1", "w2"]);
    clusters.push(ClusterView {
        name: "w3".into(),
        state: ClusterState::Unreachable {
            since: t(5),
            last_known: LastKnown::Seen(Some(ungate::view_of("w3", &replica(0)))),
        },
    });
    let plan = run_with(&wl, &clusters, &without_w3, 11, &config);
    assert_eq!(plan.open_gate.map(|g| g.cluster), Some("w2".into()));
}

/// A workload reserved at t(0) with its check Pending (as the admission loop writes it),
/// dispatched to `clusters`: the plan at 2 s, and the status written at 5 s.
fn dispatch_note(clusters: &[&str]) -> (Plan, WorkloadStatus) {
    let mut wl = manager();
    let status = wl.status.as_mut().expect("status");
    set_check(status, "mk", CheckState::Pending, String::new(), t(0));
    let clusters = active(clusters);
    let at = |secs| run(&wl, &clusters, &BTreeMap::new(), secs);
    let due = at(5).status.expect("the note is written once due");
    (at(2), due)
}

#[test]
fn the_dispatch_note_waits_a_few_seconds_after_the_reservation() {
    let (early, due) = dispatch_note(&["w1", "w2", "w3"]);
    assert_eq!(early.create, vec!["w1", "w2", "w3"], "dispatched at once");
    assert_eq!(early.status, None, "the note waits");
    assert_eq!(early.requeue_after, Some(Duration::from_secs(3)));
    assert_eq!(due.nominated_cluster_names, vec!["w1", "w2", "w3"]);
    let message = &due.admission_checks[0].message;
    assert!(
        message.starts_with("dispatched to w1, w2, w3 ("),
        "{message}"
    );
}

#[test]
fn past_three_clusters_the_dispatch_note_counts_them() {
    let (_, due) = dispatch_note(&["w1", "w2", "w3", "w4"]);
    assert_eq!(due.nominated_cluster_names, vec!["w1", "w2", "w3", "w4"]);
    let counted = "dispatched to 4 worker clusters, named in nominatedClusterNames (";
    assert!(due.admission_checks[0].message.starts_with(counted));
}

#[test]
fn anything_besides_the_dispatch_note_is_written_at_once() {
    // No check entry yet: adding it is more than a note.
    let wl = manager();
    let plan = run(&wl, &active(&["w1"]), &BTreeMap::new(), 1);
    let status = plan.status.expect("written");
    assert_eq!(status.admission_checks.len(), 1);
    assert_eq!(status.nominated_cluster_names, vec!["w1"]);
}

/// A replica's conditions, as the properties read them.
fn replica_conditions(
    replica: &Workload,
) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    replica
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

fn finished_out_of_sync(r: Workload, at: i64) -> Workload {
    with_conditions(
        r,
        &[(
            condition::FINISHED,
            ConditionStatus::True,
            reason::OUT_OF_SYNC,
        )],
        at,
    )
}

#[test]
fn a_winner_finished_out_of_sync_is_redispatched_not_finished() {
    // Upstream: "Should retry a Job whose remote workload finishes OutOfSync instead of
    // finishing the manager workload".
    let wl = won_on_w2();
    let replicas = BTreeMap::from([(
        "w2".to_string(),
        finished_out_of_sync(admitted(replica(0), 20), 50),
    )]);
    let plan = run(&wl, &active(&["w1", "w2", "w3"]), &replicas, 60);
    assert_eq!(deleted(&plan), vec!["w2"]);
    let message = r#"Remote workload on worker cluster "w2" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready""#;
    let events: Vec<(&EventType, &str, &str)> = plan
        .events
        .iter()
        .map(|e| (&e.type_, e.reason.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(events, vec![(&EventType::Warning, "MultiKueue", message)]);
    let wl = with_status(wl, &plan);
    let status = wl.status.as_ref().expect("status");
    assert!(
        find_condition(&status.conditions, condition::FINISHED).is_none(),
        "never finished that way"
    );
    assert_eq!(status.cluster_name, None);
    assert_eq!(check_state(&wl), Some(CheckState::Retry));
    assert_eq!(check_message(&wl), message);
}

#[test]
fn a_replica_finished_out_of_sync_before_any_winner_is_replaced() {
    let replicas = BTreeMap::from([
        (
            "w1".to_string(),
            finished_out_of_sync(admitted(replica(0), 10), 12),
        ),
        ("w2".to_string(), replica(0)),
    ]);
    let plan = run(&manager(), &active(&["w1", "w2"]), &replicas, 20);
    assert_eq!(plan.admitted_on, None, "it never wins");
    assert_eq!(
        plan.delete
            .iter()
            .map(|d| (d.cluster.as_str(), &d.cause))
            .collect::<Vec<_>>(),
        vec![("w1", &RemovalCause::OutOfSync)]
    );
}

#[test]
fn a_lost_or_gone_winner_gets_upstreams_retry_messages() {
    let ready = CheckState::Ready;
    assert_eq!(
        retry_message(
            &RedispatchCause::Unreachable {
                cluster: "w1".into(),
                timeout: Duration::from_secs(60),
            },
            ready
        ),
        r#"Admitting remote lost, Previously: "Ready""#
    );
    assert_eq!(
        retry_message(
            &RedispatchCause::ClusterRemoved {
                cluster: "w1".into()
            },
            ready
        ),
        r#"Admitting remote lost, Previously: "Ready""#
    );
    for cause in [
        RedispatchCause::ReplicaGone {
            cluster: "w1".into(),
        },
        RedispatchCause::LostReservation {
            cluster: "w1".into(),
        },
    ] {
        assert_eq!(
            retry_message(&cause, ready),
            r#"Admitting remote no longer exists, Previously: "Ready""#
        );
    }
    assert_eq!(
        retry_message(
            &RedispatchCause::FinishedOutOfSync {
                cluster: "w1".into()
            },
            CheckState::Pending
        ),
        r#"Remote workload on worker cluster "w1" is out of sync with its user job, resetting for re-dispatch, Previously: "Pending""#
    );
    assert_eq!(
        retry_message(
            &RedispatchCause::Evicted {
                cluster: "w1".into(),
                reason: "Preempted".into()
            },
            CheckState::Retry
        ),
        r#"Workload evicted on worker cluster: "w1", resetting for re-admission. Previously: "Retry""#
    );
}

fn with_class(mut wl: Workload, class: &str, group: PriorityClassGroup) -> Workload {
    wl.spec.priority_class_ref = Some(Box::new(PriorityClassRef {
        group,
        kind: match group {
            PriorityClassGroup::Kueue => PriorityClassKind::WorkloadPriorityClass,
            PriorityClassGroup::Scheduling => PriorityClassKind::PriorityClass,
        },
        name: class.into(),
    }));
    wl
}

fn plan_with_priority(
    wl: &Workload,
    replicas: &BTreeMap<String, Workload>,
    priority: Option<i32>,
) -> Plan {
    let route = route();
    let clusters = active(&["w1", "w2", "w3"]);
    plan(
        &Observation {
            workload: wl,
            route: Some(&route),
            clusters: &clusters,
            replicas: &cached(replicas),
            priority,
            view: Default::default(),
            now: t(30),
        },
        &config(),
    )
}

#[test]
fn replicas_in_sync_carry_the_priority_resolved_on_the_manager() {
    let wl = with_class(manager(), "high", PriorityClassGroup::Kueue);
    let made = build_replica(
        &wl,
        Some(1000),
        "multikueue",
        baton_core::ungate::ReplicaGating::Gated,
    );
    assert_eq!(made.spec.priority, Some(1000));
    let replicas = BTreeMap::from([("w1".to_string(), made)]);
    let plan = plan_with_priority(&wl, &replicas, Some(1000));
    assert!(plan.delete.is_empty() && plan.update_priority.is_none());
    // A class not found on the manager: nothing to carry, a worker-filled value is fine.
    let plan = plan_with_priority(&wl, &replicas, None);
    assert!(plan.delete.is_empty() && plan.update_priority.is_none());
}

#[test]
fn a_priority_class_change_updates_live_replicas_in_place() {
    // Upstream: "should update the workload's priority class on the worker if it changes on
    // the manager".
    let before = with_class(manager(), "high", PriorityClassGroup::Kueue);
    let after = with_class(manager(), "low", PriorityClassGroup::Kueue);
    let replicas = BTreeMap::from([
        (
            "w1".to_string(),
            admitted(
                build_replica(
                    &before,
                    Some(1000),
                    "multikueue",
                    baton_core::ungate::ReplicaGating::Gated,
                ),
                10,
            ),
        ),
        (
            "w2".to_string(),
            build_replica(
                &before,
                Some(1000),
                "multikueue",
                baton_core::ungate::ReplicaGating::Gated,
            ),
        ),
    ]);
    let wl = with_status(
        after.clone(),
        &plan_with_priority(&after, &replicas, Some(10)),
    );
    // The winner w1 keeps running; both replicas get the class and the value, none is
    // replaced.
    let plan = plan_with_priority(&wl, &replicas, Some(10));
    let update = plan.update_priority.expect("an update");
    assert_eq!(update.clusters, vec!["w1"]);
    assert_eq!(update.priority, Some(10));
    assert_eq!(update.class.map(|c| c.name), Some("low".to_string()));
    assert!(!plan.delete.iter().any(|d| d.cluster == "w1"));
    // Before a winner: every dispatched replica is updated.
    let plan = plan_with_priority(&after, &replicas, Some(10));
    assert_eq!(plan.admitted_on.as_deref(), Some("w1"));
    let replicas = BTreeMap::from([
        (
            "w1".to_string(),
            build_replica(
                &before,
                Some(1000),
                "multikueue",
                baton_core::ungate::ReplicaGating::Gated,
            ),
        ),
        (
            "w2".to_string(),
            build_replica(
                &before,
                Some(1000),
                "multikueue",
                baton_core::ungate::ReplicaGating::Gated,
            ),
        ),
    ]);
    let plan = plan_with_priority(&after, &replicas, Some(10));
    assert!(plan.delete.is_empty());
    assert_eq!(
        plan.update_priority.map(|u| u.clusters),
        Some(vec!["w1".to_string(), "w2".to_string()])
    );
    // Only the value changed (the same class): updated in place too.
    let plan = plan_with_priority(&before, &replicas, Some(7));
    assert_eq!(plan.update_priority.map(|u| u.priority), Some(Some(7)));
}

#[test]
fn a_change_to_or_from_a_pod_priority_class_replaces_the_replica() {
    let before = with_class(manager(), "high", PriorityClassGroup::Scheduling);
    let after = with_class(manager(), "low", PriorityClassGroup::Kueue);
    let replicas = BTreeMap::from([(
        "w1".to_string(),
        build_replica(
            &before,
            Some(1000),
            "multikueue",
            baton_core::ungate::ReplicaGating::Gated,
        ),
    )]);
    let plan = plan_with_priority(&after, &replicas, Some(10));
    assert!(plan.update_priority.is_none());
    assert_eq!(
        plan.delete
            .iter()
            .map(|d| (d.cluster.as_str(), &d.cause))
            .collect::<Vec<_>>(),
        vec![("w1", &RemovalCause::OutOfSync)]
    );
}

/// `status.baton` through a workload's story: written once the first opening is quiet, not
/// again while nothing changes, again on a new signal, on the pass and on the win; never for
/// a workload nobody gated.
/// A holder that admits before its opening is quiet: the win's write is the view's first.
#[test]
fn a_quick_win_carries_the_first_view() {
    let clusters = active(&["w1", "w2"]);
    let wl = manager();
    let mut replicas = BTreeMap::from([
        ("w1".to_string(), signalling(replica(0), 11)),
        ("w2".to_string(), signalling(replica(0), 12)),
    ]);
    let opening = run(&wl, &clusters, &replicas, 12);
    assert!(opening.status.as_ref().is_none_or(|s| s.baton.is_none()));
    let wl = with_status(wl, &opening);
    let mut won = admitted(replica(0), 13);
    set_gate_state(
        won.status.get_or_insert_with(Default::default),
        MULTIKUEUE_GATE,
        GateState::Open,
        t(12),
    );
    replicas.insert("w1".into(), won);
    let plan = run(&wl, &clusters, &replicas, 14);
    let view = plan
        .status
        .as_ref()
        .and_then(|s| s.baton.clone())
        .expect("the win's view");
    assert_eq!(view.holder.as_deref(), Some("w1"));
    assert!(view.replicas[0].admitted && view.replicas[1].removed);
    assert!(view.replicas[1].signalling_since.is_some(), "{view:?}");
}

#[test]
fn where_the_crd_prunes_the_view_none_is_sent() {
    let clusters = active(&["w1", "w2"]);
    let wl = manager();
    let replicas = BTreeMap::from([("w2".to_string(), signalling(replica(0), 11))]);
    let route = route();
    let plan = plan(
        &Observation {
            workload: &wl,
            route: Some(&route),
            clusters: &clusters,
            replicas: &cached(&replicas),
            priority: None,
            view: baton_view::Storage::Pruned,
            now: t(60),
        },
        &config(),
    );
    assert!(plan.open_gate.is_some());
    assert!(plan.status.as_ref().is_none_or(|s| s.baton.is_none()));
    assert_eq!(plan.requeue_after, Some(Duration::from_secs(300)));
}

#[test]
fn the_baton_view_is_written_on_change_only() {
    let clusters = active(&["w1", "w2"]);
    // Admitted at once: no view, not even on the win.
    let wl = manager();
    let quiet = BTreeMap::from([
        ("w1".to_string(), replica(0)),
        ("w2".to_string(), replica(0)),
    ]);
    let wl = with_status(wl.clone(), &run(&wl, &clusters, &quiet, 10));
    assert!(wl.status.as_ref().and_then(|s| s.baton.as_ref()).is_none());
    let won = BTreeMap::from([
        ("w1".to_string(), admitted(replica(0), 11)),
        ("w2".to_string(), replica(0)),
    ]);
    let plan = run(&wl, &clusters, &won, 12);
    assert!(plan.status.as_ref().is_some_and(|s| s.baton.is_none()));

    // w2 signals: its gate is opened; the view waits until the opening is quiet (a quick
    // win would carry it).
    let wl = manager();
    let mut replicas = BTreeMap::from([
        ("w1".to_string(), replica(0)),
        ("w2".to_string(), signalling(replica(0), 11)),
    ]);
    let plan = run(&wl, &clusters, &replicas, 15);
    assert_eq!(
        plan.open_gate.as_ref().map(|g| g.cluster.as_str()),
        Some("w2")
    );
    assert_eq!(plan.opened_at, Some(t(15)));
    assert!(
        plan.status.as_ref().is_none_or(|s| s.baton.is_none()),
        "no view yet"
    );
    assert_eq!(plan.requeue_after, Some(baton_view::QUIET_AFTER_OPENING));
    let wl = with_status(wl, &plan);
    // The opening comes back from the worker, stamped with the plan's time.
    if let Some(r) = replicas.get_mut("w2") {
        set_gate_state(
            r.status.get_or_insert_with(Default::default),
            MULTIKUEUE_GATE,
            GateState::Open,
            t(15),
        );
    }
    let early = run(&wl, &clusters, &replicas, 17);
    assert_eq!(early.status, None, "not quiet yet: no write");
    assert_eq!(early.requeue_after, Some(Duration::from_secs(3)));
    let plan = run(&wl, &clusters, &replicas, 20);
    let view = plan
        .status
        .as_ref()
        .and_then(|s| s.baton.clone())
        .expect("a view");
    assert_eq!(view.holder.as_deref(), Some("w2"));
    assert_eq!(view.passes_after.as_ref().map(to_chrono), Some(t(316)));
    let wl = with_status(wl, &plan);
    let again = run(&wl, &clusters, &replicas, 40);
    assert_eq!(again.status, None, "nothing changed: no write");
    // w1 signals: one write, w1 first in line.
    replicas.insert("w1".into(), signalling(replica(0), 50));
    let plan = run(&wl, &clusters, &replicas, 51);
    let view = plan
        .status
        .as_ref()
        .and_then(|s| s.baton.clone())
        .expect("a new view");
    assert_eq!(view.waiting, 1);
    assert_eq!(view.replicas[0].position, Some(1));
    let wl = with_status(wl, &plan);
    assert_eq!(run(&wl, &clusters, &replicas, 60).status, None);
    // The timeout passes the baton to w1: the opening and the new holder, one write.
    let plan = run(&wl, &clusters, &replicas, 320);
    assert_eq!(
        plan.open_gate.as_ref().map(|g| g.cluster.as_str()),
        Some("w1")
    );
    let view = plan
        .status
        .as_ref()
        .and_then(|s| s.baton.clone())
        .expect("the pass");
    assert_eq!(view.holder.as_deref(), Some("w1"));
    assert_eq!(view.waiting, 0);
    let wl = with_status(wl, &plan);
    // w1 admits: the win keeps the holder and marks winner and removal.
    replicas.insert("w1".into(), admitted(replica(0), 330));
    let plan = run(&wl, &clusters, &replicas, 331);
    let view = plan
        .status
        .as_ref()
        .and_then(|s| s.baton.clone())
        .expect("the win");
    assert!(view.replicas[0].admitted && view.replicas[1].removed);
    assert_eq!(view.passes_after, None);
}
