//! One virtual worker cluster: its workloads (local ones and the manager's replicas) and
//! the snapshot its real admission cycle reads (one ClusterQueue over one flavor, CPUs only,
//! `withinClusterQueue: LowerPriority`, BestEffortFIFO: the shape of the sandbox's workers).

use std::collections::{BTreeMap, HashMap};

use baton_crds::cluster_queue::{
    ClusterQueuePreemption, FlavorFungibility, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use baton_crds::quantity::Resources;
use baton_crds::workload::PreemptionCost;
use chrono::{DateTime, TimeDelta, Utc};

use super::events::Millis;
use super::trace::{TraceWorkload, WorkerSpec};
use crate::worker::core::model::{
    AdmittedModel, FlavorModel, GroupModel, PendingModel, PodSetModel, QueueModel, Snapshot,
    WorkloadModel,
};
use crate::worker::core::quota::Limits;
use crate::worker::victims::VictimPolicy;

const FLAVOR: &str = "default";
const CPU: &str = "cpu";
const NAMESPACE: &str = "sim";

/// The virtual clock's instant `ms` as a wall-clock time (the decisions take `DateTime`s).
pub fn instant(ms: Millis) -> DateTime<Utc> {
    let start = DateTime::<Utc>::from_timestamp(1_767_225_600, 0).unwrap_or_default();
    start + TimeDelta::milliseconds(ms as i64)
}

/// Kubernetes stores condition and gate times floored to the second.
pub fn stored(ms: Millis) -> DateTime<Utc> {
    instant(ms - ms % 1000)
}

/// The key of a workload on a worker: local workloads by name, replicas by name and round
/// (a workload sent back to dispatch gets new replicas).
pub fn key(name: &str, round: Option<u32>) -> String {
    match round {
        None => format!("{NAMESPACE}/{name}"),
        Some(r) => format!("{NAMESPACE}/{name}~{r}"),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Pending,
    Admitted {
        at: Millis,
        /// Evicted; holds its quota until its pods have stopped.
        evicting: bool,
        /// Its pods run since then (a replica runs only once the manager made it the winner).
        running_since: Option<Millis>,
    },
}

/// A workload on one worker.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Index of the trace workload.
    pub wl: usize,
    /// `None` for a workload submitted on this worker; the dispatch round for a replica.
    pub round: Option<u32>,
    pub model: WorkloadModel,
    pub cpu_milli: i64,
    pub state: State,
    /// The MultiKueue gate is Closed (never for local workloads or uncoordinated replicas).
    pub gate_closed: bool,
    /// `QuotaReservationBlocked=True` (`PreemptionGated`) since then.
    pub signal_since: Option<Millis>,
    /// Victims it chose that still hold quota.
    pub in_flight: Vec<String>,
    /// The cost its worker reports with the signal (Baton's `status.preemptionCost`).
    pub cost: Option<PreemptionCost>,
    /// BestEffortFIFO set it aside (inadmissible): left out of cycles until its gate opens
    /// or its worker's used quota shrinks, as the worker's `core::queues` rules say.
    pub set_aside: bool,
    /// Bumped whenever its run is cut, so a stale finish event is ignored.
    pub epoch: u32,
}

impl Entry {
    pub fn new(
        wl: usize,
        w: &TraceWorkload,
        round: Option<u32>,
        created: Millis,
        gated: bool,
    ) -> Self {
        let mut total = Resources::new();
        total.add(CPU, i128::from(w.cpu_milli));
        Entry {
            wl,
            round,
            model: WorkloadModel {
                key: key(&w.name, round),
                namespace: NAMESPACE.to_string(),
                priority: w.priority,
                created: instant(created),
                pod_sets: vec![PodSetModel {
                    name: "main".to_string(),
                    count: w.pods as i32,
                    total,
                    ..Default::default()
                }],
                policy: VictimPolicy::default_for(w.priority),
            },
            cpu_milli: w.cpu_milli,
            state: State::Pending,
            gate_closed: gated,
            signal_since: None,
            in_flight: Vec::new(),
            cost: None,
            set_aside: false,
            epoch: 0,
        }
    }

    pub fn is_pending(&self) -> bool {
        self.state == State::Pending
    }
}

/// One worker cluster.
pub struct Worker {
    pub name: String,
    pub cpu_milli: i64,
    /// By key; a BTreeMap so that snapshots (and so runs) are deterministic.
    pub entries: BTreeMap<String, Entry>,
    /// A cycle is already scheduled.
    pub cycle_queued: bool,
    /// Quota held after the last cycle's admissions: set-aside workloads come back when
    /// less is held at the start of a cycle.
    pub used_after_last_cycle: i64,
    queue: QueueModel,
}

impl Worker {
    pub fn new(spec: &WorkerSpec) -> Self {
        Worker {
            name: spec.name.clone(),
            cpu_milli: spec.cpu_milli,
            entries: BTreeMap::new(),
            cycle_queued: false,
            used_after_last_cycle: 0,
            queue: QueueModel {
                name: "cq".to_string(),
                cohort: None,
                strategy: QueueingStrategy::BestEffortFIFO,
                groups: vec![GroupModel {
                    covered: vec![CPU.to_string()],
                    flavors: vec![FLAVOR.to_string()],
                }],
                fungibility: FlavorFungibility::default(),
                preemption: ClusterQueuePreemption {
                    within_cluster_queue: WithinClusterQueue::LowerPriority,
                    reclaim_within_cohort: ReclaimWithinCohort::Never,
                    ..Default::default()
                },
                inactive: None,
            },
        }
    }

    /// The snapshot and pending list the admission cycle reads, as `worker::build` makes
    /// them from the watch caches: admitted workloads (evicting ones included: they hold
    /// quota until gone) and active pending ones with their gate and in-flight victims.
    pub fn snapshot(&self) -> (Snapshot, Vec<PendingModel>) {
        let mut admitted = Vec::new();
        let mut pending = Vec::new();
        for e in self.entries.values() {
            match &e.state {
                State::Admitted { at, evicting, .. } => admitted.push((
                    AdmittedModel {
                        workload: e.model.clone(),
                        queue: 0,
                        usage: Vec::new(),
                        admitted_at: instant(*at),
                        evicting: *evicting,
                    },
                    vec![(FLAVOR.to_string(), CPU.to_string(), i128::from(e.cpu_milli))],
                )),
                State::Pending if e.set_aside => {}
                State::Pending => pending.push(PendingModel {
                    workload: e.model.clone(),
                    queue: 0,
                    gate_closed: e.gate_closed,
                    victims_in_flight: e
                        .in_flight
                        .iter()
                        .filter(|v| {
                            self.entries
                                .get(*v)
                                .is_some_and(|v| matches!(v.state, State::Admitted { .. }))
                        })
                        .cloned()
                        .collect(),
                }),
            }
        }
        let flavors = HashMap::from([(FLAVOR.to_string(), FlavorModel::default())]);
        let limits = vec![(
            0,
            FLAVOR.to_string(),
            CPU.to_string(),
            Limits {
                nominal: i128::from(self.cpu_milli),
                borrowing_limit: None,
                lending_limit: None,
            },
        )];
        let snapshot = Snapshot::new(
            vec![self.queue.clone()],
            flavors,
            limits,
            admitted,
            Vec::new(),
        );
        (snapshot, pending)
    }

    /// Quota held (evicting workloads included), in milli-CPUs.
    pub fn used_milli(&self) -> i64 {
        self.entries
            .values()
            .filter(|e| matches!(e.state, State::Admitted { .. }))
            .map(|e| e.cpu_milli)
            .sum()
    }
}
