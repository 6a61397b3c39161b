//! A builder for the ported Kueue cases: ClusterQueues with several resource groups,
//! flavors and resources, admitted workloads with their assignments, pending workloads with
//! pod sets. Quantities are whole units (cpus, GiB, GPUs).

use std::collections::HashMap;

use baton_crds::cluster_queue::{
    BorrowWithinCohortPolicy, ClusterQueuePreemption, FlavorFungibility, QueueingStrategy,
    ReclaimWithinCohort, WithinClusterQueue,
};
use baton_crds::quantity::Resources;
use k8s_openapi::api::core::v1::Taint;

use crate::admission::model::{
    AdmittedInput, AdmittedModel, FlavorModel, GroupModel, LimitInput, PendingModel, PodSetModel,
    QueueModel, QueueProblem, Snapshot, WorkloadModel,
};
use crate::admission::quota::Limits;
use crate::admission::tests::world::{at, key};
use crate::victims::VictimPolicy;

/// A pod set of a pending workload: (name, count, per-pod (resource, units)).
pub type PodSetSpec<'a> = (&'a str, i32, &'a [(&'a str, i128)]);

/// One quota: (resource, nominal, borrowing limit, lending limit).
pub type Quota = (&'static str, i128, Option<i128>, Option<i128>);

#[derive(Default, Clone)]
pub struct Kq {
    pub queues: Vec<QueueModel>,
    pub flavors: HashMap<String, FlavorModel>,
    pub limits: Vec<LimitInput>,
    pub admitted: Vec<AdmittedInput>,
    pub pending: Vec<PendingModel>,
}

/// Kueue's preemption defaults: `Never` everywhere.
pub fn never() -> ClusterQueuePreemption {
    ClusterQueuePreemption {
        within_cluster_queue: WithinClusterQueue::Never,
        reclaim_within_cohort: ReclaimWithinCohort::Never,
        ..Default::default()
    }
}

/// A policy: within the queue, reclaim in the cohort, `borrowWithinCohort` (threshold).
pub fn policy(
    within: WithinClusterQueue,
    reclaim: ReclaimWithinCohort,
    borrow: Option<Option<i32>>,
) -> ClusterQueuePreemption {
    let mut p = ClusterQueuePreemption {
        within_cluster_queue: within,
        reclaim_within_cohort: reclaim,
        ..Default::default()
    };
    if let Some(threshold) = borrow {
        p.borrow_within_cohort.policy = BorrowWithinCohortPolicy::LowerPriority;
        p.borrow_within_cohort.max_priority_threshold = threshold;
    }
    p
}

fn milli(units: i128) -> i128 {
    units * 1000
}

impl Kq {
    pub fn flavor(&mut self, name: &str) {
        self.flavors.entry(name.to_string()).or_default();
    }

    pub fn tainted_flavor(&mut self, name: &str, key: &str, value: &str) {
        self.flavors.insert(
            name.to_string(),
            FlavorModel {
                node_labels: Default::default(),
                node_taints: vec![Taint {
                    key: key.to_string(),
                    value: Some(value.to_string()),
                    effect: "NoSchedule".to_string(),
                    ..Default::default()
                }],
            },
        );
    }

    /// A ClusterQueue; each group is its flavors in order, each with its quotas (the group
    /// covers the resources its first flavor lists).
    pub fn cq(
        &mut self,
        name: &str,
        cohort: Option<&str>,
        preemption: ClusterQueuePreemption,
        groups: &[&[(&str, &[Quota])]],
    ) -> usize {
        let index = self.queues.len();
        let mut models = Vec::new();
        for group in groups {
            let covered = group
                .first()
                .map(|(_, quotas)| quotas.iter().map(|q| q.0.to_string()).collect())
                .unwrap_or_default();
            models.push(GroupModel {
                covered,
                flavors: group.iter().map(|(f, _)| f.to_string()).collect(),
            });
            for (flavor, quotas) in group.iter() {
                for &(resource, nominal, borrowing, lending) in quotas.iter() {
                    self.limits.push((
                        index,
                        flavor.to_string(),
                        resource.to_string(),
                        Limits {
                            nominal: milli(nominal),
                            borrowing_limit: borrowing.map(milli),
                            lending_limit: lending.map(milli),
                        },
                    ));
                }
            }
        }
        self.queues.push(QueueModel {
            name: name.to_string(),
            cohort: cohort.map(str::to_string),
            strategy: QueueingStrategy::BestEffortFIFO,
            groups: models,
            fungibility: FlavorFungibility::default(),
            preemption,
            inactive: None,
        });
        index
    }

    pub fn strict(&mut self, cq: &str) {
        let q = self.queue_index(cq);
        self.queues[q].strategy = QueueingStrategy::StrictFIFO;
    }

    pub fn fungibility(&mut self, cq: &str, fungibility: FlavorFungibility) {
        let q = self.queue_index(cq);
        self.queues[q].fungibility = fungibility;
    }

    /// Marks a ClusterQueue inactive, as the shell does when one of its flavors is missing.
    pub fn missing_flavor(&mut self, cq: &str, flavor: &str) {
        let q = self.queue_index(cq);
        self.queues[q].inactive = Some(QueueProblem {
            reason: "FlavorNotFound",
            message: format!("flavor {flavor} not found"),
        });
    }

    /// Closes a preemption gate of a pending workload.
    pub fn gate(&mut self, name: &str) {
        let key = key(&format!("ns/{name}"));
        for p in self.pending.iter_mut().filter(|p| p.workload.key == key) {
            p.gate_closed = true;
        }
    }

    pub fn queue_index(&self, name: &str) -> usize {
        match self.queues.iter().position(|q| q.name == name) {
            Some(i) => i,
            None => panic!("no ClusterQueue {name}"),
        }
    }

    /// An admitted workload (one pod set `main`) using (flavor, resource, units).
    pub fn admit(
        &mut self,
        name: &str,
        cq: &str,
        priority: i32,
        usage: &[(&str, &str, i128)],
        admitted_at: i64,
    ) {
        let mut total = Resources::new();
        for &(_, resource, units) in usage {
            total.add(resource, milli(units));
        }
        let queue = self.queue_index(cq);
        self.admitted.push((
            AdmittedModel {
                workload: model(name, priority, 0, vec![pod_set("main", 1, total)]),
                queue,
                usage: Vec::new(),
                admitted_at: at(admitted_at),
                evicting: false,
            },
            usage
                .iter()
                .map(|&(f, r, units)| (f.to_string(), r.to_string(), milli(units)))
                .collect(),
        ));
    }

    /// A pending workload; pod sets as (name, count, per-pod (resource, units)).
    pub fn submit(
        &mut self,
        name: &str,
        cq: &str,
        priority: i32,
        created: i64,
        pod_sets: &[PodSetSpec<'_>],
    ) {
        self.submit_scaled(name, cq, priority, created, pod_sets, milli);
    }

    /// `submit` with requests in milli-units.
    pub fn submit_milli(&mut self, name: &str, cq: &str, pod_sets: &[PodSetSpec<'_>]) {
        self.submit_scaled(name, cq, 0, 0, pod_sets, |m| m);
    }

    fn submit_scaled(
        &mut self,
        name: &str,
        cq: &str,
        priority: i32,
        created: i64,
        pod_sets: &[PodSetSpec<'_>],
        scale: fn(i128) -> i128,
    ) {
        let sets = pod_sets
            .iter()
            .map(|&(ps, count, requests)| {
                let mut total = Resources::new();
                for &(resource, units) in requests {
                    total.add(resource, scale(units) * i128::from(count));
                }
                pod_set(ps, count, total)
            })
            .collect();
        let queue = self.queue_index(cq);
        self.pending.push(PendingModel {
            workload: model(name, priority, created, sets),
            queue,
            gate_closed: false,
            victims_in_flight: Vec::new(),
            yields_to: None,
            held: None,
        });
    }

    /// A pending workload with one pod set `main` of one pod.
    pub fn submit1(&mut self, name: &str, cq: &str, priority: i32, requests: &[(&str, i128)]) {
        self.submit(name, cq, priority, 0, &[("main", 1, requests)]);
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(
            self.queues.clone(),
            self.flavors.clone(),
            self.limits.clone(),
            self.admitted.clone(),
            Vec::new(),
        )
    }
}

fn pod_set(name: &str, count: i32, total: Resources) -> PodSetModel {
    PodSetModel {
        name: name.to_string(),
        count,
        total,
        ..Default::default()
    }
}

fn model(name: &str, priority: i32, created: i64, pod_sets: Vec<PodSetModel>) -> WorkloadModel {
    WorkloadModel {
        key: key(&format!("ns/{name}")),
        namespace: "ns".to_string(),
        priority,
        created: at(created),
        pod_sets,
        policy: VictimPolicy::default_for(priority),
    }
}
