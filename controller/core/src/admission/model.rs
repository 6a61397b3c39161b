//! The scheduler's view of one cluster: plain data built from the watch caches (see
//! `worker::snapshot`), with names resolved and quantities parsed.

use std::collections::{BTreeMap, HashMap};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::{ClusterQueuePreemption, FlavorFungibility, QueueingStrategy};
use baton_crds::quantity::Resources;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Taint, Toleration};

use super::quota::{FrTable, QuotaState, Usage};
use crate::victims::{Budget, Bystander, PodGroup, VictimPolicy};

/// A ResourceFlavor, reduced to what placement checks.
#[derive(Clone, Debug, Default)]
pub struct FlavorModel {
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: Vec<Taint>,
}

/// A resource group: resources that are assigned a flavor together.
#[derive(Clone, Debug)]
pub struct GroupModel {
    pub covered: Vec<String>,
    pub flavors: Vec<String>,
}

/// A ClusterQueue.
#[derive(Clone, Debug)]
pub struct QueueModel {
    pub name: String,
    pub cohort: Option<String>,
    pub strategy: QueueingStrategy,
    pub groups: Vec<GroupModel>,
    pub fungibility: FlavorFungibility,
    pub preemption: ClusterQueuePreemption,
    /// Why the queue admits nothing new (stop policy, missing flavors), if it does not.
    pub inactive: Option<QueueProblem>,
}

/// Why a ClusterQueue is inactive: Kueue's `Active=False` reason and a message saying what to
/// fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueProblem {
    /// `Stopped`, `FlavorNotFound` or `InvalidQuota`.
    pub reason: &'static str,
    pub message: String,
}

/// One pod set of a workload.
#[derive(Clone, Debug, Default)]
pub struct PodSetModel {
    pub name: String,
    pub count: i32,
    /// Requests of all `count` pods, in milli-units.
    pub total: Resources,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Toleration>,
    pub labels: BTreeMap<String, String>,
    /// Its pods' `terminationGracePeriodSeconds` (`None`: unset, Kubernetes' default).
    pub grace_seconds: Option<i64>,
}

/// Kubernetes' `terminationGracePeriodSeconds` when a pod sets none.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;

impl PodSetModel {
    /// How long its pods may take to stop once evicted, in seconds: the grace period,
    /// Kubernetes' default when unset, never negative.
    pub fn stop_seconds(&self) -> i64 {
        self.grace_seconds.unwrap_or(DEFAULT_GRACE_SECONDS).max(0)
    }
}

/// What every workload carries, pending or admitted.
#[derive(Clone, Debug)]
pub struct WorkloadModel {
    pub key: WorkloadKey,
    pub namespace: String,
    pub priority: i32,
    /// Queue order: earlier first among equal priorities.
    pub created: DateTime<Utc>,
    pub pod_sets: Vec<PodSetModel>,
    /// The victim-side policy of its priority class.
    pub policy: VictimPolicy,
}

impl WorkloadModel {
    pub fn pod_groups(&self) -> Vec<PodGroup> {
        self.pod_sets
            .iter()
            .map(|p| PodGroup {
                labels: p.labels.clone(),
                count: p.count,
            })
            .collect()
    }
}

/// A workload holding quota.
#[derive(Clone, Debug)]
pub struct AdmittedModel {
    pub workload: WorkloadModel,
    pub queue: usize,
    pub usage: Usage,
    /// Its `QuotaReserved=True` transition.
    pub admitted_at: DateTime<Utc>,
    /// Evicted, but its quota stays counted until its pods are gone (a Job's workload,
    /// DESIGN.md §8). Never chosen as a victim again: its preemptor is already waiting.
    pub evicting: bool,
}

/// A workload waiting for quota.
#[derive(Clone, Debug)]
pub struct PendingModel {
    pub workload: WorkloadModel,
    pub queue: usize,
    /// Some preemption gate of it is Closed: it may not preempt.
    pub gate_closed: bool,
    /// Victims this workload already chose that still hold quota (delayed preemption).
    pub victims_in_flight: Vec<WorkloadKey>,
    /// The pending workload it was evicted for (its `Evicted` condition names it): in a
    /// cycle it is decided after that one, so it does not take back the room it was evicted
    /// to free (see `cycle::pass`).
    pub yields_to: Option<WorkloadKey>,
    /// `Some` when it preempted and has not been admitted since (the shell remembers it):
    /// a waiting preemptor, whose room the cycle holds even once its victims are gone (see
    /// `cycle` on holds). With the flavors it chose then (`Assignment::flavors` of that
    /// decision), where the shell remembers them: it tries these first, so that a greedy
    /// choice made anew with its victims gone cannot send it elsewhere, not fitting, to
    /// evict again; without them (an empty map) the greedy choice.
    pub held: Option<HeldFlavors>,
}

/// Flavors by pod set name, then resource.
pub type HeldFlavors = BTreeMap<String, BTreeMap<String, String>>;

/// Usage by name: (flavor, resource, milli-units); interned when the snapshot is built.
pub type NamedUsage = Vec<(String, String, i128)>;
/// An admitted workload with its usage by name.
pub type AdmittedInput = (AdmittedModel, NamedUsage);
/// One quota: (queue index, flavor, resource, limits).
pub type LimitInput = (usize, String, String, super::quota::Limits);

/// Everything a scheduling cycle reads; the cycle updates `quota` as it admits.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub frs: FrTable,
    pub quota: QuotaState,
    pub queues: Vec<QueueModel>,
    pub flavors: HashMap<String, FlavorModel>,
    pub admitted: Vec<AdmittedModel>,
    /// Indices into `admitted`, per queue.
    pub admitted_by_queue: Vec<Vec<usize>>,
    /// Queues per cohort name.
    pub cohort_members: HashMap<String, Vec<usize>>,
    pub budgets: Vec<Budget>,
    /// Per queue, the lowest priority of its admitted workloads that are not evicting (kept
    /// by `push_admitted`): lets `preempt::preemption_possible` answer "no" at once.
    pub(super) lowest_priority: Vec<Option<i32>>,
    /// The flavor oracle's answers within one cycle.
    pub(super) oracle_memo: super::oracle_memo::Memo,
}

impl Snapshot {
    /// Builds the quota state and indices from queues, flavors and admitted workloads.
    /// Quota limits come as (queue, flavor, resource, limits).
    pub fn new(
        queues: Vec<QueueModel>,
        flavors: HashMap<String, FlavorModel>,
        limits: Vec<LimitInput>,
        admitted: Vec<AdmittedInput>,
        budgets: Vec<Budget>,
    ) -> Self {
        Self::with_held(queues, flavors, limits, admitted, Vec::new(), budgets)
    }

    /// A snapshot whose admitted workloads are known by the usage they hold alone, per
    /// queue: for a cycle with no pending workload, which reads nothing of the admitted
    /// workloads but their usage (victims, their budgets and the rooms held for preemptors
    /// are all looked for on behalf of a pending workload). With tens of thousands of
    /// admitted workloads, their models would be built and dropped on every such cycle.
    pub fn holding(
        queues: Vec<QueueModel>,
        flavors: HashMap<String, FlavorModel>,
        limits: Vec<LimitInput>,
        held: Vec<(usize, NamedUsage)>,
        budgets: Vec<Budget>,
    ) -> Self {
        Self::with_held(queues, flavors, limits, Vec::new(), held, budgets)
    }

    fn with_held(
        queues: Vec<QueueModel>,
        flavors: HashMap<String, FlavorModel>,
        limits: Vec<LimitInput>,
        admitted: Vec<AdmittedInput>,
        held: Vec<(usize, NamedUsage)>,
        budgets: Vec<Budget>,
    ) -> Self {
        let mut frs = FrTable::default();
        let mut per_queue: Vec<Vec<(usize, super::quota::Limits)>> = vec![Vec::new(); queues.len()];
        for (queue, flavor, resource, l) in &limits {
            let fr = frs.intern(flavor, resource);
            per_queue[*queue].push((fr, *l));
        }
        let mut cohort_ids: HashMap<String, usize> = HashMap::new();
        let mut cohort_members: HashMap<String, Vec<usize>> = HashMap::new();
        let cohorts: Vec<Option<usize>> = queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                q.cohort.as_ref().map(|name| {
                    cohort_members.entry(name.clone()).or_default().push(i);
                    let next = cohort_ids.len();
                    *cohort_ids.entry(name.clone()).or_insert(next)
                })
            })
            .collect();
        // Admitted usage may name pairs no queue defines any more (a quota was removed):
        // they still count, so intern them before sizing the state.
        let admitted: Vec<AdmittedModel> = admitted
            .into_iter()
            .map(|(mut model, named)| {
                model.usage = named
                    .iter()
                    .map(|(f, r, amount)| (frs.intern(f, r), *amount))
                    .collect();
                model
            })
            .collect();
        let held: Vec<(usize, Usage)> = held
            .iter()
            .map(|(queue, named)| {
                let usage = named
                    .iter()
                    .map(|(f, r, amount)| (frs.intern(f, r), *amount))
                    .collect();
                (*queue, usage)
            })
            .collect();
        let frs_len = frs.len();
        let admitted_by_queue = vec![Vec::new(); queues.len()];
        let queues_len = queues.len();
        let mut snapshot = Snapshot {
            frs,
            quota: QuotaState::new(frs_len, per_queue, cohorts),
            queues,
            flavors,
            admitted: Vec::new(),
            admitted_by_queue,
            cohort_members,
            budgets,
            lowest_priority: vec![None; queues_len],
            oracle_memo: Default::default(),
        };
        // The list is kept as it came, not pushed into a second one: with tens of thousands
        // of admitted workloads the two would be held at once, every cycle.
        for (index, model) in admitted.iter().enumerate() {
            snapshot.account(index, model);
        }
        snapshot.admitted = admitted;
        for (queue, usage) in &held {
            snapshot.quota.add(*queue, usage);
        }
        snapshot
    }

    /// Counts the admitted workload `model`, at `index` in `admitted`: its usage, its
    /// priority as its queue's lowest, its place in its queue's list.
    fn account(&mut self, index: usize, model: &AdmittedModel) {
        self.quota.add(model.queue, &model.usage);
        if !model.evicting {
            let lowest = &mut self.lowest_priority[model.queue];
            let p = model.workload.priority;
            *lowest = Some(lowest.map_or(p, |l| l.min(p)));
        }
        self.admitted_by_queue[model.queue].push(index);
    }

    /// Adds an admitted workload whose usage is interned in `frs` already: a caller that
    /// keeps its admitted models between cycles (`baton simulate`) hands them over as they
    /// are, instead of rebuilding them by name.
    pub fn push_admitted(&mut self, model: AdmittedModel) {
        self.account(self.admitted.len(), &model);
        self.admitted.push(model);
    }

    /// The queues whose workloads may be preempted for a workload of `queue`: itself and its
    /// cohort's other members.
    pub fn neighbourhood(&self, queue: usize) -> Vec<usize> {
        match &self.queues[queue].cohort {
            Some(name) => self.cohort_members.get(name).cloned().unwrap_or_default(),
            None => vec![queue],
        }
    }

    /// Admitted workloads outside `except` as budget bystanders (only in namespaces that
    /// have a budget: elsewhere they change nothing).
    pub fn bystanders(&self, except: &[usize]) -> Vec<Bystander> {
        if self.budgets.is_empty() {
            return Vec::new();
        }
        let namespaces: std::collections::HashSet<&str> =
            self.budgets.iter().map(|b| b.namespace.as_str()).collect();
        let mut skip = vec![false; self.admitted.len()];
        for &i in except {
            skip[i] = true;
        }
        self.admitted
            .iter()
            .enumerate()
            .filter(|(i, a)| !skip[*i] && namespaces.contains(a.workload.namespace.as_str()))
            .map(|(_, a)| Bystander {
                namespace: a.workload.namespace.clone(),
                pod_sets: a.workload.pod_groups(),
            })
            .collect()
    }
}
