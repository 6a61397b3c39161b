//! Prefer admission without preemption: every branch of [`room_expected`] with a fake clock,
//! through the decision, and a property.

use super::*;
use crate::ungate::room_expected::{ROOM_EXPECTED_SLACK, Room, awaited};

const WINDOW: Duration = Duration::from_secs(2);
const SR: UngatingPolicy = UngatingPolicy::SoonestRoom { window: WINDOW };
const LD: UngatingPolicy = UngatingPolicy::LeastDisruption { window: WINDOW };

fn cost(victims: i32, stop: i64) -> PreemptionCost {
    PreemptionCost {
        victims,
        highest_priority: if victims == 0 { 0 } else { 10 },
        pods: i64::from(victims),
        stop_seconds: Some(stop),
    }
}

/// A candidate: signals `PreemptionGated` since `since` with one 3-second victim.
fn candidate(cluster: &str, since: i64) -> ReplicaView {
    ReplicaView {
        cost: Some(cost(1, 3)),
        ..signalling(cluster, since)
    }
}

/// Expects room without eviction since `since`, within `stop` seconds.
fn expecting(cluster: &str, since: i64, stop: i64) -> ReplicaView {
    ReplicaView {
        signal: Some(Signal {
            reason: reason::ROOM_EXPECTED.into(),
            since: t(since),
        }),
        cost: Some(cost(0, stop)),
        ..replica(cluster)
    }
}

fn with(policy: UngatingPolicy, replicas: &[ReplicaView], now: i64) -> UngateDecision {
    decide_with_policy(replicas, &order(), t(now), TIMEOUT, policy)
}

/// Fresh until `since + stop + 1 s (stored precision) + slack`.
fn fresh_until(since: i64, stop: i64) -> i64 {
    since + stop + 1 + ROOM_EXPECTED_SLACK.as_secs() as i64
}

#[test]
fn a_fresh_expectation_holds_the_opening_until_it_ends() {
    let replicas = [candidate("worker-1", 10), expecting("worker-2", 9, 20)];
    for policy in [SR, LD] {
        assert_eq!(
            with(policy, &replicas, 13),
            UngateDecision::AwaitRoom {
                cluster: "worker-2".into(),
                requeue_after: Duration::from_secs((fresh_until(9, 20) - 13) as u64),
                waiting: 1,
            },
            "{policy:?}"
        );
    }
}

#[test]
fn an_expectation_past_its_time_holds_nothing() {
    let replicas = [candidate("worker-1", 10), expecting("worker-2", 9, 20)];
    let at = fresh_until(9, 20);
    assert_eq!(open_of(&with(SR, &replicas, at)), Some("worker-1"));
    assert!(matches!(
        with(SR, &replicas, at - 1),
        UngateDecision::AwaitRoom { .. }
    ));
}

#[test]
fn fcfs_ignores_expectations() {
    let replicas = [candidate("worker-1", 10), expecting("worker-2", 9, 20)];
    assert_eq!(
        open_of(&with(UngatingPolicy::FirstComeFirstServed, &replicas, 10)),
        Some("worker-1")
    );
}

#[test]
fn a_hold_never_outlasts_the_earliest_signal_plus_the_timeout() {
    // Renewed expectations (a later `since`) cannot push the opening past one timeout.
    let timeout = TIMEOUT.as_secs() as i64;
    let replicas = [
        candidate("worker-1", 10),
        expecting("worker-2", 10 + timeout - 5, 60),
    ];
    assert_eq!(
        with(SR, &replicas, 10 + timeout - 1),
        UngateDecision::AwaitRoom {
            cluster: "worker-2".into(),
            requeue_after: Duration::from_secs(1),
            waiting: 1,
        }
    );
    assert_eq!(
        open_of(&with(SR, &replicas, 10 + timeout)),
        Some("worker-1")
    );
}

#[test]
fn the_latest_fresh_expectation_sets_the_hold() {
    let replicas = [
        candidate("worker-1", 10),
        expecting("worker-2", 9, 5),
        expecting("worker-3", 9, 30),
    ];
    assert_eq!(
        with(SR, &replicas, 12),
        UngateDecision::AwaitRoom {
            cluster: "worker-3".into(),
            requeue_after: Duration::from_secs((fresh_until(9, 30) - 12) as u64),
            waiting: 1,
        }
    );
}

#[test]
fn only_zero_victim_room_expected_signals_on_closed_gates_count() {
    // An Open gate holds the baton itself; a cost with victims is no expectation; another
    // reason is no expectation; nor is one without a cost or without a stop time.
    let open = opened(expecting("worker-2", 9, 20), 5);
    let with_victims = ReplicaView {
        cost: Some(cost(2, 20)),
        ..expecting("worker-2", 9, 20)
    };
    let other_reason = ReplicaView {
        signal: Some(Signal {
            reason: "Pending".into(),
            since: t(9),
        }),
        ..expecting("worker-2", 9, 20)
    };
    let no_cost = ReplicaView {
        cost: None,
        ..expecting("worker-2", 9, 20)
    };
    let no_stop = ReplicaView {
        cost: Some(PreemptionCost {
            stop_seconds: None,
            ..cost(0, 0)
        }),
        ..expecting("worker-2", 9, 20)
    };
    for other in [with_victims, other_reason, no_cost, no_stop] {
        let replicas = [candidate("worker-1", 10), other.clone()];
        assert_eq!(
            awaited(&replicas, t(10), t(12), TIMEOUT),
            Room::NotAwaited,
            "{other:?}"
        );
    }
    // The Open gate is the holder's: its timeout (not the expectation) makes others wait.
    let replicas = [candidate("worker-1", 10), open];
    assert_eq!(awaited(&replicas, t(10), t(12), TIMEOUT), Room::NotAwaited);
}

#[test]
fn an_expecting_replica_is_no_candidate_and_the_window_waits_for_it() {
    // Alone, it is not opened; with a candidate that signalled just now, the collection
    // window would wait anyway, but the expectation is what the decision names.
    let replicas = [expecting("worker-2", 9, 20)];
    assert_eq!(with(SR, &replicas, 12), UngateDecision::Nothing);
}

#[test]
fn a_release_does_not_bypass_a_fresh_expectation() {
    // worker-1 held the baton and gave it back; worker-3 expects room: nothing opens yet.
    let mut released = candidate("worker-1", 5);
    released.signal = None;
    released.released = Some(ReleaseReason::Insufficient);
    released.gate = Some(GateObservation {
        state: GateState::Closed,
        since: Some(t(11)),
    });
    let replicas = [
        released,
        candidate("worker-2", 6),
        expecting("worker-3", 10, 10),
    ];
    assert!(matches!(
        with(SR, &replicas, 12),
        UngateDecision::AwaitRoom { ref cluster, .. } if cluster == "worker-3"
    ));
}

proptest! {
    /// Whatever the replicas and the clock: a hold is announced only for a Closed replica
    /// that reports `RoomExpected` with zero victims, it ends no later than its expectation
    /// nor than the earliest signal plus the timeout, and it is never zero (so the manager
    /// looks again later, not in a loop).
    #[test]
    fn holds_are_bounded(
        since in prop::collection::vec(0_i64..400, 1..4),
        stops in prop::collection::vec(0_i64..120, 1..4),
        victims in prop::collection::vec(0_i32..2, 1..4),
        first in 0_i64..400,
        now in 0_i64..1200,
        timeout in 1_u64..600,
    ) {
        let timeout = Duration::from_secs(timeout);
        let mut replicas = vec![candidate("worker-1", first)];
        for (i, ((s, stop), v)) in since.iter().zip(&stops).zip(&victims).enumerate() {
            let mut r = expecting(&format!("worker-{}", i + 2), *s, *stop);
            r.cost = Some(cost(*v, *stop));
            replicas.push(r);
        }
        let decision = decide_with_policy(&replicas, &order(), t(now), timeout, SR);
        if let UngateDecision::AwaitRoom { cluster, requeue_after, .. } = decision {
            let r = replicas.iter().find(|r| r.cluster == cluster).expect("a replica");
            prop_assert_eq!(r.cost.map(|c| c.victims), Some(0));
            let signal = r.signal.as_ref().expect("a signal");
            let stop = r.cost.and_then(|c| c.stop_seconds).expect("a stop time");
            let ends = t(now) + chrono::Duration::from_std(requeue_after).expect("small");
            prop_assert!(requeue_after > Duration::ZERO);
            prop_assert!(ends <= t(fresh_until(0, stop)) + (signal.since - t(0)));
            prop_assert!(ends <= t(first) + chrono::Duration::from_std(timeout).expect("small"));
        }
    }
}
