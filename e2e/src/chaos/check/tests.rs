//! Hand-made logs for every invariant, each both kept and broken.

use baton_crds::workload::GateState;

use super::*;
use crate::chaos::log::{Fault, ObjectEvent, Snapshot};

const TIMEOUT: Millis = 5_000;

fn config(end: Millis) -> CheckConfig {
    CheckConfig {
        workers: 3,
        worker_cpus: 8,
        preemption_timeout: TIMEOUT,
        cluster_names: vec!["worker-1".into(), "worker-2".into(), "worker-3".into()],
        end,
    }
}

/// A replica version on worker `cluster`.
fn replica(uid: &str, rv: u64) -> Snapshot {
    Snapshot {
        uid: uid.into(),
        rv,
        replica: true,
        gate: Some(GateState::Closed),
        cpus: 2,
        ..Default::default()
    }
}

fn put(at: Millis, cluster: usize, name: &str, snapshot: Snapshot) -> Event {
    Event::Object(ObjectEvent {
        at,
        cluster,
        name: name.into(),
        deleted: false,
        snapshot,
    })
}

fn gone(at: Millis, cluster: usize, name: &str, snapshot: Snapshot) -> Event {
    Event::Object(ObjectEvent {
        at,
        cluster,
        name: name.into(),
        deleted: true,
        snapshot,
    })
}

fn holding(uid: &str, rv: u64) -> Snapshot {
    Snapshot {
        holds_quota: true,
        admitted: true,
        ..replica(uid, rv)
    }
}

fn open(uid: &str, rv: u64) -> Snapshot {
    Snapshot {
        gate: Some(GateState::Open),
        ..replica(uid, rv)
    }
}

fn of(outcome: &Outcome, invariant: Invariant) -> Vec<&Violation> {
    outcome
        .violations
        .iter()
        .filter(|v| v.invariant == invariant)
        .collect()
}

// (a)

#[test]
fn a_loser_removed_within_the_window_is_allowed_and_measured() {
    let events = vec![
        put(1_000, 1, "w", holding("u1", 10)),
        put(1_500, 2, "w", holding("u2", 11)),
        gone(4_500, 2, "w", holding("u2", 12)),
    ];
    let out = check(&events, &config(5_000));
    assert!(of(&out, Invariant::DoubleAdmission).is_empty(), "{out:?}");
    assert_eq!(out.measures.max_double_admission, 3_000);
    assert_eq!(out.measures.double_admissions, 1);
}

#[test]
fn two_holders_beyond_the_window_are_a_violation_with_evidence() {
    let events = vec![
        put(1_000, 1, "w", holding("u1", 10)),
        put(2_000, 3, "w", holding("u3", 11)),
        put(20_000, 3, "w", replica("u3", 40)),
    ];
    let out = check(&events, &config(30_000));
    let v = of(&out, Invariant::DoubleAdmission);
    assert_eq!(v.len(), 1, "{out:?}");
    assert!(
        v[0].evidence
            .contains("worker-1 (uid u1, since 1000 ms, rv 10)"),
        "{}",
        v[0]
    );
    assert!(v[0].evidence.contains("worker-3 rv 40"), "{}", v[0]);
}

#[test]
fn an_overlap_still_open_at_the_end_counts_up_to_the_end() {
    let events = vec![
        put(1_000, 1, "w", holding("u1", 10)),
        put(1_000, 2, "w", holding("u2", 11)),
    ];
    let out = check(&events, &config(12_000));
    assert_eq!(of(&out, Invariant::DoubleAdmission).len(), 1);
    assert_eq!(out.measures.max_double_admission, 11_000);
}

#[test]
fn downtime_within_the_overlap_is_excused() {
    let events = vec![
        put(1_000, 1, "w", holding("u1", 10)),
        put(1_000, 2, "w", holding("u2", 11)),
        Event::Fault {
            at: 2_000,
            fault: Fault::WorkerOffline { worker: 2 },
        },
        Event::Fault {
            at: 30_000,
            fault: Fault::WorkerOnline { worker: 2 },
        },
        gone(35_000, 2, "w", holding("u2", 12)),
    ];
    let out = check(&events, &config(40_000));
    assert!(of(&out, Invariant::DoubleAdmission).is_empty(), "{out:?}");
    assert_eq!(out.measures.max_double_admission_unexcused, 6_000);
}

// (b)

#[test]
fn a_second_gate_after_the_timeout_is_a_baton_pass() {
    let events = vec![
        put(1_000, 1, "w", open("u1", 10)),
        put(6_200, 2, "w", open("u2", 11)),
        put(7_000, 2, "w", open("u2", 12)),
    ];
    let out = check(&events, &config(8_000));
    assert!(of(&out, Invariant::GatesTooClose).is_empty(), "{out:?}");
    assert_eq!(out.measures.gate_openings, 2);
    assert_eq!(out.measures.baton_passes, 1);
    assert_eq!(out.measures.min_baton_gap, Some(5_200));
}

#[test]
fn two_gates_opened_within_the_timeout_are_a_violation() {
    let events = vec![
        put(1_000, 1, "w", open("u1", 10)),
        put(2_000, 3, "w", open("u3", 11)),
    ];
    let out = check(&events, &config(8_000));
    let v = of(&out, Invariant::GatesTooClose);
    assert_eq!(v.len(), 1, "{out:?}");
    assert!(v[0].evidence.contains("1000 ms apart"), "{}", v[0]);
}

#[test]
fn a_gate_closed_again_or_deleted_no_longer_holds_the_baton() {
    let events = vec![
        put(1_000, 1, "w", open("u1", 10)),
        // Evicted as a victim: its gates reset to Closed.
        put(1_500, 1, "w", replica("u1", 11)),
        put(2_000, 2, "w", open("u2", 12)),
        gone(2_500, 2, "w", open("u2", 13)),
        put(3_000, 3, "w", open("u3", 14)),
    ];
    let out = check(&events, &config(8_000));
    assert!(of(&out, Invariant::GatesTooClose).is_empty(), "{out:?}");
    assert_eq!(out.measures.gate_openings, 3);
    assert_eq!(out.measures.baton_passes, 0);
}

#[test]
fn the_timestamp_slack_allows_a_second_of_truncation() {
    let events = vec![
        put(1_000, 1, "w", open("u1", 10)),
        put(5_100, 2, "w", open("u2", 11)),
    ];
    let out = check(&events, &config(8_000));
    assert!(of(&out, Invariant::GatesTooClose).is_empty(), "{out:?}");
}

// (e)

fn victim_evicted(uid: &str, rv: u64) -> Snapshot {
    Snapshot {
        evicted: Some(
            "Preempted to accommodate workload ns/hi due to prioritization in the ClusterQueue"
                .into(),
        ),
        ..replica(uid, rv)
    }
}

#[test]
fn an_eviction_for_a_preemptor_with_an_open_gate_is_fine() {
    let events = vec![
        put(1_000, 1, "lo", holding("v", 10)),
        put(1_100, 1, "hi", replica("p", 11)),
        put(1_200, 1, "hi", open("p", 12)),
        put(1_300, 1, "lo", victim_evicted("v", 13)),
    ];
    let out = check(&events, &config(2_000));
    assert!(
        of(&out, Invariant::EvictedWhileGateClosed).is_empty(),
        "{out:?}"
    );
    assert_eq!(out.measures.evictions_checked, 1);
}

#[test]
fn an_eviction_for_a_preemptor_with_a_closed_gate_is_a_violation() {
    let events = vec![
        put(1_000, 2, "lo", holding("v", 10)),
        put(1_100, 2, "hi", replica("p", 11)),
        // Open on another worker does not count.
        put(1_150, 1, "hi", open("q", 5)),
        put(1_300, 2, "lo", victim_evicted("v", 13)),
    ];
    let out = check(&events, &config(2_000));
    let v = of(&out, Invariant::EvictedWhileGateClosed);
    assert_eq!(v.len(), 1, "{out:?}");
    assert_eq!(v[0].workload, "hi");
    assert!(
        v[0].evidence.contains("worker-2 at 1300 ms (rv 13)"),
        "{}",
        v[0]
    );
}

#[test]
fn an_unknown_preemptor_is_counted_not_judged() {
    let events = vec![put(1_300, 2, "lo", victim_evicted("v", 13))];
    let out = check(&events, &config(2_000));
    assert!(out.violations.is_empty());
    assert_eq!(out.measures.evictions_unverified, 1);
}

// (c) and (d)

fn manager(uid: &str, rv: u64, cpus: u32) -> Snapshot {
    Snapshot {
        uid: uid.into(),
        rv,
        cpus,
        ..Default::default()
    }
}

fn submitted(at: Millis, name: &str) -> Event {
    Event::Submitted {
        at,
        name: name.into(),
        priority: 0,
        cpus: 2,
    }
}

#[test]
fn a_clean_end_has_no_violation() {
    let admitted = Snapshot {
        admitted: true,
        cluster_name: Some("worker-1".into()),
        ..manager("m1", 5, 2)
    };
    let finished = Snapshot {
        finished: true,
        ..manager("m2", 6, 2)
    };
    let events = vec![
        submitted(0, "a"),
        submitted(0, "b"),
        submitted(0, "c"),
        put(100, 0, "a", admitted),
        put(100, 1, "a", holding("r1", 7)),
        put(100, 0, "b", finished),
        Event::Deleted {
            at: 200,
            name: "c".into(),
        },
        gone(300, 0, "c", manager("m3", 9, 2)),
    ];
    let out = check(&events, &config(30_000));
    assert!(out.violations.is_empty(), "{out:?}");
}

#[test]
fn a_workload_gone_without_a_deletion_is_lost() {
    let events = vec![
        submitted(0, "a"),
        put(100, 0, "a", manager("m1", 5, 2)),
        gone(200, 0, "a", manager("m1", 6, 2)),
    ];
    let out = check(&events, &config(30_000));
    let v = of(&out, Invariant::Lost);
    assert_eq!(v.len(), 1, "{out:?}");
    assert!(
        v[0].evidence
            .contains("deleted from the manager at 200 ms (rv 6)")
    );
}

#[test]
fn admitted_on_a_worker_that_holds_nothing_is_lost() {
    let admitted = Snapshot {
        admitted: true,
        cluster_name: Some("worker-2".into()),
        ..manager("m1", 5, 2)
    };
    let events = vec![submitted(0, "a"), put(100, 0, "a", admitted)];
    let out = check(&events, &config(30_000));
    assert_eq!(of(&out, Invariant::Lost).len(), 1, "{out:?}");
}

#[test]
fn pending_with_a_free_worker_is_stranded_but_not_when_all_are_full() {
    let events = vec![submitted(0, "a"), put(100, 0, "a", manager("m1", 5, 2))];
    let out = check(&events, &config(30_000));
    let v = of(&out, Invariant::Stranded);
    assert_eq!(v.len(), 1, "{out:?}");
    assert!(v[0].evidence.contains("worker-1 has 8 free"), "{}", v[0]);

    let mut full = events.clone();
    for w in 1..=3 {
        let big = Snapshot {
            cpus: 8,
            replica: false,
            ..holding(&format!("x{w}"), 20 + w as u64)
        };
        full.push(put(200, w, &format!("other-{w}"), big));
    }
    let out = check(&full, &config(30_000));
    assert!(of(&out, Invariant::Stranded).is_empty(), "{out:?}");
    assert_eq!(out.measures.pending_at_end, 1);
}

#[test]
fn a_state_that_heals_within_the_grace_is_not_a_violation() {
    let events = vec![
        submitted(0, "a"),
        put(100, 0, "a", manager("m1", 5, 2)),
        // Admitted 5 s before the end: pending with room for most of the grace, not all.
        put(25_000, 1, "a", holding("r1", 6)),
        put(
            25_000,
            0,
            "a",
            Snapshot {
                admitted: true,
                cluster_name: Some("worker-1".into()),
                ..manager("m1", 7, 2)
            },
        ),
    ];
    let out = check(&events, &config(30_000));
    assert!(out.violations.is_empty(), "{out:?}");
}

#[test]
fn replicas_of_deleted_finished_or_won_elsewhere_workloads_are_left_behind() {
    let won = Snapshot {
        admitted: true,
        cluster_name: Some("worker-1".into()),
        ..manager("m2", 5, 2)
    };
    let finished = Snapshot {
        finished: true,
        ..manager("m3", 6, 2)
    };
    let events = vec![
        submitted(0, "deleted"),
        submitted(0, "won"),
        submitted(0, "fin"),
        put(50, 0, "deleted", manager("m1", 4, 2)),
        put(60, 2, "deleted", replica("r1", 8)),
        Event::Deleted {
            at: 100,
            name: "deleted".into(),
        },
        gone(150, 0, "deleted", manager("m1", 9, 2)),
        put(200, 0, "won", won),
        put(200, 1, "won", holding("r2", 10)),
        put(200, 3, "won", replica("r3", 11)),
        put(300, 0, "fin", finished),
        put(300, 2, "fin", replica("r4", 12)),
    ];
    let out = check(&events, &config(30_000));
    let v = of(&out, Invariant::LeftBehind);
    assert_eq!(v.len(), 3, "{out:?}");
    let text: Vec<String> = v.iter().map(|v| v.to_string()).collect();
    assert!(
        text.iter().any(|t| t.contains("deleted at 150 ms (rv 9)")),
        "{text:?}"
    );
    assert!(
        text.iter().any(|t| t.contains("won on 'worker-1'")),
        "{text:?}"
    );
    assert!(text.iter().any(|t| t.contains("finished")), "{text:?}");
}
