//! `ungatingPolicy: LeastDisruption`: every branch with a fake clock, and properties.

use super::*;
use crate::ungate::least_disruption::cheapness;

const WINDOW: Duration = Duration::from_secs(2);
const LD: UngatingPolicy = UngatingPolicy::LeastDisruption { window: WINDOW };

fn cost(victims: i32, highest_priority: i32, pods: i64) -> PreemptionCost {
    PreemptionCost {
        victims,
        highest_priority,
        pods,
        stop_seconds: None,
    }
}

fn ld(replicas: &[ReplicaView], now: i64) -> UngateDecision {
    decide_with_policy(replicas, &order(), t(now), TIMEOUT, LD)
}

#[test]
fn a_later_but_cheaper_signaller_wins_once_the_window_has_passed() {
    let replicas = [
        costing("worker-1", 10, cost(3, 5, 6)),
        costing("worker-2", 11, cost(1, 5, 2)),
        replica("worker-3"),
    ];
    // The window ends 2 s after the first stored signal, plus the second it may stand for.
    assert_eq!(
        ld(&replicas, 11),
        UngateDecision::Collect {
            requeue_after: Duration::from_secs(2),
            waiting: 2,
        }
    );
    assert!(matches!(ld(&replicas, 12), UngateDecision::Collect { .. }));
    assert_eq!(
        ld(&replicas, 13),
        UngateDecision::Open {
            cluster: "worker-2".into(),
            signalled_at: t(11),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::LeastDisruptive {
                cost: cost(1, 5, 2),
                signalling: 2,
            },
        }
    );
}

#[test]
fn the_window_closes_early_once_every_closed_replica_signals() {
    let replicas = [
        costing("worker-1", 10, cost(3, 5, 6)),
        costing("worker-2", 10, cost(2, 5, 6)),
        opened(replica("worker-3"), -1000),
    ];
    assert_eq!(open_of(&ld(&replicas, 10)), Some("worker-2"));
    // A gateless replica never signals either, so it does not hold the window open.
    let mut gateless = replica("worker-3");
    gateless.gate = None;
    let replicas = [costing("worker-1", 10, cost(1, 0, 1)), gateless];
    assert_eq!(open_of(&ld(&replicas, 10)), Some("worker-1"));
}

#[test]
fn a_replica_blocked_for_another_reason_may_still_signal() {
    let mut other = signalling("worker-2", 10);
    if let Some(s) = other.signal.as_mut() {
        s.reason = "Other".into();
    }
    let replicas = [costing("worker-1", 10, cost(1, 0, 1)), other];
    assert!(matches!(ld(&replicas, 11), UngateDecision::Collect { .. }));
    assert_eq!(open_of(&ld(&replicas, 13)), Some("worker-1"));
}

#[test]
fn costs_compare_victims_then_highest_priority_then_pods() {
    let pick = |a: PreemptionCost, b: PreemptionCost| {
        // worker-1 signals first: it wins only when strictly cheaper or equal.
        let replicas = [costing("worker-1", 10, a), costing("worker-2", 11, b)];
        open_of(&ld(&replicas, 20)).map(str::to_string)
    };
    assert_eq!(
        pick(cost(2, 0, 1), cost(1, 100, 50)).as_deref(),
        Some("worker-2")
    );
    assert_eq!(
        pick(cost(1, 100, 1), cost(2, 0, 1)).as_deref(),
        Some("worker-1")
    );
    assert_eq!(
        pick(cost(1, 10, 1), cost(1, 5, 50)).as_deref(),
        Some("worker-2")
    );
    assert_eq!(
        pick(cost(1, 5, 3), cost(1, 5, 2)).as_deref(),
        Some("worker-2")
    );
    assert_eq!(
        pick(cost(1, 5, 2), cost(1, 5, 3)).as_deref(),
        Some("worker-1")
    );
    // Equal costs: first come, first served.
    assert_eq!(
        pick(cost(1, 5, 2), cost(1, 5, 2)).as_deref(),
        Some("worker-1")
    );
}

#[test]
fn equal_costs_and_signal_times_go_by_cluster_order_then_name() {
    let c = cost(1, 1, 1);
    let replicas = [costing("worker-3", 5, c), costing("worker-2", 5, c)];
    assert_eq!(open_of(&ld(&replicas, 5)), Some("worker-2"));
    let reversed = vec!["worker-3".to_string(), "worker-2".to_string()];
    assert_eq!(
        open_of(&decide_with_policy(&replicas, &reversed, t(5), TIMEOUT, LD)),
        Some("worker-3")
    );
    let replicas = [costing("zeta", 5, c), costing("alpha", 5, c)];
    assert_eq!(open_of(&ld(&replicas, 5)), Some("alpha"));
}

#[test]
fn a_candidate_without_a_cost_makes_it_first_come_first_served_at_once() {
    let replicas = [
        signalling("worker-1", 10),
        costing("worker-2", 11, cost(0, 0, 0)),
        replica("worker-3"),
    ];
    // No window: the cost of an upstream worker cannot be compared.
    assert_eq!(
        ld(&replicas, 11),
        UngateDecision::Open {
            cluster: "worker-1".into(),
            signalled_at: t(10),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::FirstSignallerWithoutCost {
                signalling: 2,
                without_cost: 1,
            },
        }
    );
    // Even when the uncosted one signalled last.
    let replicas = [
        costing("worker-1", 10, cost(5, 5, 5)),
        costing("worker-2", 11, cost(1, 1, 1)),
        signalling("worker-3", 12),
    ];
    assert_eq!(open_of(&ld(&replicas, 12)), Some("worker-1"));
}

#[test]
fn the_timeout_rule_is_unchanged() {
    let replicas = [
        opened(costing("worker-1", 0, cost(9, 9, 9)), 10),
        costing("worker-2", 1, cost(2, 0, 2)),
        costing("worker-3", 2, cost(1, 0, 1)),
    ];
    assert_eq!(
        ld(&replicas, 100),
        UngateDecision::Wait {
            requeue_after: Duration::from_secs(211),
            waiting: 2,
        }
    );
    // When the baton passes on, the old signals' window is long over: the cheapest, at once.
    assert_eq!(
        ld(&replicas, 311),
        UngateDecision::Open {
            cluster: "worker-3".into(),
            signalled_at: t(2),
            previous_opened_at: Some(t(10)),
            previous_cluster: Some("worker-1".into()),
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::LeastDisruptive {
                cost: cost(1, 0, 1),
                signalling: 2,
            },
        }
    );
}

#[test]
fn nothing_and_admitted_are_unchanged() {
    assert_eq!(ld(&[replica("worker-1")], 0), UngateDecision::Nothing);
    let mut winner = opened(replica("worker-1"), 0);
    winner.admitted = true;
    let replicas = [winner, costing("worker-2", 1, cost(1, 1, 1))];
    assert_eq!(ld(&replicas, 10_000), UngateDecision::Nothing);
}

#[test]
fn first_come_first_served_ignores_costs() {
    let replicas = [
        costing("worker-1", 10, cost(9, 9, 9)),
        costing("worker-2", 11, cost(1, 1, 1)),
        replica("worker-3"),
    ];
    let fcfs = UngatingPolicy::FirstComeFirstServed;
    assert_eq!(
        decide_with_policy(&replicas, &order(), t(11), TIMEOUT, fcfs),
        decide(&replicas, &order(), t(11), TIMEOUT)
    );
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(11), TIMEOUT)),
        Some("worker-1")
    );
    assert_eq!(UngatingPolicy::default(), fcfs);
}

#[test]
fn a_huge_window_is_bounded_by_every_replica_signalling() {
    let policy = UngatingPolicy::LeastDisruption {
        window: Duration::MAX,
    };
    let replicas = [costing("worker-1", 10, cost(1, 1, 1)), replica("worker-2")];
    assert!(matches!(
        decide_with_policy(&replicas, &order(), t(11), TIMEOUT, policy),
        UngateDecision::Collect { .. }
    ));
    let replicas = [costing("worker-1", 10, cost(1, 1, 1))];
    assert_eq!(
        open_of(&decide_with_policy(
            &replicas,
            &order(),
            t(11),
            TIMEOUT,
            policy
        )),
        Some("worker-1")
    );
}

#[test]
fn view_reads_the_cost() {
    let mut wl = workload_with(
        Some(GateState::Closed),
        &[(
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::True,
            "PreemptionGated",
        )],
        t(7),
    );
    assert_eq!(view_of("worker-1", &wl).cost, None);
    if let Some(s) = wl.status.as_mut() {
        s.preemption_cost = Some(cost(2, 7, 4));
    }
    assert_eq!(view_of("worker-1", &wl).cost, Some(cost(2, 7, 4)));
}

#[test]
fn the_opening_message_says_why() {
    let at = t(0);
    let stamp = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(
        opening_message(
            "worker-2",
            at,
            &OpenReason::FirstSignaller { signalling: 3 }
        ),
        format!("opened preemption gate on worker-2; signalled first at {stamp}")
    );
    assert_eq!(
        opening_message(
            "worker-2",
            at,
            &OpenReason::LeastDisruptive {
                cost: cost(1, 10, 2),
                signalling: 3
            }
        ),
        format!(
            "opened preemption gate on worker-2: least disruptive of 3 signalling clusters (1 victim, highest priority 10, 2 pods); signalled at {stamp}"
        )
    );
    assert_eq!(
        opening_message(
            "worker-1",
            at,
            &OpenReason::LeastDisruptive {
                cost: cost(2, 0, 1),
                signalling: 1
            }
        ),
        format!(
            "opened preemption gate on worker-1: least disruptive of 1 signalling cluster (2 victims, highest priority 0, 1 pod); signalled at {stamp}"
        )
    );
    assert_eq!(
        opening_message(
            "worker-1",
            at,
            &OpenReason::FirstSignallerWithoutCost {
                signalling: 2,
                without_cost: 1
            }
        ),
        format!(
            "opened preemption gate on worker-1: first of 2 signalling clusters (1 reports no preemption cost, so first come, first served); signalled first at {stamp}"
        )
    );
}

// ---- properties ----

fn arb_costed_replicas() -> impl Strategy<Value = Vec<ReplicaView>> {
    arb_replicas().prop_flat_map(|replicas| {
        let n = replicas.len();
        (
            Just(replicas),
            prop::collection::vec(
                prop::option::weighted(0.85, (0i32..4, -2i32..3, 0i64..4)),
                n,
            ),
        )
            .prop_map(|(mut replicas, costs)| {
                for (r, c) in replicas.iter_mut().zip(costs) {
                    r.cost = c.map(|(v, p, pods)| cost(v, p, pods));
                }
                replicas
            })
    })
}

fn window_end(replicas: &[ReplicaView]) -> Option<DateTime<Utc>> {
    replicas
        .iter()
        .filter(|r| is_candidate(r))
        .filter_map(|r| r.signal.as_ref().map(|s| s.since))
        .min()
        .map(|first| {
            first + chrono::Duration::from_std(WINDOW + STORED_TIME_PRECISION).expect("fits")
        })
}

proptest! {
    #[test]
    fn least_disruption_never_opens_a_non_candidate(replicas in arb_costed_replicas(), now in 0i64..1500) {
        if let UngateDecision::Open { cluster, .. } = ld(&replicas, now) {
            let chosen = replicas.iter().find(|r| r.cluster == cluster).expect("chosen replica exists");
            prop_assert!(is_candidate(chosen));
            prop_assert!(!replicas.iter().any(|r| r.admitted));
        }
    }

    #[test]
    fn least_disruption_never_opens_within_the_timeout(replicas in arb_costed_replicas(), now in 0i64..1500, timeout in 1u64..600) {
        let timeout = Duration::from_secs(timeout);
        if let UngateDecision::Open { .. } = decide_with_policy(&replicas, &order(), t(now), timeout, LD)
            && let Some(opened) = latest_open(&replicas)
        {
            let real_latest = opened + chrono::Duration::from_std(STORED_TIME_PRECISION).expect("fits");
            prop_assert!(t(now).signed_duration_since(real_latest) >= chrono::Duration::from_std(timeout).expect("fits"));
        }
    }

    #[test]
    fn least_disruption_picks_a_minimal_cost_candidate(replicas in arb_costed_replicas(), now in 0i64..1500) {
        let candidates: Vec<&ReplicaView> = replicas.iter().filter(|r| is_candidate(r)).collect();
        match ld(&replicas, now) {
            UngateDecision::Open { cluster, why: OpenReason::LeastDisruptive { cost, signalling }, .. } => {
                prop_assert_eq!(signalling, candidates.len());
                prop_assert!(candidates.iter().all(|c| c.cost.is_some()));
                let chosen = candidates.iter().find(|r| r.cluster == cluster).expect("a candidate");
                prop_assert_eq!(chosen.cost, Some(cost));
                let cheapest = candidates.iter().filter_map(|c| c.cost).map(cheapness).min();
                prop_assert_eq!(Some(cheapness(cost)), cheapest);
            }
            UngateDecision::Open { cluster, why: OpenReason::FirstSignallerWithoutCost { without_cost, .. }, .. } => {
                prop_assert!(without_cost >= 1);
                prop_assert_eq!(Some(cluster), open_of(&decide(&replicas, &order(), t(now), TIMEOUT)).map(str::to_string));
            }
            UngateDecision::Open { why, .. } => prop_assert!(false, "unexpected reason {:?}", why),
            UngateDecision::AwaitRoom { .. } => prop_assert!(false, "no replica expects room"),
            UngateDecision::Collect { requeue_after, waiting } => {
                // Only while the window is open, and never longer than it.
                let end = window_end(&replicas).expect("a candidate");
                prop_assert!(t(now) < end);
                prop_assert!(requeue_after <= WINDOW + STORED_TIME_PRECISION);
                prop_assert_eq!(waiting, candidates.len());
                prop_assert!(candidates.iter().all(|c| c.cost.is_some()));
            }
            UngateDecision::Nothing | UngateDecision::Wait { .. } => {
                // The same as first come, first served: the policy only changes the choice.
                let fcfs = decide(&replicas, &order(), t(now), TIMEOUT);
                let held = matches!(fcfs, UngateDecision::Nothing | UngateDecision::Wait { .. });
                prop_assert!(held);
                prop_assert_eq!(ld(&replicas, now), fcfs);
            }
        }
    }

    #[test]
    fn least_disruption_opens_whenever_fcfs_would_once_the_window_passed(replicas in arb_costed_replicas(), now in 0i64..1500) {
        let fcfs = decide(&replicas, &order(), t(now), TIMEOUT);
        let past_window = window_end(&replicas).is_none_or(|end| t(now) >= end);
        if matches!(fcfs, UngateDecision::Open { .. }) && past_window {
            let opens = matches!(ld(&replicas, now), UngateDecision::Open { .. });
            prop_assert!(opens);
        }
    }

    #[test]
    fn first_come_first_served_policy_is_unchanged(replicas in arb_costed_replicas(), now in 0i64..1500) {
        let policy = decide_with_policy(&replicas, &order(), t(now), TIMEOUT, UngatingPolicy::FirstComeFirstServed);
        let mut costless = replicas.clone();
        for r in &mut costless {
            r.cost = None;
        }
        // Costs never change the FCFS decision.
        prop_assert_eq!(&policy, &decide(&costless, &order(), t(now), TIMEOUT));
        let collects = matches!(policy, UngateDecision::Collect { .. });
        prop_assert!(!collects);
        if let UngateDecision::Open { why, .. } = policy {
            prop_assert!(matches!(why, OpenReason::FirstSignaller { .. }), "{:?}", why);
        }
    }

    #[test]
    fn least_disruption_ignores_the_input_order(replicas in arb_costed_replicas(), now in 0i64..1500, seed in any::<u64>()) {
        let mut shuffled = replicas.clone();
        let len = shuffled.len();
        for i in (1..len).rev() {
            shuffled.swap(i, (seed as usize).wrapping_mul(i + 7) % (i + 1));
        }
        prop_assert_eq!(ld(&replicas, now), ld(&shuffled, now));
    }
}
