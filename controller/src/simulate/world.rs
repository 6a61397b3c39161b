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
use crate::admission::core::model::{
    AdmittedModel, FlavorModel, GroupModel, HeldFlavors, PendingModel, PodSetModel, QueueModel,
    Snapshot, WorkloadModel,
};
use crate::admission::core::quota::{FrId, Limits};
use crate::admission::victims::VictimPolicy;

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
    /// What the admission cycle reads while it is pending, kept between cycles so that a
    /// cycle does not clone it: the workload, `gate_closed` (the MultiKueue gate is Closed;
    /// never for local workloads or uncoordinated replicas) and `victims_in_flight`
    /// (refreshed from `in_flight` before each cycle).
    pub pending: PendingModel,
    pub cpu_milli: i64,
    pub state: State,
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
    /// While it is being evicted: its index in the run's evictions.
    pub eviction: Option<usize>,
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
            pending: PendingModel {
                workload: WorkloadModel {
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
                queue: 0,
                gate_closed: gated,
                victims_in_flight: Vec::new(),
                yields_to: None,
                // Set with `victims_in_flight` (one flavor, one pod set: the greedy choice is
                // the one it preempted for).
                held: None,
            },
            cpu_milli: w.cpu_milli,
            state: State::Pending,
            signal_since: None,
            in_flight: Vec::new(),
            cost: None,
            set_aside: false,
            epoch: 0,
            eviction: None,
        }
    }

    pub fn key(&self) -> &str {
        &self.pending.workload.key
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
    /// When the last victim left and whom it was evicted for.
    pub last_victim_gone: Option<(Millis, usize)>,
    /// The snapshot without admitted workloads.
    base: Snapshot,
    /// The (flavor, cpu) pair in `base`.
    cpu: FrId,
    /// The admitted workloads' models, in key order, kept between cycles.
    admitted: Vec<AdmittedModel>,
}

impl Worker {
    pub fn new(spec: &WorkerSpec) -> Self {
        let queue = QueueModel {
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
        };
        let flavors = HashMap::from([(FLAVOR.to_string(), FlavorModel::default())]);
        let limits = vec![(
            0,
            FLAVOR.to_string(),
            CPU.to_string(),
            Limits {
                nominal: i128::from(spec.cpu_milli),
                borrowing_limit: None,
                lending_limit: None,
            },
        )];
        // Everything but the admitted workloads, built once.
        let base = Snapshot::new(vec![queue], flavors, limits, Vec::new(), Vec::new());
        let cpu = base.frs.get(FLAVOR, CPU).unwrap_or_default();
        Worker {
            name: spec.name.clone(),
            cpu_milli: spec.cpu_milli,
            entries: BTreeMap::new(),
            cycle_queued: false,
            used_after_last_cycle: 0,
            last_victim_gone: None,
            base,
            cpu,
            admitted: Vec::new(),
        }
    }

    /// The snapshot and pending list the admission cycle reads, as `admission::build` makes
    /// them from the watch caches: admitted workloads (evicting ones included: they hold
    /// quota until gone) and active pending ones with their gate and in-flight victims.
    /// The snapshot takes the worker's admitted models; `restore` gives them back.
    ///
    /// Set-aside workloads come back first when less quota is held than after the last cycle.
    pub fn snapshot(&mut self) -> (Snapshot, Vec<&PendingModel>) {
        self.refresh_victims_in_flight();
        self.sync_admitted();
        // What `used_milli` says, from the admitted models instead of every entry.
        let used: i128 = self
            .admitted
            .iter()
            .flat_map(|m| &m.usage)
            .map(|u| u.1)
            .sum();
        if used < i128::from(self.used_after_last_cycle) {
            self.entries.values_mut().for_each(|e| e.set_aside = false);
        }
        let mut snapshot = self.base.clone();
        for model in std::mem::take(&mut self.admitted) {
            snapshot.push_admitted(model);
        }
        let pending = self
            .entries
            .values()
            .filter(|e| e.is_pending() && !e.set_aside)
            .map(|e| &e.pending)
            .collect();
        (snapshot, pending)
    }

    /// Takes back the admitted models `snapshot` took (a cycle changes only its quota).
    pub fn restore(&mut self, snapshot: Snapshot) {
        self.admitted = snapshot.admitted;
    }

    /// Brings the kept admitted models in step with the entries, in key order, reusing the
    /// models of workloads still admitted: cloning every admitted workload for every cycle
    /// was most of the cost of a snapshot.
    fn sync_admitted(&mut self) {
        let mut old = std::mem::take(&mut self.admitted).into_iter().peekable();
        let mut admitted = Vec::with_capacity(old.len() + 8);
        for e in self.entries.values() {
            let State::Admitted { at, evicting, .. } = &e.state else {
                continue;
            };
            while old.next_if(|m| m.workload.key.as_str() < e.key()).is_some() {}
            let mut model = match old.next_if(|m| m.workload.key == e.key()) {
                Some(model) => model,
                None => AdmittedModel {
                    workload: e.pending.workload.clone(),
                    queue: 0,
                    usage: vec![(self.cpu, i128::from(e.cpu_milli))],
                    admitted_at: instant(*at),
                    evicting: *evicting,
                },
            };
            model.admitted_at = instant(*at);
            model.evicting = *evicting;
            admitted.push(model);
        }
        self.admitted = admitted;
    }

    /// Sets each pending workload's `victims_in_flight`: the victims it chose that still
    /// hold quota here; and `held` while it has chosen victims (it preempted and has not been
    /// admitted since), as `admission::build` does.
    fn refresh_victims_in_flight(&mut self) {
        let stale: Vec<(String, Vec<String>)> = self
            .entries
            .values()
            .filter(|e| {
                e.is_pending()
                    && !(e.in_flight.is_empty()
                        && e.pending.victims_in_flight.is_empty()
                        && e.pending.held.is_none())
            })
            .map(|e| {
                let holding = e
                    .in_flight
                    .iter()
                    .filter(|v| {
                        self.entries
                            .get(*v)
                            .is_some_and(|v| matches!(v.state, State::Admitted { .. }))
                    })
                    .cloned()
                    .collect();
                (e.key().to_string(), holding)
            })
            .collect();
        for (key, holding) in stale {
            if let Some(e) = self.entries.get_mut(&key) {
                e.pending.victims_in_flight = holding;
                e.pending.held = (!e.in_flight.is_empty()).then(HeldFlavors::new);
            }
        }
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
