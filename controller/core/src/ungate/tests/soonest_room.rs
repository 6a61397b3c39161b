//! `ungatingPolicy: SoonestRoom`: every branch with a fake clock, and a property.

use super::*;
use crate::ungate::soonest_room::SLACK_SECONDS;

const WINDOW: Duration = Duration::from_secs(2);
const SR: UngatingPolicy = UngatingPolicy::SoonestRoom { window: WINDOW };

fn cost(victims: i32, stop: Option<i64>) -> PreemptionCost {
    PreemptionCost {
        victims,
        highest_priority: 10,
        pods: i64::from(victims),
        stop_seconds: stop,
    }
}

fn sr(replicas: &[ReplicaView], now: i64) -> UngateDecision {
    decide_with_policy(replicas, &order(), t(now), TIMEOUT, SR)
}

#[test]
fn the_worker_whose_victims_stop_soonest_wins_over_the_first_signaller() {
    let replicas = [
        costing("worker-1", 10, cost(1, Some(30))),
        costing("worker-2", 11, cost(1, Some(3))),
    ];
    assert_eq!(
        sr(&replicas, 13),
        UngateDecision::Open {
            cluster: "worker-2".into(),
            signalled_at: t(11),
            previous_opened_at: None,
            previous_cluster: None,
            released_by: None,
            requeue_after: TIMEOUT,
            why: OpenReason::SoonestRoom {
                cost: cost(1, Some(3)),
                signalling: 2,
            },
        }
    );
}

#[test]
fn within_the_slack_the_cheapest_wins_then_the_soonest_then_the_first() {
    // worker-2 stops 4 s later than worker-1 (within the slack) but evicts one instead of
    // three: it wins. worker-3 is cheapest of all but 30 s slower: out of the slack.
    let replicas = [
        costing("worker-1", 10, cost(3, Some(2))),
        costing("worker-2", 10, cost(1, Some(2 + SLACK_SECONDS - 1))),
        costing("worker-3", 10, cost(0, Some(32))),
    ];
    assert_eq!(open_of(&sr(&replicas, 13)), Some("worker-2"));
    // Equal cost within the slack: the soonest.
    let replicas = [
        costing("worker-1", 10, cost(1, Some(6))),
        costing("worker-2", 11, cost(1, Some(4))),
    ];
    assert_eq!(open_of(&sr(&replicas, 13)), Some("worker-2"));
    // Equal everything: first come, first served.
    let replicas = [
        costing("worker-2", 10, cost(1, Some(4))),
        costing("worker-1", 11, cost(1, Some(4))),
    ];
    assert_eq!(open_of(&sr(&replicas, 13)), Some("worker-2"));
}

#[test]
fn a_candidate_without_a_stop_time_makes_it_first_come_first_served_at_once() {
    for missing in [None, Some(cost(1, None))] {
        let mut upstream = signalling("worker-1", 10);
        upstream.cost = missing;
        let replicas = [
            upstream,
            costing("worker-2", 11, cost(1, Some(1))),
            replica("worker-3"),
        ];
        assert_eq!(
            sr(&replicas, 11),
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
    }
}

#[test]
fn it_collects_for_the_window_while_a_replica_may_still_signal() {
    let replicas = [
        costing("worker-1", 10, cost(1, Some(30))),
        replica("worker-2"),
    ];
    assert_eq!(
        sr(&replicas, 10),
        UngateDecision::Collect {
            requeue_after: Duration::from_secs(3),
            waiting: 1,
        }
    );
    assert_eq!(open_of(&sr(&replicas, 13)), Some("worker-1"));
    // Everyone signalled: no need to wait.
    let replicas = [
        costing("worker-1", 10, cost(1, Some(30))),
        costing("worker-2", 10, cost(1, Some(3))),
    ];
    assert_eq!(open_of(&sr(&replicas, 10)), Some("worker-2"));
}

#[test]
fn the_timeout_and_releases_apply_as_under_fcfs() {
    let replicas = [
        opened(replica("worker-1"), 10),
        costing("worker-2", 11, cost(1, Some(3))),
    ];
    assert!(matches!(sr(&replicas, 20), UngateDecision::Wait { .. }));
    assert_eq!(open_of(&sr(&replicas, 311)), Some("worker-2"));
}

#[test]
fn negative_or_huge_stop_times_do_not_overflow() {
    let replicas = [
        costing("worker-1", 10, cost(1, Some(i64::MAX))),
        costing("worker-2", 10, cost(1, Some(-5))),
        costing("worker-3", 10, cost(1, Some(i64::MIN))),
    ];
    // Negative times count as 0: worker-2 and worker-3 tie, FCFS order by cluster.
    assert_eq!(open_of(&sr(&replicas, 13)), Some("worker-2"));
}

#[test]
fn the_opening_message_says_how_soon() {
    let message = opening_message(
        "worker-2",
        t(0),
        &OpenReason::SoonestRoom {
            cost: cost(2, Some(3)),
            signalling: 2,
        },
    );
    assert!(
        message.starts_with(
            "opened preemption gate on worker-2: victims gone soonest of 2 signalling clusters (3s, 2 victims, highest priority 10)"
        ),
        "{message}"
    );
}

proptest! {
    /// Once it opens, SoonestRoom opens a candidate whose stop time is within the slack of
    /// the soonest, and none within the slack is cheaper.
    #[test]
    fn soonest_room_opens_within_the_slack_and_the_cheapest_there(
        costs in prop::collection::vec((0_i32..5, 0_i64..90), 1..4),
    ) {
        let replicas: Vec<ReplicaView> = costs
            .iter()
            .enumerate()
            .map(|(i, &(v, s))| costing(&format!("worker-{}", i + 1), 10, cost(v, Some(s))))
            .collect();
        let decision = sr(&replicas, 100);
        let UngateDecision::Open { why: OpenReason::SoonestRoom { cost: chosen, .. }, .. } = decision else {
            return Err(TestCaseError::fail(format!("{decision:?}")));
        };
        let soonest = costs.iter().map(|c| c.1).min().unwrap_or(0);
        let stop = chosen.stop_seconds.unwrap_or(0);
        prop_assert!(stop <= soonest + SLACK_SECONDS);
        let cheapest_within = costs
            .iter()
            .filter(|c| c.1 <= soonest + SLACK_SECONDS)
            .map(|c| c.0)
            .min()
            .unwrap_or(0);
        prop_assert_eq!(chosen.victims, cheapest_within);
    }
}
