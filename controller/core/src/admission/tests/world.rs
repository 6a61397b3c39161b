//! A small builder for snapshots in tests.

use std::collections::HashMap;

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::{
    ClusterQueuePreemption, FlavorFungibility, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use baton_crds::quantity::Resources;
use chrono::{DateTime, TimeZone, Utc};

use crate::admission::cycle::{Decision, schedule};
use crate::admission::model::{
    AdmittedInput, AdmittedModel, FlavorModel, GroupModel, LimitInput, PendingModel, PodSetModel,
    QueueModel, Snapshot, WorkloadModel,
};
use crate::admission::quota::Limits;
use crate::victims::VictimPolicy;

pub fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + seconds, 0)
        .single()
        .unwrap_or_default()
}

pub fn now() -> DateTime<Utc> {
    at(10_000)
}

/// A key from its text, `namespace/name`.
pub fn key(text: &str) -> WorkloadKey {
    text.parse().expect("a well-formed test key")
}

pub fn workload(text: &str, priority: i32, created: i64, cpu: i128) -> WorkloadModel {
    let mut total = Resources::new();
    total.add("cpu", cpu * 1000);
    WorkloadModel {
        key: key(text),
        namespace: "ns".to_string(),
        priority,
        created: at(created),
        pod_sets: vec![PodSetModel {
            name: "main".to_string(),
            count: 1,
            total,
            ..Default::default()
        }],
        policy: VictimPolicy::default_for(priority),
    }
}

#[derive(Default)]
pub struct World {
    pub queues: Vec<QueueModel>,
    pub flavors: HashMap<String, FlavorModel>,
    pub limits: Vec<LimitInput>,
    pub admitted: Vec<AdmittedInput>,
    pub pending: Vec<PendingModel>,
}

impl World {
    /// A queue with one resource group (cpu) over `flavors`, each with `nominal` cpus.
    pub fn queue(&mut self, name: &str, cohort: Option<&str>, flavors: &[(&str, i128)]) -> usize {
        let index = self.queues.len();
        self.queues.push(QueueModel {
            name: name.to_string(),
            cohort: cohort.map(str::to_string),
            strategy: QueueingStrategy::BestEffortFIFO,
            groups: vec![GroupModel {
                covered: vec!["cpu".to_string()],
                flavors: flavors.iter().map(|(f, _)| f.to_string()).collect(),
            }],
            fungibility: FlavorFungibility::default(),
            preemption: ClusterQueuePreemption {
                within_cluster_queue: WithinClusterQueue::LowerPriority,
                reclaim_within_cohort: ReclaimWithinCohort::Never,
                ..Default::default()
            },
            inactive: None,
        });
        for (flavor, nominal) in flavors {
            self.flavors.entry(flavor.to_string()).or_default();
            self.limits.push((
                index,
                flavor.to_string(),
                "cpu".to_string(),
                Limits {
                    nominal: nominal * 1000,
                    borrowing_limit: None,
                    lending_limit: None,
                },
            ));
        }
        index
    }

    pub fn limit(&mut self, queue: usize, borrowing: Option<i128>, lending: Option<i128>) {
        for (q, _, _, l) in &mut self.limits {
            if *q == queue {
                l.borrowing_limit = borrowing.map(|b| b * 1000);
                l.lending_limit = lending.map(|b| b * 1000);
            }
        }
    }

    pub fn admit(&mut self, queue: usize, flavor: &str, w: WorkloadModel, admitted_at: i64) {
        let cpu = w.pod_sets[0].total.get("cpu");
        self.admitted.push((
            AdmittedModel {
                workload: w,
                queue,
                usage: Vec::new(),
                admitted_at: at(admitted_at),
                evicting: false,
            },
            vec![(flavor.to_string(), "cpu".to_string(), cpu)],
        ));
    }

    pub fn submit(&mut self, queue: usize, w: WorkloadModel) {
        self.pending.push(PendingModel {
            workload: w,
            queue,
            gate_closed: false,
            victims_in_flight: Vec::new(),
            yields_to: None,
            held: None,
        });
    }

    pub fn submit_gated(&mut self, queue: usize, w: WorkloadModel) {
        self.submit(queue, w);
        if let Some(p) = self.pending.last_mut() {
            p.gate_closed = true;
        }
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

    pub fn run(&self) -> Vec<Decision> {
        let mut snapshot = self.snapshot();
        schedule(&mut snapshot, &self.pending, now())
    }
}

/// The decision for `key`, failing the test if there is none.
pub fn decision<'a>(decisions: &'a [Decision], key: &str) -> &'a Decision {
    match decisions.iter().find(|d| d.key == key) {
        Some(d) => d,
        None => panic!("no decision for {key}: {decisions:#?}"),
    }
}
