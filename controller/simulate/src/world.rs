//! One virtual worker cluster: its workloads (local ones and the manager's replicas) and
//! the snapshot its real admission cycle reads (one ClusterQueue over one flavor, CPUs only,
//! `withinClusterQueue: LowerPriority`, BestEffortFIFO: the shape of the sandbox's workers).

use std::collections::{BTreeMap, HashMap};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::{
    ClusterQueuePreemption, FlavorFungibility, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use baton_crds::constants::ReleaseReason;
use baton_crds::quantity::Resources;
use baton_crds::workload::PreemptionCost;
use chrono::{DateTime, TimeDelta, Utc};

use super::events::Millis;
use super::trace::{TraceWorkload, WorkerSpec};
use baton_core::admission::cycle::{Draft, DraftOutcome, PendingWhy};
use baton_core::admission::model::{
    AdmittedModel, FlavorModel, GroupModel, PendingModel, PodSetModel, QueueModel, Snapshot,
    WorkloadModel,
};
use baton_core::admission::quota::{FrId, Limits};
use baton_core::admission::step::LoopMemory;
use baton_core::victims::VictimPolicy;

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
pub fn key(name: &str, round: Option<u32>) -> WorkloadKey {
    match round {
        None => WorkloadKey::new(NAMESPACE, name),
        Some(r) => WorkloadKey::new(NAMESPACE, &format!("{name}~{r}")),
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
    /// never for local workloads or uncoordinated replicas) and `victims_in_flight` (kept
    /// by the loop's step).
    pub pending: PendingModel,
    pub cpu_milli: i64,
    pub state: State,
    /// `QuotaReservationBlocked=True` (`PreemptionGated`) since then.
    pub signal_since: Option<Millis>,
    /// The cost its worker reports with the signal (Baton's `status.preemptionCost`).
    pub cost: Option<PreemptionCost>,
    /// `QuotaReservationBlocked=True` (`RoomExpected`) since then: room without eviction
    /// expected (its `cost` says within how long).
    pub expecting_since: Option<Millis>,
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
                        // Its pods' grace period: the time they take to stop (rounded up
                        // to whole seconds), so the worker's `stopSeconds` is exact.
                        grace_seconds: Some(w.stop.div_ceil(1000) as i64),
                        ..Default::default()
                    }],
                    policy: VictimPolicy::default_for(w.priority),
                },
                queue: 0,
                gate_closed: gated,
                victims_in_flight: Vec::new(),
                yields_to: None,
                // One flavor, one pod set: the greedy assignment is the one it preempted for.
                held: None,
            },
            cpu_milli: w.cpu_milli,
            state: State::Pending,
            signal_since: None,
            cost: None,
            expecting_since: None,
            epoch: 0,
            eviction: None,
        }
    }

    pub fn key(&self) -> &WorkloadKey {
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
    pub entries: BTreeMap<WorkloadKey, Entry>,
    /// A cycle is already scheduled.
    pub cycle_queued: bool,
    /// What the worker's admission loop remembers between cycles (the shims' own memory:
    /// set-aside workloads, victims in flight).
    memory: LoopMemory,
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
            memory: LoopMemory::default(),
            last_victim_gone: None,
            base,
            cpu,
            admitted: Vec::new(),
        }
    }

    /// One step of the worker's admission loop (`baton_core::admission::step`, as the shim
    /// runs it) over the snapshot `admission::build` would make from this worker's objects:
    /// admitted workloads (evicting ones included: they hold quota until gone) and every
    /// pending one with its gate. A pending workload's fingerprint is its gate state, the
    /// only thing of it that changes while it waits.
    pub fn cycle(&mut self, now: DateTime<Utc>) -> Vec<Applied> {
        self.sync_admitted();
        let mut snapshot = self.base.clone();
        for model in std::mem::take(&mut self.admitted) {
            snapshot.push_admitted(model);
        }
        let pending: Vec<&mut PendingModel> = self
            .entries
            .values_mut()
            .filter(|e| e.is_pending())
            .map(|e| &mut e.pending)
            .collect();
        // Drafts, not decisions: applying reads only what changes the run, so no message or
        // assignment is written out (the decisions are the same).
        let step = self
            .memory
            .step(&mut snapshot, pending, |p| u64::from(p.gate_closed), now);
        let applied = step
            .drafts
            .iter()
            .map(|d| Applied::of(d, &snapshot))
            .collect();
        drop(step);
        // Take back the admitted models the snapshot took (a cycle changes only its quota).
        self.admitted = snapshot.admitted;
        applied
    }

    /// Removes a workload from this worker; its admission loop forgets it too.
    pub fn remove(&mut self, key: &WorkloadKey) -> Option<Entry> {
        self.memory.forget(key);
        self.entries.remove(key)
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
            while old.next_if(|m| m.workload.key < *e.key()).is_some() {}
            let mut model = match old.next_if(|m| m.workload.key == *e.key()) {
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
}

/// What applying one decision reads of it: the rest (messages, the assignment) is never
/// written out in a simulation.
pub struct Applied {
    pub key: WorkloadKey,
    pub change: Change,
}

pub enum Change {
    Admit,
    /// The victims' keys.
    Preempt(Vec<WorkloadKey>),
    Gated(PreemptionCost),
    /// Pending; with a holder of the baton, why it gives it back
    /// ([`baton_core::admission::cycle::PendingWhy::gives_back`]); with its gate Closed and
    /// room coming from workloads already stopping, within how many seconds
    /// (`Outcome::Pending::room_expected`).
    Pending {
        gives_back: Option<ReleaseReason>,
        room_expected: Option<i64>,
    },
    /// Waiting for its victims.
    Other,
}

impl Applied {
    fn of(draft: &Draft<'_>, snapshot: &Snapshot) -> Self {
        let change = match &draft.outcome {
            DraftOutcome::Admit => Change::Admit,
            DraftOutcome::Preempt { victims, .. } => Change::Preempt(
                victims
                    .iter()
                    .map(|&(i, _)| snapshot.admitted[i].workload.key.clone())
                    .collect(),
            ),
            DraftOutcome::Gated { cost, .. } => Change::Gated(*cost),
            DraftOutcome::Pending(why) => Change::Pending {
                gives_back: why.gives_back(),
                room_expected: match why {
                    PendingWhy::WaitingForVictims { room_within } => *room_within,
                    _ => None,
                },
            },
            DraftOutcome::Waiting => Change::Other,
        };
        Applied {
            key: draft.key().clone(),
            change,
        }
    }
}
