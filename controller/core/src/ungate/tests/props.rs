//! More properties of the ungating decision: total on extreme inputs (times at the ends of
//! chrono's range, zero and maximal timeouts and windows, duplicate or unknown cluster
//! names), and the baton over time: a run of decisions on a clock that may jump forwards or
//! backwards opens each gate at most once, in first-come-first-served order, never two within
//! the timeout, and nothing once a replica is admitted.

use super::*;

fn any_time() -> impl Strategy<Value = DateTime<Utc>> {
    prop_oneof![
        6 => (-2000_i64..4000).prop_map(t),
        1 => Just(DateTime::<Utc>::MIN_UTC),
        1 => Just(DateTime::<Utc>::MAX_UTC),
        1 => any::<i32>().prop_map(|s| t(i64::from(s) * 1000)),
    ]
}

fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => (0_u64..1000).prop_map(Duration::from_secs),
        1 => Just(Duration::ZERO),
        1 => Just(Duration::from_nanos(1)),
        1 => Just(Duration::MAX),
        1 => any::<u64>().prop_map(Duration::from_secs),
    ]
}

fn any_policy() -> impl Strategy<Value = UngatingPolicy> {
    prop_oneof![
        Just(UngatingPolicy::FirstComeFirstServed),
        any_duration().prop_map(|window| UngatingPolicy::LeastDisruption { window }),
        any_duration().prop_map(|window| UngatingPolicy::SoonestRoom { window }),
    ]
}

fn any_replica() -> impl Strategy<Value = ReplicaView> {
    (
        prop_oneof![Just("worker-1"), Just("worker-2"), Just("zeta"), Just("")],
        prop::option::weighted(
            0.9,
            (any::<bool>(), prop::option::weighted(0.8, any_time())),
        ),
        prop::option::weighted(
            0.7,
            (
                prop_oneof![
                    Just(reason::PREEMPTION_GATED),
                    Just(reason::ROOM_EXPECTED),
                    Just("Other"),
                    Just("")
                ],
                any_time(),
            ),
        ),
        prop::bool::weighted(0.05),
        prop::option::weighted(
            0.6,
            (
                any::<i32>(),
                any::<i32>(),
                any::<i64>(),
                prop::option::of(any::<i64>()),
            )
                .prop_map(|(v, p, pods, stop)| PreemptionCost {
                    victims: v,
                    highest_priority: p,
                    pods,
                    stop_seconds: stop,
                }),
        ),
        prop::option::weighted(0.3, prop::sample::select(ReleaseReason::ALL.to_vec())),
    )
        .prop_map(
            |(cluster, gate, signal, admitted, cost, released)| ReplicaView {
                cluster: cluster.to_string(),
                gate: gate.map(|(open, since)| GateObservation {
                    state: if open {
                        GateState::Open
                    } else {
                        GateState::Closed
                    },
                    since,
                }),
                signal: signal.map(|(reason, since)| Signal {
                    reason: reason.to_string(),
                    since,
                }),
                admitted,
                cost,
                released,
            },
        )
}

/// One step of the clock: how far it moves (sometimes backwards), and whether a replica
/// gets admitted at that moment.
fn steps() -> impl Strategy<Value = Vec<(i64, Option<usize>)>> {
    prop::collection::vec(
        (
            prop_oneof![6 => 0_i64..400, 1 => -120_i64..0],
            prop::option::weighted(0.03, 0_usize..4),
        ),
        1..40,
    )
}

proptest! {
    /// Never panics, whatever the times, durations, names and costs; every wait is bounded.
    #[test]
    fn decide_is_total_on_extreme_inputs(
        replicas in prop::collection::vec(any_replica(), 0..6),
        now in any_time(),
        timeout in any_duration(),
        policy in any_policy(),
    ) {
        let order = order();
        let decision = decide_with_policy(&replicas, &order, now, timeout, policy);
        prop_assert_eq!(&decision, &decide_with_policy(&replicas, &order, now, timeout, policy));
        match decision {
            UngateDecision::Wait { requeue_after, waiting } => {
                prop_assert!(requeue_after <= timeout);
                prop_assert!(waiting >= 1);
            }
            UngateDecision::Collect { requeue_after, waiting } => {
                let (UngatingPolicy::LeastDisruption { window }
                | UngatingPolicy::SoonestRoom { window }) = policy
                else {
                    return Err(TestCaseError::fail("Collect under FCFS"));
                };
                prop_assert!(requeue_after <= window.saturating_add(STORED_TIME_PRECISION));
                prop_assert!(waiting >= 1);
            }
            UngateDecision::Open { cluster, requeue_after, .. } => {
                prop_assert_eq!(requeue_after, timeout);
                prop_assert!(replicas.iter().any(|r| r.cluster == cluster && is_candidate(r)));
                prop_assert!(!replicas.iter().any(|r| r.admitted));
            }
            UngateDecision::AwaitRoom { requeue_after, waiting, .. } => {
                prop_assert!(policy.prefers_admission_without_preemption());
                prop_assert!(requeue_after <= timeout);
                prop_assert!(waiting >= 1);
            }
            UngateDecision::Nothing => {}
        }
    }

    /// The baton over time. Replicas signal at fixed times; each step moves the clock (even
    /// backwards), perhaps admits one replica, and applies an opening as the shell does (the
    /// gate becomes Open at `now`). Then: each gate opens at most once; in the order of the
    /// signals; two openings are at least the timeout plus the stored second apart on the
    /// manager's clock; nothing opens once a replica is admitted; and a waiting replica gets
    /// the baton as soon as the timeout allows.
    #[test]
    fn the_baton_passes_in_signal_order_once_per_timeout(
        signals in prop::collection::vec(0_i64..200, 1..5),
        timeout in 1_u64..300,
        steps in steps(),
    ) {
        let timeout = Duration::from_secs(timeout);
        let mut replicas: Vec<ReplicaView> = signals
            .iter()
            .enumerate()
            .map(|(i, &since)| signalling(&format!("worker-{}", i + 1), since))
            .collect();
        let mut now = 200_i64;
        let mut openings: Vec<(i64, DateTime<Utc>, String)> = Vec::new();
        let mut admitted = false;
        for (dt, admit) in steps {
            now += dt;
            if let Some(i) = admit.filter(|&i| i < replicas.len()) {
                replicas[i].admitted = true;
                admitted = true;
            }
            let decision = decide(&replicas, &order(), t(now), timeout);
            if let UngateDecision::Open { cluster, signalled_at, .. } = &decision {
                prop_assert!(!admitted, "opened {} after an admission", cluster);
                prop_assert!(!openings.iter().any(|(_, _, c)| c == cluster), "{} opened twice", cluster);
                if let Some((at, previous_signal, _)) = openings.last() {
                    prop_assert!(now - at > timeout.as_secs() as i64, "opened at {} after {}", now, at);
                    prop_assert!(signalled_at >= previous_signal, "FCFS order broken");
                }
                openings.push((now, *signalled_at, cluster.clone()));
                if let Some(r) = replicas.iter_mut().find(|r| &r.cluster == cluster) {
                    r.gate = Some(GateObservation { state: GateState::Open, since: Some(t(now)) });
                }
            } else if !admitted && replicas.iter().any(is_candidate) {
                let due = openings.last().is_none_or(|(at, _, _)| now - at > timeout.as_secs() as i64);
                prop_assert!(!due, "a replica waits although the timeout allows: {:?}", decision);
            }
        }
    }
}

#[test]
fn a_gate_stamped_at_the_end_of_time_with_a_huge_timeout_waits_without_overflow() {
    // Found by `decide_is_total_on_extreme_inputs`: `timeout - elapsed` overflowed.
    let mut far = opened(replica("worker-1"), 0);
    far.gate = Some(GateObservation {
        state: GateState::Open,
        since: Some(DateTime::<Utc>::MAX_UTC),
    });
    let replicas = [far, signalling("worker-2", 0)];
    assert_eq!(
        decide(&replicas, &order(), t(0), Duration::MAX),
        UngateDecision::Wait {
            requeue_after: Duration::MAX,
            waiting: 1,
        }
    );
}
