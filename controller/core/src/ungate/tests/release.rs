//! Release on failure: every branch with a fake clock, the wire reading, and properties
//! (the baton is held by one gate at a time; a released replica re-enters by its new signal).

use super::*;

/// A replica whose worker gave the baton back at `at` for `why` (its gate Closed again).
fn released(cluster: &str, at: i64, why: ReleaseReason) -> ReplicaView {
    ReplicaView {
        gate: Some(GateObservation {
            state: GateState::Closed,
            since: Some(t(at)),
        }),
        released: Some(why),
        ..replica(cluster)
    }
}

#[test]
fn a_holder_that_gives_the_baton_back_passes_it_at_once() {
    // worker-1 got the baton at 10, gave it back at 12: worker-2 need not wait until 310.
    let replicas = [
        released("worker-1", 12, ReleaseReason::NoCandidates),
        signalling("worker-2", 5),
    ];
    assert_eq!(
        decide(&replicas, &order(), t(12), TIMEOUT),
        UngateDecision::Open {
            cluster: "worker-2".into(),
            signalled_at: t(5),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: Some(Released {
                cluster: "worker-1".into(),
                reason: ReleaseReason::NoCandidates,
                at: t(12),
            }),
            requeue_after: TIMEOUT,
            why: OpenReason::FirstSignaller { signalling: 1 },
        }
    );
}

#[test]
fn without_a_release_the_holder_keeps_the_baton_until_the_timeout() {
    // Upstream Kueue: the holder stops signalling but its gate stays Open.
    let replicas = [opened(replica("worker-1"), 10), signalling("worker-2", 5)];
    assert!(matches!(
        decide(&replicas, &order(), t(12), TIMEOUT),
        UngateDecision::Wait { .. }
    ));
    // A Closed gate with a reason that is not a release (a victim's reset gate) is no
    // release either, and holds no baton: nothing to name.
    let mut reset = replica("worker-1");
    reset.gate = Some(GateObservation {
        state: GateState::Closed,
        since: Some(t(11)),
    });
    let decision = decide(
        &[reset, signalling("worker-2", 5)],
        &order(),
        t(12),
        TIMEOUT,
    );
    assert!(
        matches!(
            &decision,
            UngateDecision::Open {
                released_by: None,
                previous_opened_at: None,
                ..
            }
        ),
        "{decision:?}"
    );
}

#[test]
fn a_release_older_than_a_gate_opened_since_does_not_pass_the_baton() {
    // worker-1 gave the baton back at 12, worker-2 got it at 13: worker-3 waits for
    // worker-2's timeout.
    let replicas = [
        released("worker-1", 12, ReleaseReason::Insufficient),
        opened(replica("worker-2"), 13),
        signalling("worker-3", 20),
    ];
    assert_eq!(
        decide(&replicas, &order(), t(20), TIMEOUT),
        UngateDecision::Wait {
            requeue_after: TIMEOUT - Duration::from_secs(6),
            waiting: 1,
        }
    );
}

#[test]
fn a_release_after_an_old_timed_out_gate_still_passes_the_baton_at_once() {
    // worker-2 timed out at 10 and kept its (Open) gate; worker-1 got the baton at 311 and
    // gave it back at 320: worker-3 is opened at once, and the opening names the release,
    // not a timeout.
    let replicas = [
        released("worker-1", 320, ReleaseReason::QueueInactive),
        opened(replica("worker-2"), 10),
        signalling("worker-3", 300),
    ];
    let decision = decide(&replicas, &order(), t(320), TIMEOUT);
    let UngateDecision::Open {
        cluster,
        previous_opened_at,
        released_by,
        ..
    } = decision
    else {
        panic!("{decision:?}");
    };
    assert_eq!(cluster, "worker-3");
    assert_eq!(previous_opened_at, None);
    assert_eq!(released_by.map(|r| r.cluster), Some("worker-1".into()));
}

#[test]
fn a_released_replica_that_signals_again_reenters_by_its_new_signal_time() {
    // worker-1 gave the baton back, worker-2 has it; worker-1 signals again at 30, after
    // worker-3 (25): once worker-2 times out, worker-3 goes first.
    let mut again = signalling("worker-1", 30);
    again.gate = Some(GateObservation {
        state: GateState::Closed,
        since: Some(t(12)),
    });
    let replicas = [
        again,
        opened(replica("worker-2"), 12),
        signalling("worker-3", 25),
    ];
    assert!(matches!(
        decide(&replicas, &order(), t(40), TIMEOUT),
        UngateDecision::Wait { waiting: 2, .. }
    ));
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(320), TIMEOUT)),
        Some("worker-3")
    );
}

#[test]
fn a_release_with_no_one_waiting_opens_nothing() {
    let replicas = [
        released("worker-1", 12, ReleaseReason::NoCandidates),
        replica("worker-2"),
    ];
    assert_eq!(
        decide(&replicas, &order(), t(12), TIMEOUT),
        UngateDecision::Nothing
    );
}

#[test]
fn view_reads_a_release_only_from_a_closed_gate_and_a_false_signal_with_a_release_reason() {
    let cases = [
        // (gate, blocked condition status, reason, expected)
        (
            Some(GateState::Closed),
            ConditionStatus::False,
            "NoPreemptionCandidates",
            Some(ReleaseReason::NoCandidates),
        ),
        (
            Some(GateState::Closed),
            ConditionStatus::False,
            "PreemptionInsufficient",
            Some(ReleaseReason::Insufficient),
        ),
        (
            Some(GateState::Closed),
            ConditionStatus::False,
            "ClusterQueueInactive",
            Some(ReleaseReason::QueueInactive),
        ),
        // The gate is still Open: the worker did not give the baton back.
        (
            Some(GateState::Open),
            ConditionStatus::False,
            "NoPreemptionCandidates",
            None,
        ),
        // Any other reason (upstream's, Baton's own `QuotaReserved`).
        (
            Some(GateState::Closed),
            ConditionStatus::False,
            "QuotaReserved",
            None,
        ),
        // Signalling again.
        (
            Some(GateState::Closed),
            ConditionStatus::True,
            "PreemptionGated",
            None,
        ),
    ];
    for (gate, status, why, expected) in cases {
        let wl = workload_with(
            gate,
            &[(condition::QUOTA_RESERVATION_BLOCKED, status, why)],
            t(9),
        );
        assert_eq!(
            view_of("w", &wl).released,
            expected,
            "{gate:?} {status:?} {why}"
        );
    }
}

#[test]
fn release_reasons_read_back_what_they_write() {
    for r in ReleaseReason::ALL {
        assert_eq!(ReleaseReason::parse(r.as_str()), Some(r));
        assert_eq!(r.to_string(), r.as_str());
    }
    assert_eq!(ReleaseReason::parse("PreemptionGated"), None);
}

/// What a worker does at one step: `Some(true)`: signals anew (PreemptionGated, gate
/// Closed); `Some(false)`: if it holds the baton, gives it back; `None`: nothing.
fn worker_moves() -> impl Strategy<Value = Vec<(i64, usize, Option<bool>)>> {
    prop::collection::vec(
        (
            prop_oneof![4 => 0_i64..30, 1 => 0_i64..400],
            0_usize..4,
            prop::option::weighted(0.7, any::<bool>()),
        ),
        1..60,
    )
}

proptest! {
    /// Workers signal, hold the baton and give it back at random (flapping). Then: at most one
    /// gate that nobody gave back is Open and within its timeout at any time (never two
    /// holders); a release passes the baton at once to whoever waits; and the baton goes in
    /// signal order, a replica that signalled again counting from its new signal.
    #[test]
    fn the_baton_has_one_holder_and_releases_pass_it_in_new_signal_order(
        timeout in 1_u64..300,
        moves in worker_moves(),
    ) {
        let timeout = Duration::from_secs(timeout);
        let names = ["worker-1", "worker-2", "worker-3", "worker-4"];
        let mut replicas: Vec<ReplicaView> = names.iter().map(|n| replica(n)).collect();
        let mut now = 0_i64;
        // The holder: (cluster index, opened at).
        let mut holder: Option<(usize, i64)> = None;
        for (dt, who, what) in moves {
            now += dt;
            match what {
                Some(true)
                    if replicas[who].signal.is_none()
                        && replicas[who].gate.map(|g| g.state) != Some(GateState::Open) =>
                {
                    // Signals anew; a gate it once had is Closed again (it gave it back).
                    let since = replicas[who].gate.and_then(|g| g.since);
                    replicas[who].gate = Some(GateObservation { state: GateState::Closed, since });
                    replicas[who].released = None;
                    replicas[who].signal = Some(Signal {
                        reason: reason::PREEMPTION_GATED.into(),
                        since: t(now),
                    });
                }
                Some(false) if holder.map(|h| h.0) == Some(who) => {
                    replicas[who].gate = Some(GateObservation { state: GateState::Closed, since: Some(t(now)) });
                    replicas[who].released = Some(ReleaseReason::NoCandidates);
                    holder = None;
                }
                _ => {}
            }
            let waiting_before: Vec<(DateTime<Utc>, usize)> = replicas
                .iter()
                .enumerate()
                .filter(|(_, r)| is_candidate(r))
                .filter_map(|(i, r)| r.signal.as_ref().map(|s| (s.since, i)))
                .collect();
            let decision = decide(&replicas, &order(), t(now), timeout);
            if let UngateDecision::Open { cluster, signalled_at, .. } = &decision {
                let i = names.iter().position(|n| n == cluster).expect("known");
                // One holder: the previous one gave the baton back or timed out.
                if let Some((_, at)) = holder {
                    prop_assert!(now - at > timeout.as_secs() as i64, "two holders at {}", now);
                }
                // Signal order, by the current signals.
                let earliest = waiting_before.iter().map(|(s, _)| *s).min().expect("a candidate");
                prop_assert_eq!(*signalled_at, earliest);
                replicas[i].gate = Some(GateObservation { state: GateState::Open, since: Some(t(now)) });
                replicas[i].signal = None;
                holder = Some((i, now));
            } else if !waiting_before.is_empty() {
                // Someone waits: only a holder within its timeout may keep them waiting.
                let held = holder.is_some_and(|(_, at)| now - at <= timeout.as_secs() as i64);
                prop_assert!(held, "waits with no holder at {}: {:?}", now, decision);
            }
        }
    }
}
