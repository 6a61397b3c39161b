//! Random cluster snapshots for the cycle's properties: a few ClusterQueues (with or without
//! a cohort, either strategy, any fungibility and preemption policy, sometimes inactive),
//! flavors that may be missing, tainted or labelled, admitted workloads (some evicting) and
//! pending ones (some gated, some waiting for victims in flight, some holding flavors). Quantities are small so
//! that preemption, borrowing and "does not fit" all happen often.

use std::collections::{BTreeMap, HashMap};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::{
    BorrowWithinCohort, BorrowWithinCohortPolicy, ClusterQueuePreemption, FlavorFungibility,
    FlavorFungibilityPreference, FungibilityPolicy, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use baton_crds::quantity::Resources;
use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use proptest::prelude::*;

use crate::admission::model::{
    AdmittedInput, AdmittedModel, FlavorModel, GroupModel, HeldFlavors, LimitInput, PendingModel,
    PodSetModel, QueueModel, QueueProblem, WorkloadModel,
};
use crate::admission::quota::Limits;
use crate::victims::VictimPolicy;

pub const CPU_FLAVORS: [&str; 2] = ["f0", "f1"];
pub const GPU_FLAVOR: &str = "g0";
const COHORTS: [&str; 2] = ["c0", "c1"];

pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + seconds, 0)
        .single()
        .unwrap_or_default()
}

pub fn now() -> DateTime<Utc> {
    at(1_000)
}

/// One random cluster: the inputs of `Snapshot::new` and of `schedule`.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub queues: Vec<QueueModel>,
    pub flavors: HashMap<String, FlavorModel>,
    pub limits: Vec<LimitInput>,
    pub admitted: Vec<AdmittedInput>,
    pub pending: Vec<PendingModel>,
}

fn strategy_of() -> impl Strategy<Value = QueueingStrategy> {
    prop_oneof![
        Just(QueueingStrategy::BestEffortFIFO),
        Just(QueueingStrategy::StrictFIFO)
    ]
}

fn fungibility() -> impl Strategy<Value = FlavorFungibility> {
    let policy = || {
        prop_oneof![
            Just(FungibilityPolicy::MayStopSearch),
            Just(FungibilityPolicy::TryNextFlavor)
        ]
    };
    (
        policy(),
        policy(),
        prop_oneof![
            2 => Just(None),
            1 => Just(Some(FlavorFungibilityPreference::BorrowingOverPreemption)),
            1 => Just(Some(FlavorFungibilityPreference::PreemptionOverBorrowing)),
        ],
    )
        .prop_map(
            |(when_can_borrow, when_can_preempt, preference)| FlavorFungibility {
                when_can_borrow,
                when_can_preempt,
                preference,
            },
        )
}

fn preemption() -> impl Strategy<Value = ClusterQueuePreemption> {
    (
        prop_oneof![
            1 => Just(WithinClusterQueue::Never),
            4 => Just(WithinClusterQueue::LowerPriority),
            2 => Just(WithinClusterQueue::LowerOrNewerEqualPriority)
        ],
        prop_oneof![
            Just(ReclaimWithinCohort::Never),
            Just(ReclaimWithinCohort::LowerPriority),
            Just(ReclaimWithinCohort::Any)
        ],
        prop_oneof![
            Just(BorrowWithinCohortPolicy::Never),
            Just(BorrowWithinCohortPolicy::LowerPriority)
        ],
        prop::option::of(-1..3_i32),
    )
        .prop_map(
            |(within, reclaim, borrow, threshold)| ClusterQueuePreemption {
                within_cluster_queue: within,
                reclaim_within_cohort: reclaim,
                borrow_within_cohort: BorrowWithinCohort {
                    policy: borrow,
                    max_priority_threshold: threshold,
                },
            },
        )
}

fn limits() -> impl Strategy<Value = Limits> {
    (
        prop_oneof![1 => Just(0_i128), 6 => 2..8_i128],
        prop::option::weighted(0.4, 0..4_i128),
        prop::option::weighted(0.3, 0..7_i128),
    )
        .prop_map(|(nominal, borrowing, lending)| Limits {
            nominal: nominal * 1000,
            borrowing_limit: borrowing.map(|b| b * 1000),
            // Kueue validates lendingLimit <= nominalQuota.
            lending_limit: lending.map(|l| l.min(nominal) * 1000),
        })
}

/// A queue with its quotas: a cpu group over some of `CPU_FLAVORS`, sometimes a gpu group.
fn queue(index: usize) -> impl Strategy<Value = (QueueModel, Vec<LimitInput>)> {
    (
        prop::option::weighted(0.7, 0..COHORTS.len()),
        strategy_of(),
        fungibility(),
        preemption(),
        prop_oneof![
            Just(vec![0]),
            Just(vec![1]),
            Just(vec![0, 1]),
            Just(vec![1, 0])
        ],
        prop::bool::weighted(0.5),
        prop::bool::weighted(0.05),
        prop::collection::vec((prop::bool::weighted(0.92), limits()), 3),
    )
        .prop_map(
            move |(cohort, strategy, fungibility, preemption, order, gpu, inactive, quotas)| {
                let cpu_flavors: Vec<String> =
                    order.iter().map(|&i| CPU_FLAVORS[i].to_string()).collect();
                let mut groups = vec![GroupModel {
                    covered: vec!["cpu".to_string()],
                    flavors: cpu_flavors.clone(),
                }];
                let mut pairs: Vec<(String, &str)> =
                    cpu_flavors.into_iter().map(|f| (f, "cpu")).collect();
                if gpu {
                    groups.push(GroupModel {
                        covered: vec!["gpu".to_string()],
                        flavors: vec![GPU_FLAVOR.to_string()],
                    });
                    pairs.push((GPU_FLAVOR.to_string(), "gpu"));
                }
                let limits = pairs
                    .into_iter()
                    .zip(quotas)
                    .filter(|(_, (defined, _))| *defined)
                    .map(|((flavor, resource), (_, l))| (index, flavor, resource.to_string(), l))
                    .collect();
                let model = QueueModel {
                    name: format!("cq{index}"),
                    cohort: cohort.map(|c| COHORTS[c].to_string()),
                    strategy,
                    groups,
                    fungibility,
                    preemption,
                    inactive: inactive.then(|| QueueProblem {
                        reason: "Stopped",
                        message: "stopped".to_string(),
                    }),
                };
                (model, limits)
            },
        )
}

fn flavors() -> impl Strategy<Value = HashMap<String, FlavorModel>> {
    (
        prop::bool::weighted(0.95),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(f1_exists, f1_tainted, f0_labelled)| {
            let mut flavors = HashMap::new();
            let mut f0 = FlavorModel::default();
            if f0_labelled {
                f0.node_labels.insert("zone".to_string(), "a".to_string());
            }
            flavors.insert(CPU_FLAVORS[0].to_string(), f0);
            if f1_exists {
                let mut f1 = FlavorModel::default();
                if f1_tainted {
                    f1.node_taints.push(Taint {
                        key: "spot".to_string(),
                        effect: "NoSchedule".to_string(),
                        ..Default::default()
                    });
                }
                flavors.insert(CPU_FLAVORS[1].to_string(), f1);
            }
            flavors.insert(GPU_FLAVOR.to_string(), FlavorModel::default());
            flavors
        })
}

fn pod_set(index: usize) -> impl Strategy<Value = PodSetModel> {
    (
        1..3_i32,
        prop_oneof![1 => Just(0_i128), 6 => 1..3_i128],
        prop::option::weighted(0.1, 1..3_i128),
        prop::bool::weighted(0.02),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.08),
    )
        .prop_map(move |(count, cpu, gpu, tpu, tolerates, zone_b)| {
            let mut total = Resources::new();
            total.add("cpu", cpu * 1000 * i128::from(count));
            if let Some(gpu) = gpu {
                total.add("gpu", gpu * 1000 * i128::from(count));
            }
            if tpu {
                total.add("tpu", 1000);
            }
            let mut node_selector = BTreeMap::new();
            if zone_b {
                node_selector.insert("zone".to_string(), "b".to_string());
            }
            let tolerations = if tolerates {
                vec![Toleration {
                    key: Some("spot".to_string()),
                    operator: Some("Exists".to_string()),
                    ..Default::default()
                }]
            } else {
                Vec::new()
            };
            PodSetModel {
                name: format!("ps{index}"),
                count,
                total,
                node_selector,
                tolerations,
                labels: BTreeMap::new(),
                grace_seconds: None,
            }
        })
}

fn policy(priority: i32) -> impl Strategy<Value = VictimPolicy> {
    prop_oneof![
        4 => Just(VictimPolicy::default_for(priority)),
        1 => (0..5_i32, prop_oneof![Just(-1_i64), Just(60)]).prop_map(move |(minimum, seconds)| {
            VictimPolicy {
                minimum_preemptable_priority: minimum,
                toleration_seconds: seconds,
                allow_disruption_by_priority_at_least: None,
            }
        }),
    ]
}

fn workload(
    key: WorkloadKey,
    priorities: std::ops::Range<i32>,
) -> impl Strategy<Value = WorkloadModel> {
    (priorities, 0..4_i64).prop_flat_map(move |(priority, created)| {
        let key = key.clone();
        (
            Just(priority),
            Just(created),
            prop::collection::vec(pod_set(0), 1..=1),
            prop::option::weighted(0.25, pod_set(1)),
            policy(priority),
        )
            .prop_map(move |(priority, created, mut pod_sets, second, policy)| {
                pod_sets.extend(second);
                WorkloadModel {
                    key: key.clone(),
                    namespace: "ns".to_string(),
                    priority,
                    created: at(created),
                    pod_sets,
                    policy,
                }
            })
    })
}

/// An admitted workload of one of `queues` queues, holding 1–5 cpus of a cpu flavor (rarely
/// one no queue defines) and sometimes a gpu.
fn admitted(index: usize, queues: usize) -> impl Strategy<Value = AdmittedInput> {
    (
        workload(WorkloadKey::new("ns", &format!("a{index}")), -1..3),
        0..queues,
        prop_oneof![
            10 => Just(CPU_FLAVORS[0]),
            10 => Just(CPU_FLAVORS[1]),
            1 => Just("gone"),
        ],
        2..6_i128,
        prop::option::weighted(0.2, 1..3_i128),
        prop::bool::weighted(0.1),
        0..900_i64,
    )
        .prop_map(
            |(workload, queue, flavor, cpu, gpu, evicting, admitted_at)| {
                let mut named = vec![(flavor.to_string(), "cpu".to_string(), cpu * 1000)];
                if let Some(gpu) = gpu {
                    named.push((GPU_FLAVOR.to_string(), "gpu".to_string(), gpu * 1000));
                }
                let model = AdmittedModel {
                    workload,
                    queue,
                    usage: Vec::new(),
                    admitted_at: at(admitted_at),
                    evicting,
                };
                (model, named)
            },
        )
}

/// The flavors a preemptor held since it preempted: a cpu flavor per pod set (not always one
/// its queue lists, nor one that fits any more) and the gpu flavor.
fn held() -> impl Strategy<Value = Option<HeldFlavors>> {
    prop::option::weighted(0.2, prop::collection::vec(0..CPU_FLAVORS.len(), 2)).prop_map(|choice| {
        choice.map(|flavors| {
            flavors
                .iter()
                .enumerate()
                .map(|(index, &f)| {
                    let resources = BTreeMap::from([
                        ("cpu".to_string(), CPU_FLAVORS[f].to_string()),
                        ("gpu".to_string(), GPU_FLAVOR.to_string()),
                    ]);
                    (format!("ps{index}"), resources)
                })
                .collect()
        })
    })
}

fn pending(index: usize, queues: usize) -> impl Strategy<Value = (PendingModel, Vec<u8>)> {
    (
        workload(WorkloadKey::new("ns", &format!("p{index}")), -1..5),
        0..queues,
        prop::bool::weighted(0.3),
        prop::collection::vec(0..40_u8, 8),
        held(),
    )
        .prop_map(|(workload, queue, gate_closed, in_flight, held)| {
            let model = PendingModel {
                workload,
                queue,
                gate_closed,
                victims_in_flight: Vec::new(),
                yields_to: None,
                held,
            };
            (model, in_flight)
        })
}

/// A whole cluster. A pending workload's victims in flight are drawn from the admitted ones
/// (mostly evicting ones, as the shell builds them), never shared between two preemptors.
pub fn cluster() -> impl Strategy<Value = Cluster> {
    (1..4_usize)
        .prop_flat_map(|n| {
            (
                (0..n).map(queue).collect::<Vec<_>>(),
                flavors(),
                (1..8_usize)
                    .prop_flat_map(move |k| (0..k).map(|i| admitted(i, n)).collect::<Vec<_>>()),
                (0..7_usize)
                    .prop_flat_map(move |k| (0..k).map(|i| pending(i, n)).collect::<Vec<_>>()),
            )
        })
        .prop_map(|(queues, flavors, admitted, pending)| {
            let mut limits = Vec::new();
            let mut models = Vec::new();
            for (model, l) in queues {
                models.push(model);
                limits.extend(l);
            }
            // Admitted workloads hold a flavor their queue lists (or one no queue defines).
            let admitted: Vec<AdmittedInput> = admitted
                .into_iter()
                .map(|(a, mut named)| {
                    let listed = &models[a.queue].groups[0].flavors;
                    for (flavor, resource, _) in &mut named {
                        if resource == "cpu" && flavor != "gone" && !listed.contains(flavor) {
                            *flavor = listed[0].clone();
                        }
                    }
                    (a, named)
                })
                .collect();
            let mut claimed = vec![false; admitted.len()];
            let pending = pending
                .into_iter()
                .map(|(mut p, in_flight)| {
                    for (i, (a, _)) in admitted.iter().enumerate() {
                        let draw = in_flight.get(i).copied().unwrap_or(9);
                        let wanted = draw == 0 || (a.evicting && draw < 20);
                        if wanted && !claimed[i] {
                            claimed[i] = true;
                            p.victims_in_flight.push(a.workload.key.clone());
                        }
                    }
                    p
                })
                .collect();
            Cluster {
                queues: models,
                flavors,
                limits,
                admitted,
                pending,
            }
        })
}
