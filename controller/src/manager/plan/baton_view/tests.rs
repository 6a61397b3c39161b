use super::*;
use baton_core::ungate::{GateObservation, OpenReason, PreemptionCost, Signal};
use baton_crds::constants::reason;
use baton_crds::time::to_chrono;
use chrono::TimeZone;

fn t(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + s, 0)
        .single()
        .expect("valid time")
}

fn order() -> Vec<String> {
    vec!["w1".into(), "w2".into(), "w3".into()]
}

fn rules(order: &[String]) -> Rules<'_> {
    Rules {
        cluster_order: order,
        timeout: Duration::from_secs(30),
        policy: UngatingPolicy::FirstComeFirstServed,
    }
}

fn closed(cluster: &str) -> ReplicaView {
    ReplicaView {
        cluster: cluster.into(),
        gate: Some(GateObservation {
            state: GateState::Closed,
            since: None,
        }),
        ..Default::default()
    }
}

fn signalling(cluster: &str, since: i64) -> ReplicaView {
    ReplicaView {
        signal: Some(Signal {
            reason: reason::PREEMPTION_GATED.into(),
            since: t(since),
        }),
        ..closed(cluster)
    }
}

fn open(cluster: &str, since: i64) -> ReplicaView {
    ReplicaView {
        gate: Some(GateObservation {
            state: GateState::Open,
            since: Some(t(since)),
        }),
        ..closed(cluster)
    }
}

fn opening(cluster: &str) -> GateOpening {
    GateOpening {
        cluster: cluster.into(),
        signalled_at: t(0),
        previous_opened_at: None,
        previous_cluster: None,
        released_by: None,
        why: OpenReason::FirstSignaller { signalling: 1 },
    }
}

fn positions(view: &BatonStatus) -> Vec<(String, Option<i32>)> {
    view.replicas
        .iter()
        .map(|r| (r.cluster.clone(), r.position))
        .collect()
}

#[test]
fn no_signal_and_no_open_gate_means_no_view() {
    let o = order();
    let replicas = [closed("w1"), closed("w2")];
    assert_eq!(dispatched(&replicas, None, t(100), &rules(&o)), None);
    assert_eq!(dispatched(&[], None, t(100), &rules(&o)), None);
}

#[test]
fn waiting_replicas_are_listed_in_cluster_order_with_their_fcfs_position() {
    let o = order();
    // w3 signalled first, then w1; w2 does not signal.
    let replicas = [signalling("w1", 5), closed("w2"), signalling("w3", 2)];
    let view = dispatched(&replicas, None, t(10), &rules(&o)).expect("a view");
    assert_eq!(view.holder, None);
    assert_eq!(view.passes_after, None);
    assert_eq!(view.waiting, 2);
    assert_eq!(
        positions(&view),
        vec![
            ("w1".into(), Some(2)),
            ("w2".into(), None),
            ("w3".into(), Some(1))
        ]
    );
    assert_eq!(
        view.replicas[0].signalling_since.as_ref().map(to_chrono),
        Some(t(5))
    );
    assert_eq!(view.replicas[1].gate, Some(GateState::Closed));
}

#[test]
fn the_holder_is_the_last_opened_gate_and_the_pass_time_follows_the_timeout() {
    let o = order();
    let replicas = [open("w1", 0), open("w2", 40), signalling("w3", 3)];
    let view = dispatched(&replicas, None, t(50), &rules(&o)).expect("a view");
    assert_eq!(view.holder.as_deref(), Some("w2"));
    assert_eq!(view.holder_since.as_ref().map(to_chrono), Some(t(40)));
    // 30 s timeout plus the stored times' one-second precision.
    assert_eq!(view.passes_after.as_ref().map(to_chrono), Some(t(71)));
    assert_eq!(view.waiting, 1);
    assert_eq!(
        positions(&view),
        vec![
            ("w1".into(), None),
            ("w2".into(), None),
            ("w3".into(), Some(1))
        ]
    );
}

#[test]
fn an_open_gate_alone_still_shows_its_holder() {
    let o = order();
    let view = dispatched(&[open("w1", 0), closed("w2")], None, t(5), &rules(&o)).expect("a view");
    assert_eq!(view.holder.as_deref(), Some("w1"));
    assert_eq!(view.waiting, 0);
}

#[test]
fn a_gate_this_plan_opens_is_the_holder_since_now_truncated() {
    let o = order();
    let replicas = [signalling("w1", 1), signalling("w2", 2)];
    let now = t(20) + chrono::Duration::milliseconds(700);
    let view = dispatched(&replicas, Some(&opening("w1")), now, &rules(&o)).expect("a view");
    assert_eq!(view.holder.as_deref(), Some("w1"));
    assert_eq!(view.holder_since.as_ref().map(to_chrono), Some(t(20)));
    assert_eq!(view.replicas[0].gate, Some(GateState::Open));
    assert_eq!(view.waiting, 1);
    assert_eq!(
        positions(&view),
        vec![("w1".into(), None), ("w2".into(), Some(1))]
    );
}

#[test]
fn the_view_does_not_depend_on_now_without_an_opening() {
    let o = order();
    let replicas = [open("w1", 0), signalling("w2", 2)];
    assert_eq!(
        dispatched(&replicas, None, t(5), &rules(&o)),
        dispatched(&replicas, None, t(500), &rules(&o))
    );
}

#[test]
fn the_order_is_the_policy_s() {
    let o = order();
    let cost = |victims| PreemptionCost {
        victims,
        highest_priority: 0,
        pods: 1,
        stop_seconds: None,
    };
    let replicas = [
        ReplicaView {
            cost: Some(cost(3)),
            ..signalling("w1", 1)
        },
        ReplicaView {
            cost: Some(cost(1)),
            ..signalling("w2", 2)
        },
        ReplicaView {
            cost: Some(cost(2)),
            ..signalling("w3", 3)
        },
    ];
    let least = Rules {
        policy: UngatingPolicy::LeastDisruption {
            window: Duration::from_secs(2),
        },
        ..rules(&o)
    };
    let view = dispatched(&replicas, None, t(3), &least).expect("a view");
    assert_eq!(
        positions(&view),
        vec![
            ("w1".into(), Some(3)),
            ("w2".into(), Some(1)),
            ("w3".into(), Some(2))
        ]
    );
    let fcfs = dispatched(&replicas, None, t(3), &rules(&o)).expect("a view");
    assert_eq!(
        positions(&fcfs),
        vec![
            ("w1".into(), Some(1)),
            ("w2".into(), Some(2)),
            ("w3".into(), Some(3))
        ]
    );
}

#[test]
fn a_signal_with_another_reason_is_shown_but_not_placed() {
    let o = order();
    let mut other = signalling("w1", 1);
    if let Some(s) = other.signal.as_mut() {
        s.reason = "Other".into();
    }
    let view = dispatched(&[other], None, t(3), &rules(&o)).expect("a view");
    assert_eq!(view.waiting, 0);
    assert_eq!(positions(&view), vec![("w1".into(), None)]);
    assert!(view.replicas[0].signalling_since.is_some());
}

#[test]
fn an_admitted_replica_is_marked() {
    let o = order();
    let replicas = [
        ReplicaView {
            admitted: true,
            ..open("w1", 0)
        },
        signalling("w2", 1),
    ];
    let view = dispatched(&replicas, None, t(3), &rules(&o)).expect("a view");
    assert!(view.replicas[0].admitted);
    // The rule opens nothing while a replica is admitted.
    assert_eq!(view.waiting, 0);
}

#[test]
fn a_win_marks_winner_and_removals_over_the_replicas_as_seen() {
    let o = order();
    let before = [open("w1", 0), signalling("w2", 1)];
    let last = dispatched(&before, None, t(3), &rules(&o));
    // w3 signalled since (not written yet), and w1 is admitted now.
    let now = [
        ReplicaView {
            admitted: true,
            ..open("w1", 0)
        },
        closed("w2"),
        signalling("w3", 4),
    ];
    let view = won(last.as_ref(), &now, "w1", &rules(&o)).expect("a view");
    assert_eq!(view.holder.as_deref(), Some("w1"));
    // w1 stopped signalling when admitted (its view had none either); w2's stays.
    assert_eq!(
        view.replicas[1].signalling_since.as_ref().map(to_chrono),
        Some(t(1))
    );
    assert_eq!(view.passes_after, None);
    assert_eq!(view.waiting, 0);
    let marks: Vec<(&str, bool, bool, Option<i32>)> = view
        .replicas
        .iter()
        .map(|r| (r.cluster.as_str(), r.admitted, r.removed, r.position))
        .collect();
    assert_eq!(
        marks,
        vec![
            ("w1", true, false, None),
            ("w2", false, true, None),
            ("w3", false, true, None)
        ]
    );
}

#[test]
fn a_win_by_a_replica_no_longer_seen_adds_it() {
    let o = order();
    let last = dispatched(&[signalling("w1", 1)], None, t(3), &rules(&o));
    let view = won(last.as_ref(), &[], "w2", &rules(&o)).expect("a view");
    assert_eq!(view.replicas.len(), 2);
    assert!(view.replicas[0].removed);
    assert!(view.replicas[1].admitted);
}

#[test]
fn a_win_without_a_view_writes_none() {
    let o = order();
    let replicas = [ReplicaView {
        admitted: true,
        ..closed("w1")
    }];
    assert_eq!(won(None, &replicas, "w1", &rules(&o)), None);
}

#[test]
fn a_change_that_keeps_the_holder_waits_until_the_opening_is_quiet() {
    let o = order();
    let last = dispatched(&[open("w1", 10), closed("w2")], None, t(10), &rules(&o));
    let next = dispatched(
        &[open("w1", 10), signalling("w2", 11)],
        None,
        t(11),
        &rules(&o),
    );
    assert_eq!(
        defer(last.as_ref(), next.as_ref(), t(12)),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        defer(last.as_ref(), next.as_ref(), t(15)),
        None,
        "quiet: write"
    );
    assert_eq!(
        defer(last.as_ref(), last.as_ref(), t(12)),
        None,
        "unchanged"
    );
}

#[test]
fn a_first_holder_waits_until_the_opening_is_quiet() {
    let o = order();
    let held = dispatched(
        &[open("w1", 10), signalling("w2", 11)],
        None,
        t(12),
        &rules(&o),
    );
    let waiting = dispatched(&[signalling("w2", 11)], None, t(11), &rules(&o));
    assert_eq!(
        defer(None, held.as_ref(), t(12)),
        Some(Duration::from_secs(3)),
        "no view yet"
    );
    assert_eq!(
        defer(waiting.as_ref(), held.as_ref(), t(12)),
        Some(Duration::from_secs(3)),
        "a view with nobody holding"
    );
    assert_eq!(defer(None, held.as_ref(), t(15)), None, "quiet: write");
    let opened_now = dispatched(
        &[signalling("w1", 12)],
        Some(&opening("w1")),
        t(12),
        &rules(&o),
    );
    assert_eq!(
        defer(None, opened_now.as_ref(), t(12)),
        Some(QUIET_AFTER_OPENING),
        "the gate this plan opens"
    );
}

#[test]
fn a_pass_a_reopening_a_view_without_holder_or_no_view_is_never_deferred() {
    let o = order();
    let w1 = dispatched(
        &[open("w1", 10), signalling("w2", 11)],
        None,
        t(12),
        &rules(&o),
    );
    let w2 = dispatched(&[open("w1", 10), open("w2", 12)], None, t(12), &rules(&o));
    let waiting = dispatched(&[signalling("w2", 11)], None, t(12), &rules(&o));
    assert_eq!(defer(w1.as_ref(), w2.as_ref(), t(12)), None, "a pass");
    assert_eq!(defer(w1.as_ref(), None, t(12)), None, "the view goes");
    assert_eq!(defer(None, waiting.as_ref(), t(12)), None, "nobody holds");
    assert_eq!(defer(waiting.as_ref(), waiting.as_ref(), t(12)), None);
    let reopened = dispatched(
        &[open("w1", 11), signalling("w2", 11)],
        None,
        t(12),
        &rules(&o),
    );
    assert_eq!(
        defer(w1.as_ref(), reopened.as_ref(), t(12)),
        None,
        "holder since moved"
    );
}

#[test]
fn a_view_sent_and_not_answered_was_pruned() {
    let o = order();
    let view = dispatched(&[signalling("w2", 11)], None, t(12), &rules(&o));
    assert!(pruned(view.as_ref(), None));
    assert!(!pruned(view.as_ref(), view.as_ref()));
    assert!(!pruned(None, None), "nothing sent");
}

#[test]
fn pass_time_saturates() {
    assert_eq!(
        pass_time(DateTime::<Utc>::MAX_UTC, Duration::from_secs(30)),
        None
    );
    assert_eq!(pass_time(t(0), Duration::MAX), None);
}
