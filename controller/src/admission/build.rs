//! Builds the core's snapshot from the objects in the watch caches. Pure: the same objects
//! give the same snapshot. Objects that cannot be used are reported, never fatal: a
//! workload with a bad quantity or a missing queue gets a problem (written to its status by
//! the shell) and the rest are scheduled as usual.

use std::collections::{BTreeMap, HashMap};

use baton_crds::cluster_queue::ResourceQuota;
use baton_crds::cluster_queue::StopPolicy;
use baton_crds::conditions::{condition_transition_time, is_condition_true};
use baton_crds::constants::{PREEMPTED_BY_ANNOTATION, condition, reason};
use baton_crds::demand::{admission_usage, pod_set_demand};
use baton_crds::gates::{gates, preemption_gated};
use baton_crds::priority::{PriorityClasses, resolve_priority};
use baton_crds::quantity::parse_milli;
use baton_crds::time::to_chrono;
use baton_crds::workload::{Admission, PriorityClassGroup};
use baton_crds::{
    ClusterQueue, LocalQueue, ParseKeyError, ResourceFlavor, Workload, WorkloadKey,
    WorkloadPriorityClass,
};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;

use baton_core::admission::model::{
    AdmittedInput, AdmittedModel, FlavorModel, GroupModel, LimitInput, PendingModel, PodSetModel,
    QueueModel, QueueProblem, Snapshot, WorkloadModel,
};
use baton_core::admission::preempt::queue_may_preempt;
use baton_core::admission::quota::Limits;
use baton_core::victims::{self, AnnotationProblem, Budget, VictimPolicy};

/// Everything the caches hold, borrowed.
pub struct Objects<'a> {
    pub workloads: &'a [std::sync::Arc<Workload>],
    pub cluster_queues: &'a [std::sync::Arc<ClusterQueue>],
    pub local_queues: &'a [std::sync::Arc<LocalQueue>],
    pub flavors: &'a [std::sync::Arc<ResourceFlavor>],
    pub workload_classes: &'a [std::sync::Arc<WorkloadPriorityClass>],
    pub pod_classes: &'a [std::sync::Arc<PriorityClass>],
    pub budgets: &'a [std::sync::Arc<PodDisruptionBudget>],
    pub namespaces: &'a [std::sync::Arc<Namespace>],
}

/// A pending workload that cannot be scheduled, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadProblem {
    pub key: WorkloadKey,
    pub reason: &'static str,
    pub message: String,
}

/// An evicted workload whose preemptor record ([`PREEMPTED_BY_ANNOTATION`]) is not a
/// workload key: the record is skipped (the workload is treated as naming no preemptor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordProblem {
    pub key: WorkloadKey,
    /// The annotation's value.
    pub value: String,
    pub error: ParseKeyError,
}

/// A malformed annotation on a priority class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassProblem {
    /// `WorkloadPriorityClass` or `PriorityClass`.
    pub kind: &'static str,
    pub name: String,
    pub problem: AnnotationProblem,
}

/// The snapshot and what came with it.
pub struct Built {
    pub snapshot: Snapshot,
    pub pending: Vec<PendingModel>,
    /// What could make a set-aside pending workload admissible, by key.
    pub fingerprints: HashMap<WorkloadKey, u64>,
    pub problems: Vec<WorkloadProblem>,
    pub class_problems: Vec<ClassProblem>,
    pub record_problems: Vec<RecordProblem>,
}

struct Classes<'a> {
    workload: HashMap<&'a str, (i32, &'a BTreeMap<String, String>)>,
    pod: HashMap<&'a str, (i32, &'a BTreeMap<String, String>)>,
}

impl PriorityClasses for Classes<'_> {
    fn workload_priority_class(&self, name: &str) -> Option<i32> {
        self.workload.get(name).map(|(v, _)| *v)
    }
    fn pod_priority_class(&self, name: &str) -> Option<i32> {
        self.pod.get(name).map(|(v, _)| *v)
    }
}

/// Builds the snapshot. A pending preemptor's `victims_in_flight` are the evicted workloads
/// still holding quota whose preemptor record names it (see `Sorted::evicted_for`); the loop's step
/// adds the ones it remembers.
pub fn build(objects: &Objects<'_>) -> Built {
    let classes = classes(objects);
    let (policies, class_problems) = class_policies(&classes);
    let flavors = flavor_models(objects);
    let queues = queue_models(objects, &flavors);
    let context = PlaceContext {
        classes: &classes,
        policies: &policies,
        queues: &queues,
        local_queues: objects
            .local_queues
            .iter()
            .map(|lq| {
                (
                    (lq.namespace().unwrap_or_default(), lq.name_any()),
                    lq.spec.cluster_queue.clone(),
                )
            })
            .collect(),
        namespace_labels: objects
            .namespaces
            .iter()
            .map(|n| (n.name_any(), n.labels()))
            .collect(),
    };
    let keep = keep(objects.workloads, &context);
    // Room for every workload up front: most hold quota on a busy manager, and a list grown
    // by doubling would copy itself and hold up to twice the room it needs, for every
    // cycle (room never written takes no memory).
    let mut sorted = Sorted {
        admitted: Vec::with_capacity(match keep {
            Keep::Models => objects.workloads.len(),
            Keep::Usage => 0,
        }),
        keep,
        ..Sorted::default()
    };
    for wl in objects.workloads {
        sorted.place(wl, &context);
    }
    let Sorted {
        admitted,
        held,
        evicting_for,
        mut pending,
        problems,
        record_problems,
        fingerprints,
        keep: _,
    } = sorted;
    let QueueTable { models, limits, .. } = queues;
    let budgets = budget_models(objects);
    let snapshot = match keep {
        Keep::Models => Snapshot::new(models, flavors, limits, admitted, budgets),
        Keep::Usage => {
            let held = held
                .into_iter()
                .map(|(queue, usage)| {
                    let named = usage.into_iter().map(|((f, r), a)| (f, r, a)).collect();
                    (queue, named)
                })
                .collect();
            Snapshot::holding(models, flavors, limits, held, budgets)
        }
    };
    link_preemptors(&mut pending, &evicting_for);
    Built {
        snapshot,
        pending,
        fingerprints,
        problems,
        class_problems,
        record_problems,
    }
}

fn classes<'a>(objects: &Objects<'a>) -> Classes<'a> {
    Classes {
        workload: objects
            .workload_classes
            .iter()
            .map(|c| {
                (
                    c.metadata.name.as_deref().unwrap_or(""),
                    (c.spec.value, c.annotations()),
                )
            })
            .collect(),
        pod: objects
            .pod_classes
            .iter()
            .map(|c| {
                (
                    c.metadata.name.as_deref().unwrap_or(""),
                    (c.value.unwrap_or(0), c.annotations()),
                )
            })
            .collect(),
    }
}

/// The victim-side policy of every priority class, by (is a pod class, name), and the
/// malformed annotations found on the way.
#[allow(clippy::type_complexity)]
fn class_policies(
    classes: &Classes<'_>,
) -> (HashMap<(bool, String), VictimPolicy>, Vec<ClassProblem>) {
    let mut class_problems = Vec::new();
    let mut policies: HashMap<(bool, String), VictimPolicy> = HashMap::new();
    for (kind, is_pod, map) in [
        ("WorkloadPriorityClass", false, &classes.workload),
        ("PriorityClass", true, &classes.pod),
    ] {
        for (name, (value, annotations)) in map {
            let (policy, problems) = victims::policy_from_annotations(*value, annotations);
            for problem in problems {
                class_problems.push(ClassProblem {
                    kind,
                    name: name.to_string(),
                    problem,
                });
            }
            policies.insert((is_pod, name.to_string()), policy);
        }
    }
    (policies, class_problems)
}

fn flavor_models(objects: &Objects<'_>) -> HashMap<String, FlavorModel> {
    objects
        .flavors
        .iter()
        .map(|f| {
            (
                f.name_any(),
                FlavorModel {
                    node_labels: f.spec.node_labels.clone(),
                    node_taints: f.spec.node_taints.clone(),
                },
            )
        })
        .collect()
}

/// The ClusterQueues as the core models them, in name order, with their quotas.
#[derive(Default)]
struct QueueTable {
    models: Vec<QueueModel>,
    limits: Vec<LimitInput>,
    index: HashMap<String, usize>,
    selectors: Vec<Option<LabelSelector>>,
}

fn queue_models(objects: &Objects<'_>, flavors: &HashMap<String, FlavorModel>) -> QueueTable {
    let mut table = QueueTable::default();
    let mut sorted_cqs: Vec<&ClusterQueue> =
        objects.cluster_queues.iter().map(|c| c.as_ref()).collect();
    sorted_cqs.sort_by_key(|c| c.name_any());
    for cq in sorted_cqs {
        let index = table.models.len();
        let name = cq.name_any();
        let model = queue_model(cq, index, flavors, &mut table.limits);
        table.index.insert(name, index);
        table.selectors.push(cq.spec.namespace_selector.clone());
        table.models.push(model);
    }
    table
}

/// One ClusterQueue; its quotas go to `limits`. A stopped queue, a bad quota or a missing
/// flavor makes it inactive, saying why.
fn queue_model(
    cq: &ClusterQueue,
    index: usize,
    flavors: &HashMap<String, FlavorModel>,
    limits: &mut Vec<LimitInput>,
) -> QueueModel {
    let mut inactive = match cq.spec.stop_policy {
        StopPolicy::None => None,
        other => Some(QueueProblem {
            reason: "Stopped",
            message: format!("stopPolicy is {other:?}"),
        }),
    };
    let mut missing = Vec::new();
    let mut groups = Vec::new();
    for (g, group) in cq.spec.resource_groups.iter().enumerate() {
        for (f, flavor) in group.flavors.iter().enumerate() {
            if !flavors.contains_key(&flavor.name) {
                missing.push(flavor.name.clone());
            }
            for (r, quota) in flavor.resources.iter().enumerate() {
                let path = format!("spec.resourceGroups[{g}].flavors[{f}].resources[{r}]");
                match quota_limits(&path, quota) {
                    Ok(l) => limits.push((index, flavor.name.clone(), quota.name.clone(), l)),
                    Err(message) => {
                        inactive = Some(QueueProblem {
                            reason: "InvalidQuota",
                            message,
                        })
                    }
                }
            }
        }
        groups.push(GroupModel {
            covered: group.covered_resources.clone(),
            flavors: group.flavors.iter().map(|f| f.name.clone()).collect(),
        });
    }
    if !missing.is_empty() && inactive.is_none() {
        inactive = Some(QueueProblem {
            reason: "FlavorNotFound",
            message: format!(
                "references missing ResourceFlavor(s): {}",
                missing.join(", ")
            ),
        });
    }
    QueueModel {
        name: cq.name_any(),
        cohort: cq.spec.cohort_name.clone(),
        strategy: cq.spec.queueing_strategy,
        groups,
        fungibility: cq.spec.flavor_fungibility.clone(),
        preemption: cq.spec.preemption.clone(),
        inactive,
    }
}

/// One quota's limits. Kueue's webhook refuses negative quotas; Baton has none, so the
/// queue says where the bad one is instead of counting it.
fn quota_limits(path: &str, quota: &ResourceQuota) -> Result<Limits, String> {
    let parse = |field: &str, q: &Quantity| match parse_milli(q) {
        Ok(milli) if milli < 0 => Err(format!(
            "{path}.{field}: {:?} must be greater than or equal to 0",
            q.0
        )),
        Ok(milli) => Ok(milli),
        Err(e) => Err(format!("{path}.{field}: {e}")),
    };
    Ok(Limits {
        nominal: parse("nominalQuota", &quota.nominal_quota)?,
        borrowing_limit: quota
            .borrowing_limit
            .as_ref()
            .map(|q| parse("borrowingLimit", q))
            .transpose()?,
        lending_limit: quota
            .lending_limit
            .as_ref()
            .map(|q| parse("lendingLimit", q))
            .transpose()?,
    })
}

/// What placing a workload reads.
struct PlaceContext<'a> {
    classes: &'a Classes<'a>,
    policies: &'a HashMap<(bool, String), VictimPolicy>,
    queues: &'a QueueTable,
    local_queues: HashMap<(String, String), Option<String>>,
    namespace_labels: HashMap<String, &'a BTreeMap<String, String>>,
}

/// What a cycle keeps of the admitted workloads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Keep {
    /// Their models (victims, budgets' bystanders, rooms held for preemptors).
    #[default]
    Models,
    /// Their usage, summed per queue: no workload waits.
    Usage,
}

/// What the cycle keeps of the admitted workloads. Their models are read only on behalf of
/// a preemption: victims, the budgets' bystanders, the rooms held for preemptors and their
/// victims still being evicted. So their usage alone does while no waiting workload's queue
/// may preempt ([`queue_may_preempt`]) and none is being evicted. A manager holding quota
/// for tens of thousands of dispatched workloads, in a queue that does not preempt (the
/// workers do), runs such cycles whenever one of them changes, with thousands waiting: each
/// built a model of every admitted workload (about 550 bytes each) and dropped it.
fn keep(workloads: &[std::sync::Arc<Workload>], cx: &PlaceContext<'_>) -> Keep {
    let needs_models = |wl: &std::sync::Arc<Workload>| match standing(wl) {
        Standing::Waiting(queue_name) => {
            let namespace = wl.metadata.namespace.as_deref().unwrap_or_default();
            cluster_queue_of(namespace, queue_name, cx)
                .is_ok_and(|(queue, _)| queue_may_preempt(&cx.queues.models[queue]))
        }
        Standing::Holding(_) => wl
            .status
            .as_ref()
            .is_some_and(|s| is_condition_true(&s.conditions, condition::EVICTED)),
        Standing::Gone | Standing::Idle => false,
    };
    if workloads.iter().any(needs_models) {
        Keep::Models
    } else {
        Keep::Usage
    }
}

/// Where a workload stands, as the cycle sorts it (before its model is read).
enum Standing<'a> {
    /// Deleted or finished: the cycle ignores it.
    Gone,
    /// It holds a reservation (`status.admission` and `QuotaReserved=True`).
    Holding(&'a Admission),
    /// Inactive, or in no queue: it waits for nothing.
    Idle,
    /// It waits for quota in this LocalQueue.
    Waiting(&'a str),
}

fn standing(wl: &Workload) -> Standing<'_> {
    let conditions = wl
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or(&[]);
    if wl.metadata.deletion_timestamp.is_some()
        || is_condition_true(conditions, condition::FINISHED)
    {
        return Standing::Gone;
    }
    if let Some(admission) = wl.status.as_ref().and_then(|s| s.admission.as_ref())
        && is_condition_true(conditions, condition::QUOTA_RESERVED)
    {
        return Standing::Holding(admission);
    }
    if !wl.spec.active {
        return Standing::Idle;
    }
    match wl.spec.queue_name.as_deref().filter(|q| !q.is_empty()) {
        Some(queue_name) => Standing::Waiting(queue_name),
        None => Standing::Idle,
    }
}

/// The workloads sorted into admitted, pending and unusable.
#[derive(Default)]
struct Sorted {
    keep: Keep,
    admitted: Vec<AdmittedInput>,
    /// The usage of the admitted workloads per queue, flavor and resource, when their models
    /// are not kept ([`Keep::Usage`]).
    held: BTreeMap<usize, BTreeMap<(String, String), i128>>,
    /// (victim, preemptor) of evicted workloads still holding quota.
    evicting_for: Vec<(WorkloadKey, WorkloadKey)>,
    pending: Vec<PendingModel>,
    problems: Vec<WorkloadProblem>,
    record_problems: Vec<RecordProblem>,
    fingerprints: HashMap<WorkloadKey, u64>,
}

impl Sorted {
    /// Sorts one workload: skipped when deleted, finished or inactive; admitted when it
    /// holds a reservation; pending when its queue takes it; otherwise a problem.
    fn place(&mut self, wl: &Workload, cx: &PlaceContext<'_>) {
        let standing = standing(wl);
        if matches!(standing, Standing::Gone) {
            return;
        }
        let key = WorkloadKey::of(wl);
        let conditions = wl
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or(&[]);
        let model = match workload_model(wl, &key, cx.classes, cx.policies) {
            Ok(m) => m,
            Err(message) => return self.problem(key, message),
        };
        let queue_name = match standing {
            Standing::Gone | Standing::Idle => return,
            Standing::Holding(admission) => {
                return self.hold(wl, key, model, admission, conditions, cx);
            }
            Standing::Waiting(queue_name) => queue_name,
        };
        match pending_queue(wl, queue_name, cx) {
            Ok(queue) => {
                let yields_to = self.evicted_for(wl, &key, conditions);
                self.fingerprints.insert(key, fingerprint(wl));
                self.pending.push(PendingModel {
                    workload: model,
                    queue,
                    gate_closed: preemption_gated(wl),
                    victims_in_flight: Vec::new(),
                    yields_to,
                    held: None,
                });
            }
            Err(message) => self.problem(key, message),
        }
    }

    /// An admitted workload: its model and usage, or its usage alone ([`Keep`]).
    fn hold(
        &mut self,
        wl: &Workload,
        key: WorkloadKey,
        model: WorkloadModel,
        admission: &Admission,
        conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
        cx: &PlaceContext<'_>,
    ) {
        let Some(&queue) = cx.queues.index.get(&admission.cluster_queue) else {
            return;
        };
        if let Some(preemptor) = self.evicted_for(wl, &key, conditions) {
            self.evicting_for.push((key, preemptor));
        }
        let usage = admission_usage(admission);
        if self.keep == Keep::Usage {
            let held = self.held.entry(queue).or_default();
            for (flavor, resource, amount) in usage {
                *held.entry((flavor, resource)).or_default() += amount;
            }
            return;
        }
        let admitted_at = condition_transition_time(conditions, condition::QUOTA_RESERVED)
            .unwrap_or(model.created);
        let model = AdmittedModel {
            workload: model,
            queue,
            usage: Vec::new(),
            admitted_at,
            evicting: is_condition_true(conditions, condition::EVICTED),
        };
        self.admitted.push((model, usage));
    }

    /// The preemptor `wl` was evicted for, as its [`PREEMPTED_BY_ANNOTATION`] records it, while
    /// its `Evicted` condition is True for `Preempted` (as `status::evicted` writes it, in the
    /// write after the record). Otherwise the record is stale (re-admitted since, evicted for
    /// another cause, or a status write that never landed) and ignored. A malformed record is
    /// skipped and reported.
    fn evicted_for(
        &mut self,
        wl: &Workload,
        key: &WorkloadKey,
        conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    ) -> Option<WorkloadKey> {
        let evicted = baton_crds::conditions::find_condition(conditions, condition::EVICTED)?;
        if evicted.status != "True" || evicted.reason != reason::PREEMPTED {
            return None;
        }
        let value = wl.annotations().get(PREEMPTED_BY_ANNOTATION)?;
        match value.parse() {
            Ok(preemptor) => Some(preemptor),
            Err(error) => {
                self.record_problems.push(RecordProblem {
                    key: key.clone(),
                    value: value.clone(),
                    error,
                });
                None
            }
        }
    }

    fn problem(&mut self, key: WorkloadKey, message: String) {
        self.problems.push(WorkloadProblem {
            key,
            reason: "Inadmissible",
            message,
        });
    }
}

/// The ClusterQueue (its index and name) that LocalQueue `queue_name` in `namespace` points
/// to, or why there is none.
fn cluster_queue_of<'c>(
    namespace: &str,
    queue_name: &str,
    cx: &'c PlaceContext<'_>,
) -> Result<(usize, &'c str), String> {
    let cq_name = match cx
        .local_queues
        .get(&(namespace.to_string(), queue_name.to_string()))
    {
        None => return Err(format!("LocalQueue {queue_name} doesn't exist")),
        Some(None) => return Err(format!("LocalQueue {queue_name} has no clusterQueue")),
        Some(Some(cq)) => cq,
    };
    match cx.queues.index.get(cq_name) {
        Some(&queue) => Ok((queue, cq_name)),
        None => Err(format!("ClusterQueue {cq_name} doesn't exist")),
    }
}

/// The ClusterQueue index a pending workload queues in: its LocalQueue's ClusterQueue, if
/// that exists and its namespace selector takes the workload's namespace (Kueue: no
/// namespaceSelector selects no namespace; `{}` selects them all).
fn pending_queue(wl: &Workload, queue_name: &str, cx: &PlaceContext<'_>) -> Result<usize, String> {
    let namespace = wl.namespace().unwrap_or_default();
    let (queue, cq_name) = cluster_queue_of(&namespace, queue_name, cx)?;
    let empty = BTreeMap::new();
    let verdict = match &cx.queues.selectors[queue] {
        None => Ok(false),
        Some(selector) => {
            let labels = cx
                .namespace_labels
                .get(&namespace)
                .copied()
                .unwrap_or(&empty);
            victims::selector_matches(selector, labels)
        }
    };
    match verdict {
        Ok(true) => Ok(queue),
        Ok(false) => Err(format!(
            "Workload namespace doesn't match ClusterQueue {cq_name} namespaceSelector"
        )),
        Err(e) => Err(format!(
            "ClusterQueue {cq_name} spec.namespaceSelector: {e}"
        )),
    }
}

fn budget_models(objects: &Objects<'_>) -> Vec<Budget> {
    objects
        .budgets
        .iter()
        .filter_map(|pdb| {
            let spec = pdb.spec.as_ref()?;
            Some(Budget {
                namespace: pdb.namespace().unwrap_or_default(),
                name: pdb.name_any(),
                // policy/v1: a budget without a selector selects nothing.
                selector: spec.selector.clone()?,
                min_available: spec.min_available.clone(),
                max_unavailable: spec.max_unavailable.clone(),
            })
        })
        .collect()
}

/// A victim back in its queue yields only to a preemptor that still waits. Evicted victims
/// still holding quota (Jobs' workloads) name their preemptor: a restarted shim, which
/// forgot whom it chose, keeps waiting for them instead of choosing more.
fn link_preemptors(pending: &mut [PendingModel], evicting_for: &[(WorkloadKey, WorkloadKey)]) {
    let pending_keys: std::collections::HashSet<WorkloadKey> =
        pending.iter().map(|p| p.workload.key.clone()).collect();
    for p in pending.iter_mut() {
        p.yields_to = p.yields_to.take().filter(|k| pending_keys.contains(k));
    }
    for (victim, preemptor) in evicting_for {
        if let Some(p) = pending.iter_mut().find(|p| p.workload.key == *preemptor)
            && !p.victims_in_flight.contains(victim)
        {
            p.victims_in_flight.push(victim.clone());
        }
    }
}

/// The core's view of one workload.
fn workload_model(
    wl: &Workload,
    key: &WorkloadKey,
    classes: &Classes<'_>,
    policies: &HashMap<(bool, String), VictimPolicy>,
) -> Result<WorkloadModel, String> {
    let priority = resolve_priority(&wl.spec, classes).map_err(|e| e.to_string())?;
    let policy = wl
        .spec
        .priority_class_ref
        .as_ref()
        .and_then(|r| {
            let is_pod = r.group == PriorityClassGroup::Scheduling;
            policies.get(&(is_pod, r.name.clone())).cloned()
        })
        .unwrap_or_else(|| VictimPolicy::default_for(priority));
    // Sized exactly: a list grown by pushing starts with room for four pod sets (576 bytes
    // where most workloads need 144), for every workload in every cycle.
    let mut pod_sets = Vec::with_capacity(wl.spec.pod_sets.len());
    for pod_set in &wl.spec.pod_sets {
        let demand = pod_set_demand(pod_set).map_err(|e| e.to_string())?;
        let template = &pod_set.template;
        pod_sets.push(PodSetModel {
            name: pod_set.name.clone(),
            count: demand.count,
            total: demand.total,
            node_selector: template.node_selector().clone(),
            tolerations: template.tolerations().to_vec(),
            labels: template.labels().clone(),
            grace_seconds: template.termination_grace_seconds(),
        });
    }
    Ok(WorkloadModel {
        key: key.clone(),
        namespace: wl.namespace().unwrap_or_default(),
        priority,
        created: creation(wl),
        pod_sets,
        policy,
    })
}

fn creation(wl: &Workload) -> DateTime<Utc> {
    wl.metadata
        .creation_timestamp
        .as_ref()
        .map(to_chrono)
        .unwrap_or_default()
}

/// What of a pending workload can make it admissible again, hashed: its spec (generation)
/// and its gates' states.
fn fingerprint(wl: &Workload) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    wl.metadata.generation.unwrap_or(0).hash(&mut hasher);
    for gate in gates(wl) {
        gate.name.hash(&mut hasher);
        format!("{:?}", gate.state).hash(&mut hasher);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests;
