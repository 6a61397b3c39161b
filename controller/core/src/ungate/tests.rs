use super::*;
use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::gates::set_gate_state;
use baton_crds::workload::{PreemptionGate, WorkloadSpec, WorkloadStatus};
use chrono::TimeZone;
use proptest::prelude::*;

mod least_disruption;
mod props;
mod release;
mod room_expected;
mod soonest_room;

const TIMEOUT: Duration = Duration::from_secs(300);

fn t(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + seconds, 0)
        .single()
        .expect("valid")
}

fn order() -> Vec<String> {
    vec!["worker-1".into(), "worker-2".into(), "worker-3".into()]
}

fn replica(cluster: &str) -> ReplicaView {
    ReplicaView {
        cluster: cluster.into(),
        gate: Some(GateObservation {
            state: GateState::Closed,
            since: None,
        }),
        signal: None,
        admitted: false,
        cost: None,
        released: None,
    }
}

fn signalling(cluster: &str, since: i64) -> ReplicaView {
    ReplicaView {
        signal: Some(Signal {
            reason: reason::PREEMPTION_GATED.into(),
            since: t(since),
        }),
        ..replica(cluster)
    }
}

/// A signalling replica whose worker reports `c` as its preemption's cost.
fn costing(cluster: &str, since: i64, c: PreemptionCost) -> ReplicaView {
    ReplicaView {
        cost: Some(c),
        ..signalling(cluster, since)
    }
}

fn opened(mut r: ReplicaView, at: i64) -> ReplicaView {
    r.gate = Some(GateObservation {
        state: GateState::Open,
        since: Some(t(at)),
    });
    r
}

fn open_of(decision: &UngateDecision) -> Option<&str> {
    match decision {
        UngateDecision::Open { cluster, .. } => Some(cluster),
        _ => None,
    }
}

#[test]
fn nobody_signalling_means_nothing() {
    let replicas = [replica("worker-1"), replica("worker-2")];
    assert_eq!(
        decide(&replicas, &order(), t(0), TIMEOUT),
        UngateDecision::Nothing
    );
    assert_eq!(
        decide(&[], &order(), t(0), TIMEOUT),
        UngateDecision::Nothing
    );
}

#[test]
fn the_first_signaller_is_opened() {
    let replicas = [
        signalling("worker-2", 10),
        signalling("worker-1", 12),
        replica("worker-3"),
    ];
    let decision = decide(&replicas, &order(), t(20), TIMEOUT);
    assert_eq!(
        decision,
        UngateDecision::Open {
            cluster: "worker-2".into(),
            signalled_at: t(10),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::FirstSignaller { signalling: 2 },
        }
    );
}

#[test]
fn ties_go_by_cluster_order_then_name() {
    let replicas = [signalling("worker-3", 5), signalling("worker-2", 5)];
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(6), TIMEOUT)),
        Some("worker-2")
    );
    let reversed = vec!["worker-3".to_string(), "worker-2".to_string()];
    assert_eq!(
        open_of(&decide(&replicas, &reversed, t(6), TIMEOUT)),
        Some("worker-3")
    );
    // Clusters outside the configured order come after listed ones, then by name.
    let replicas = [
        signalling("zeta", 5),
        signalling("alpha", 5),
        signalling("worker-3", 5),
    ];
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(6), TIMEOUT)),
        Some("worker-3")
    );
    let replicas = [signalling("zeta", 5), signalling("alpha", 5)];
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(6), TIMEOUT)),
        Some("alpha")
    );
}

#[test]
fn a_recent_opening_makes_others_wait_for_the_remainder() {
    let replicas = [
        opened(signalling("worker-1", 0), 10),
        signalling("worker-2", 1),
    ];
    let decision = decide(&replicas, &order(), t(100), TIMEOUT);
    assert_eq!(
        decision,
        UngateDecision::Wait {
            requeue_after: Duration::from_secs(211),
            waiting: 1,
        }
    );
}

#[test]
fn after_the_timeout_the_baton_passes_on() {
    let replicas = [
        opened(signalling("worker-1", 0), 10),
        signalling("worker-2", 1),
    ];
    let decision = decide(&replicas, &order(), t(311), TIMEOUT);
    assert_eq!(
        decision,
        UngateDecision::Open {
            cluster: "worker-2".into(),
            signalled_at: t(1),
            previous_opened_at: Some(t(10)),
            previous_cluster: Some("worker-1".into()),
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::FirstSignaller { signalling: 1 },
        }
    );
    // One second earlier it still waits.
    assert!(matches!(
        decide(&replicas, &order(), t(309), TIMEOUT),
        UngateDecision::Wait { .. }
    ));
}

#[test]
fn the_latest_opening_counts() {
    let replicas = [
        opened(replica("worker-1"), 0),
        opened(replica("worker-2"), 400),
        signalling("worker-3", 1),
    ];
    match decide(&replicas, &order(), t(500), TIMEOUT) {
        UngateDecision::Wait { requeue_after, .. } => {
            assert_eq!(requeue_after, Duration::from_secs(201))
        }
        other => panic!("expected Wait, got {other:?}"),
    }
}

#[test]
fn an_admitted_replica_stops_all_ungating() {
    let mut winner = opened(replica("worker-1"), 0);
    winner.admitted = true;
    let replicas = [winner, signalling("worker-2", 1)];
    assert_eq!(
        decide(&replicas, &order(), t(10_000), TIMEOUT),
        UngateDecision::Nothing
    );
}

#[test]
fn other_reasons_and_gateless_replicas_are_not_candidates() {
    let mut other_reason = signalling("worker-1", 0);
    if let Some(s) = other_reason.signal.as_mut() {
        s.reason = "BorrowingGated".into();
    }
    let mut gateless = signalling("worker-2", 0);
    gateless.gate = None;
    assert_eq!(
        decide(&[other_reason, gateless], &order(), t(1), TIMEOUT),
        UngateDecision::Nothing
    );
}

#[test]
fn an_open_gate_that_still_signals_is_not_opened_again() {
    let replicas = [opened(signalling("worker-1", 0), 5)];
    assert_eq!(
        decide(&replicas, &order(), t(10_000), TIMEOUT),
        UngateDecision::Nothing
    );
}

#[test]
fn a_gate_open_in_the_future_waits_at_most_one_timeout() {
    let replicas = [
        opened(replica("worker-1"), 10_000),
        signalling("worker-2", 0),
    ];
    match decide(&replicas, &order(), t(0), TIMEOUT) {
        UngateDecision::Wait { requeue_after, .. } => assert_eq!(requeue_after, TIMEOUT),
        other => panic!("expected Wait, got {other:?}"),
    }
}

#[test]
fn a_changed_timeout_applies_to_the_next_decision() {
    let replicas = [opened(replica("worker-1"), 0), signalling("worker-2", 1)];
    assert!(matches!(
        decide(&replicas, &order(), t(60), TIMEOUT),
        UngateDecision::Wait { .. }
    ));
    assert_eq!(
        open_of(&decide(&replicas, &order(), t(60), Duration::from_secs(30))),
        Some("worker-2")
    );
}

fn workload_with(
    gate: Option<GateState>,
    conditions: &[(&str, ConditionStatus, &str)],
    at: DateTime<Utc>,
) -> Workload {
    let mut wl = Workload::new(
        "job",
        WorkloadSpec {
            preemption_gates: vec![PreemptionGate {
                name: MULTIKUEUE_GATE.into(),
            }],
            ..Default::default()
        },
    );
    let mut status = WorkloadStatus::default();
    if let Some(state) = gate {
        set_gate_state(&mut status, MULTIKUEUE_GATE, state, at);
    }
    for (type_, status_value, why) in conditions {
        set_condition(
            &mut status.conditions,
            NewCondition::new(*type_, *status_value, *why, ""),
            at,
        );
    }
    wl.status = Some(status);
    wl
}

#[test]
fn view_reads_baton_and_upstream_signals() {
    let wl = workload_with(
        None,
        &[(
            condition::QUOTA_RESERVATION_BLOCKED,
            ConditionStatus::True,
            "PreemptionGated",
        )],
        t(7),
    );
    let view = view_of("worker-1", &wl);
    assert_eq!(
        view.gate,
        Some(GateObservation {
            state: GateState::Closed,
            since: None
        })
    );
    assert_eq!(view.signal.as_ref().map(|s| s.since), Some(t(7)));
    assert!(!view.admitted);

    let upstream = workload_with(
        Some(GateState::Closed),
        &[(
            condition::BLOCKED_ON_PREEMPTION_GATES,
            ConditionStatus::True,
            "PreemptionGated",
        )],
        t(8),
    );
    assert_eq!(
        view_of("worker-2", &upstream).signal.map(|s| s.since),
        Some(t(8))
    );

    let cleared = workload_with(
        Some(GateState::Open),
        &[
            (
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::False,
                "QuotaReserved",
            ),
            (condition::ADMITTED, ConditionStatus::True, "Admitted"),
        ],
        t(9),
    );
    let view = view_of("worker-3", &cleared);
    assert!(view.signal.is_none());
    assert!(view.admitted);
    assert_eq!(view.gate.map(|g| g.state), Some(GateState::Open));
}

#[test]
fn view_of_a_replica_without_the_gate_has_none() {
    let wl = Workload::new("job", WorkloadSpec::default());
    assert_eq!(view_of("worker-1", &wl).gate, None);
}

// ---- properties ----

fn arb_replica(index: usize) -> impl Strategy<Value = ReplicaView> {
    (
        prop::option::weighted(0.9, (any::<bool>(), prop::option::of(0i64..1000))),
        prop::option::of((prop::bool::weighted(0.85), 0i64..1000)),
        prop::bool::weighted(0.05),
    )
        .prop_map(move |(gate, signal, admitted)| ReplicaView {
            cluster: format!("worker-{index}"),
            gate: gate.map(|(open, since)| GateObservation {
                state: if open {
                    GateState::Open
                } else {
                    GateState::Closed
                },
                since: since.map(t),
            }),
            signal: signal.map(|(gated, since)| Signal {
                reason: if gated {
                    reason::PREEMPTION_GATED.into()
                } else {
                    "Other".into()
                },
                since: t(since),
            }),
            admitted,
            cost: None,
            released: None,
        })
}

fn arb_replicas() -> impl Strategy<Value = Vec<ReplicaView>> {
    (1usize..6).prop_flat_map(|n| (0..n).map(arb_replica).collect::<Vec<_>>())
}

fn latest_open(replicas: &[ReplicaView]) -> Option<DateTime<Utc>> {
    replicas
        .iter()
        .filter_map(|r| r.gate.as_ref())
        .filter(|g| g.state == GateState::Open)
        .map(|g| g.since.unwrap_or(DateTime::<Utc>::MIN_UTC))
        .max()
}

fn is_candidate(r: &ReplicaView) -> bool {
    r.gate
        .as_ref()
        .is_some_and(|g| g.state == GateState::Closed)
        && r.signal
            .as_ref()
            .is_some_and(|s| s.reason == reason::PREEMPTION_GATED)
}

proptest! {
    #[test]
    fn never_opens_within_the_timeout_of_another_opening(replicas in arb_replicas(), now in 0i64..1500, timeout in 1u64..600) {
        let timeout = Duration::from_secs(timeout);
        if let UngateDecision::Open { .. } = decide(&replicas, &order(), t(now), timeout)
            && let Some(opened) = latest_open(&replicas)
        {
            // Counted from the latest instant the stored second can stand for.
            let real_latest = opened + chrono::Duration::from_std(STORED_TIME_PRECISION).expect("fits");
            prop_assert!(t(now).signed_duration_since(real_latest) >= chrono::Duration::from_std(timeout).expect("fits"));
        }
    }

    #[test]
    fn only_signalling_closed_replicas_are_opened(replicas in arb_replicas(), now in 0i64..1500) {
        if let UngateDecision::Open { cluster, .. } = decide(&replicas, &order(), t(now), TIMEOUT) {
            let chosen = replicas.iter().find(|r| r.cluster == cluster).expect("chosen replica exists");
            prop_assert!(is_candidate(chosen));
            prop_assert!(!replicas.iter().any(|r| r.admitted));
        }
    }

    #[test]
    fn the_earliest_signaller_is_opened_once_allowed(replicas in arb_replicas(), now in 0i64..1500) {
        let margin = chrono::Duration::from_std(STORED_TIME_PRECISION).expect("fits");
        let allowed = latest_open(&replicas).is_none_or(|o| t(now).signed_duration_since(o) - margin >= chrono::Duration::from_std(TIMEOUT).expect("fits"));
        let candidates: Vec<&ReplicaView> = replicas.iter().filter(|r| is_candidate(r)).collect();
        let decision = decide(&replicas, &order(), t(now), TIMEOUT);
        if allowed && !candidates.is_empty() && !replicas.iter().any(|r| r.admitted) {
            let earliest = candidates.iter().filter_map(|r| r.signal.as_ref()).map(|s| s.since).min().expect("some");
            match decision {
                UngateDecision::Open { signalled_at, .. } => prop_assert_eq!(signalled_at, earliest),
                other => prop_assert!(false, "expected an opening, got {:?}", other),
            }
        }
    }

    #[test]
    fn decision_depends_only_on_the_input_not_its_order(replicas in arb_replicas(), now in 0i64..1500, seed in any::<u64>()) {
        let mut shuffled = replicas.clone();
        // A deterministic permutation from the seed.
        let len = shuffled.len();
        for i in (1..len).rev() {
            shuffled.swap(i, (seed as usize).wrapping_mul(i + 7) % (i + 1));
        }
        prop_assert_eq!(decide(&replicas, &order(), t(now), TIMEOUT), decide(&shuffled, &order(), t(now), TIMEOUT));
    }

    #[test]
    fn wait_is_never_longer_than_the_timeout(replicas in arb_replicas(), now in 0i64..1500) {
        if let UngateDecision::Wait { requeue_after, waiting } = decide(&replicas, &order(), t(now), TIMEOUT) {
            prop_assert!(requeue_after <= TIMEOUT);
            prop_assert!(waiting >= 1);
        }
    }
}
