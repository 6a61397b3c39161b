//! Random observations of one manager Workload: its own state (finalizer, deletion,
//! inactive, finished, won on a cluster, re-dispatched), the route's clusters (connected,
//! unreachable with what was last seen, or without a MultiKueueCluster), replicas in any
//! state (signalling, gate Open or Closed, admitted, evicted, finished, out of sync, stale)
//! with timestamps before, at or after `now` (clock skew), and the plan's settings.

use std::collections::BTreeMap;

use proptest::prelude::*;

use baton_core::dispatch::Dispatcher;
use baton_core::ungate;
use baton_crds::workload::PreemptionCost;

use super::super::*;

pub const CLUSTERS: [&str; 3] = ["w1", "w2", "w3"];

/// Everything `plan` reads, owned.
#[derive(Clone, Debug)]
pub struct World {
    pub workload: Workload,
    pub routed: bool,
    pub clusters: Vec<ClusterView>,
    pub replicas: BTreeMap<String, Workload>,
    pub now: i64,
    pub config: LifecycleConfig,
}

/// A time around the window `now` is drawn from (0..2000), sometimes far off.
fn when() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -200..2200_i64,
        1 => Just(-1_000_000_i64),
        1 => Just(10_000_000_i64),
    ]
}

fn config() -> impl Strategy<Value = LifecycleConfig> {
    (
        prop::bool::weighted(0.85),
        0..1200_u64,
        prop_oneof![1 => Just(0_u64), 6 => 1..600_u64],
        prop::option::weighted(0.25, (0..3_u32, 0..300_u64)),
        prop::option::weighted(0.25, 0..5_u64),
    )
        .prop_map(|(orchestrated, lost, timeout, incremental, window)| {
            let dispatcher = match incremental {
                None => Dispatcher::default(),
                Some((per_round, round)) => Dispatcher::Incremental {
                    clusters_per_round: per_round,
                    round_timeout: Duration::from_secs(round),
                },
            };
            LifecycleConfig {
                orchestrated,
                worker_lost_timeout: Duration::from_secs(lost),
                preemption_timeout: Duration::from_secs(timeout),
                dispatcher,
                ungating_policy: match window {
                    None => ungate::UngatingPolicy::FirstComeFirstServed,
                    Some(w) => ungate::UngatingPolicy::LeastDisruption {
                        window: Duration::from_secs(w),
                    },
                },
            }
        })
}

fn set(status: &mut WorkloadStatus, type_: &str, value: ConditionStatus, why: &str, at: i64) {
    set_condition(
        &mut status.conditions,
        NewCondition::new(type_, value, why, ""),
        t(at),
    );
}

/// A replica as a worker may show it.
fn replica_in_any_state() -> impl Strategy<Value = Workload> {
    (
        (
            prop::option::weighted(0.9, when()),
            prop::bool::weighted(0.08),
            prop::bool::weighted(0.04),
        ),
        prop::option::weighted(0.6, (prop::bool::weighted(0.2), when())),
        prop::option::weighted(0.6, (prop::bool::weighted(0.92), when())),
        prop::option::weighted(0.2, (prop::bool::weighted(0.8), when())),
        (
            prop::bool::weighted(0.1),
            prop::bool::weighted(0.05),
            when(),
        ),
        prop::option::weighted(0.2, (0..4_i32, 0..3_i32)),
    )
        .prop_map(
            |(
                (created, gateless, out_of_sync),
                gate,
                signal,
                admitted,
                (evicted, finished, at),
                cost,
            )| {
                let mut r = build_replica(
                    &manager(),
                    None,
                    "multikueue",
                    baton_core::ungate::ReplicaGating::Gated,
                );
                r.metadata.creation_timestamp = created.map(|c| to_kube(t(c)));
                if gateless {
                    r.spec.preemption_gates.clear();
                }
                if out_of_sync {
                    r.spec.queue_name = Some("another-queue".into());
                }
                let status = r.status.get_or_insert_with(Default::default);
                // No entry: a Closed gate never written to.
                if let Some((open, since)) = gate {
                    let state = if open {
                        GateState::Open
                    } else {
                        GateState::Closed
                    };
                    set_gate_state(status, MULTIKUEUE_GATE, state, t(since));
                }
                if let Some((gated, since)) = signal {
                    let why = if gated {
                        reason::PREEMPTION_GATED
                    } else {
                        "Other"
                    };
                    set(
                        status,
                        condition::QUOTA_RESERVATION_BLOCKED,
                        ConditionStatus::True,
                        why,
                        since,
                    );
                }
                if let Some((admitted, since)) = admitted {
                    set(
                        status,
                        condition::QUOTA_RESERVED,
                        ConditionStatus::True,
                        "QuotaReserved",
                        since,
                    );
                    let value = if admitted {
                        ConditionStatus::True
                    } else {
                        ConditionStatus::False
                    };
                    set(status, condition::ADMITTED, value, "Admitted", since);
                    status.admission = Some(Admission {
                        cluster_queue: "worker-cq".into(),
                        pod_set_assignments: vec![],
                    });
                }
                if evicted {
                    set(
                        status,
                        condition::EVICTED,
                        ConditionStatus::True,
                        "Preempted",
                        at,
                    );
                }
                if finished {
                    set(
                        status,
                        condition::FINISHED,
                        ConditionStatus::True,
                        "Succeeded",
                        at,
                    );
                }
                status.preemption_cost = cost.map(|(victims, pods)| PreemptionCost {
                    victims,
                    highest_priority: 0,
                    pods: i64::from(pods),
                    stop_seconds: None,
                });
                r
            },
        )
}

fn cluster_state() -> impl Strategy<Value = Option<(ClusterState, Option<Workload>)>> {
    let unreachable = (
        when(),
        prop_oneof![
            2 => Just(None),
            3 => replica_in_any_state()
                .prop_map(|r| Some(LastKnown::Seen(Some(ungate::view_of("down", &r))))),
            1 => Just(Some(LastKnown::Seen(None))),
        ],
    )
        .prop_map(|(since, last_known)| {
            let last_known = last_known.unwrap_or(LastKnown::NeverSeen);
            (
                ClusterState::Unreachable {
                    since: t(since),
                    last_known,
                },
                None,
            )
        });
    let active = prop::option::weighted(0.75, replica_in_any_state())
        .prop_map(|replica| (ClusterState::Active, replica));
    prop_oneof![
        1 => Just(None),
        6 => active.prop_map(Some),
        2 => unreachable.prop_map(Some),
    ]
}

fn manager_in_any_state() -> impl Strategy<Value = Workload> {
    (
        (
            prop::bool::weighted(0.85),
            prop::option::weighted(0.1, when()),
            prop::bool::weighted(0.93),
        ),
        prop::option::weighted(
            0.25,
            prop_oneof![Just("w1"), Just("w2"), Just("w3"), Just("w9")],
        ),
        (
            prop::bool::weighted(0.08),
            prop::option::weighted(0.2, when()),
        ),
        prop::option::weighted(0.5, (0..3_usize, when())),
        prop::option::weighted(0.3, when()),
    )
        .prop_map(
            |((finalizer, deleted, active), winner, (finished, redispatched), check, reserved)| {
                let mut wl = manager();
                if !finalizer {
                    wl.metadata.finalizers = None;
                }
                wl.metadata.deletion_timestamp = deleted.map(|d| to_kube(t(d)));
                wl.spec.active = active;
                let status = wl.status.get_or_insert_with(Default::default);
                status.cluster_name = winner.map(str::to_string);
                if finished {
                    set(
                        status,
                        condition::FINISHED,
                        ConditionStatus::True,
                        "Succeeded",
                        0,
                    );
                }
                if let Some(at) = redispatched {
                    set(
                        status,
                        condition::REQUEUED,
                        ConditionStatus::True,
                        "Redispatched",
                        at,
                    );
                }
                if let Some((state, at)) = check {
                    let state = [CheckState::Pending, CheckState::Ready, CheckState::Retry][state];
                    set_check(status, "mk", state, "earlier".into(), t(at));
                }
                if let Some(at) = reserved {
                    set(
                        status,
                        condition::QUOTA_RESERVED,
                        ConditionStatus::True,
                        "QuotaReserved",
                        at,
                    );
                    set(
                        status,
                        condition::ADMITTED,
                        ConditionStatus::True,
                        "Admitted",
                        at,
                    );
                }
                wl
            },
        )
}

pub fn world() -> impl Strategy<Value = World> {
    (
        manager_in_any_state(),
        prop::bool::weighted(0.92),
        prop::collection::vec(cluster_state(), CLUSTERS.len()),
        0..2000_i64,
        config(),
    )
        .prop_map(|(workload, routed, states, now, config)| {
            let mut clusters = Vec::new();
            let mut replicas = BTreeMap::new();
            for (name, state) in CLUSTERS.iter().zip(states) {
                let Some((state, replica)) = state else {
                    continue;
                };
                clusters.push(ClusterView {
                    name: name.to_string(),
                    state,
                });
                if let Some(r) = replica {
                    replicas.insert(name.to_string(), r);
                }
            }
            World {
                workload,
                routed,
                clusters,
                replicas,
                now,
                config,
            }
        })
}
