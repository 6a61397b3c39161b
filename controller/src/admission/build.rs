//! Builds the core's snapshot from the objects in the watch caches. Pure: the same objects
//! give the same snapshot. Objects that cannot be used are reported, never fatal: a
//! workload with a bad quantity or a missing queue gets a problem (written to its status by
//! the shell) and the rest are scheduled as usual.

use std::collections::{BTreeMap, HashMap};

use baton_crds::cluster_queue::StopPolicy;
use baton_crds::conditions::{condition_transition_time, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::demand::pod_set_demand;
use baton_crds::gates::{gates, preemption_gated};
use baton_crds::priority::{PriorityClasses, resolve_priority};
use baton_crds::quantity::parse_milli;
use baton_crds::time::to_chrono;
use baton_crds::workload::PriorityClassGroup;
use baton_crds::{ClusterQueue, LocalQueue, ResourceFlavor, Workload, WorkloadPriorityClass};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::ResourceExt;

use super::core::model::{
    AdmittedModel, FlavorModel, GroupModel, HeldFlavors, PendingModel, PodSetModel, QueueModel,
    QueueProblem, Snapshot, WorkloadModel,
};
use super::core::quota::Limits;
use super::victims::{self, AnnotationProblem, Budget, VictimPolicy};

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
    pub key: String,
    pub reason: &'static str,
    pub message: String,
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
    pub fingerprints: HashMap<String, String>,
    pub problems: Vec<WorkloadProblem>,
    pub class_problems: Vec<ClassProblem>,
    /// Admitted workloads per queue name, for queue status.
    pub admitted_keys: Vec<String>,
}

/// `namespace/name` of a namespaced object.
pub fn key_of(workload: &Workload) -> String {
    format!(
        "{}/{}",
        workload.namespace().unwrap_or_default(),
        workload.name_any()
    )
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

/// Builds the snapshot. `in_flight` lists, per preemptor key, the victims it chose earlier.
pub fn build(objects: &Objects<'_>, in_flight: &HashMap<String, Vec<String>>) -> Built {
    let classes = Classes {
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
    };
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

    let flavors: HashMap<String, FlavorModel> = objects
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
        .collect();

    let mut queues = Vec::new();
    let mut limits = Vec::new();
    let mut queue_index: HashMap<String, usize> = HashMap::new();
    let mut selectors = Vec::new();
    let mut sorted_cqs: Vec<&ClusterQueue> =
        objects.cluster_queues.iter().map(|c| c.as_ref()).collect();
    sorted_cqs.sort_by_key(|c| c.name_any());
    for cq in sorted_cqs {
        let index = queues.len();
        let name = cq.name_any();
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
                    let parsed = (|| -> Result<Limits, String> {
                        // Kueue's webhook refuses negative quotas; Baton has none, so the
                        // queue says where the bad one is instead of counting it.
                        let parse = |field: &str, q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
                            match parse_milli(q) {
                                Ok(milli) if milli < 0 => Err(format!(
                                    "{path}.{field}: {:?} must be greater than or equal to 0",
                                    q.0
                                )),
                                Ok(milli) => Ok(milli),
                                Err(e) => Err(format!("{path}.{field}: {e}")),
                            }
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
                    })();
                    match parsed {
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
        queue_index.insert(name.clone(), index);
        selectors.push(cq.spec.namespace_selector.clone());
        queues.push(QueueModel {
            name,
            cohort: cq.spec.cohort_name.clone(),
            strategy: cq.spec.queueing_strategy,
            groups,
            fungibility: cq.spec.flavor_fungibility.clone(),
            preemption: cq.spec.preemption.clone(),
            inactive,
        });
    }

    let local_queues: HashMap<(String, String), Option<String>> = objects
        .local_queues
        .iter()
        .map(|lq| {
            (
                (lq.namespace().unwrap_or_default(), lq.name_any()),
                lq.spec.cluster_queue.clone(),
            )
        })
        .collect();
    let namespace_labels: HashMap<String, &BTreeMap<String, String>> = objects
        .namespaces
        .iter()
        .map(|n| (n.name_any(), n.labels()))
        .collect();
    let empty = BTreeMap::new();

    let mut admitted = Vec::new();
    let mut admitted_keys = Vec::new();
    // (victim, preemptor) of evicted workloads still holding quota.
    let mut evicting_for: Vec<(String, String)> = Vec::new();
    let mut pending = Vec::new();
    let mut problems = Vec::new();
    let mut fingerprints = HashMap::new();
    for wl in objects.workloads {
        let key = key_of(wl);
        if wl.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let status = wl.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or(&[]);
        if is_condition_true(conditions, condition::FINISHED) {
            continue;
        }
        let problem = |reason: &'static str, message: String| WorkloadProblem {
            key: key.clone(),
            reason,
            message,
        };
        let model = match workload_model(wl, &key, &classes, &policies) {
            Ok(m) => m,
            Err(message) => {
                problems.push(problem("Inadmissible", message));
                continue;
            }
        };
        if let Some(admission) = status.and_then(|s| s.admission.as_ref())
            && is_condition_true(conditions, condition::QUOTA_RESERVED)
        {
            let Some(&queue) = queue_index.get(&admission.cluster_queue) else {
                continue;
            };
            let usage = admission_usage(admission);
            let admitted_at = condition_transition_time(conditions, condition::QUOTA_RESERVED)
                .unwrap_or(model.created);
            admitted_keys.push(key.clone());
            if let Some(preemptor) = evicted_for(conditions) {
                evicting_for.push((key.clone(), preemptor));
            }
            admitted.push((
                AdmittedModel {
                    workload: model,
                    queue,
                    usage: Vec::new(),
                    admitted_at,
                    evicting: is_condition_true(conditions, condition::EVICTED),
                },
                usage,
            ));
            continue;
        }
        if !wl.spec.active {
            continue;
        }
        let Some(queue_name) = wl.spec.queue_name.as_deref().filter(|q| !q.is_empty()) else {
            continue;
        };
        let namespace = wl.namespace().unwrap_or_default();
        let cq_name = match local_queues.get(&(namespace.clone(), queue_name.to_string())) {
            None => {
                problems.push(problem(
                    "Inadmissible",
                    format!("LocalQueue {queue_name} doesn't exist"),
                ));
                continue;
            }
            Some(None) => {
                problems.push(problem(
                    "Inadmissible",
                    format!("LocalQueue {queue_name} has no clusterQueue"),
                ));
                continue;
            }
            Some(Some(cq)) => cq.clone(),
        };
        let Some(&queue) = queue_index.get(&cq_name) else {
            problems.push(problem(
                "Inadmissible",
                format!("ClusterQueue {cq_name} doesn't exist"),
            ));
            continue;
        };
        // Kueue: no namespaceSelector selects no namespace; `{}` selects them all.
        let verdict = match &selectors[queue] {
            None => Ok(false),
            Some(selector) => {
                let labels = namespace_labels.get(&namespace).copied().unwrap_or(&empty);
                victims::selector_matches(selector, labels)
            }
        };
        {
            match verdict {
                Ok(true) => {}
                Ok(false) => {
                    problems.push(problem(
                        "Inadmissible",
                        format!("Workload namespace doesn't match ClusterQueue {cq_name} namespaceSelector"),
                    ));
                    continue;
                }
                Err(e) => {
                    problems.push(problem(
                        "Inadmissible",
                        format!("ClusterQueue {cq_name} spec.namespaceSelector: {e}"),
                    ));
                    continue;
                }
            }
        }
        fingerprints.insert(key.clone(), fingerprint(wl));
        pending.push(PendingModel {
            workload: model,
            queue,
            gate_closed: preemption_gated(wl),
            victims_in_flight: in_flight.get(&key).cloned().unwrap_or_default(),
            yields_to: evicted_for(conditions),
            // A preemptor not admitted since: its room is held. The loop does not remember
            // its flavors (yet): it is assigned greedily again.
            held: in_flight.contains_key(&key).then(HeldFlavors::new),
        });
    }

    let budgets = objects
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
        .collect();

    let snapshot = Snapshot::new(queues, flavors, limits, admitted, budgets);
    // Victims still holding quota are those still admitted.
    let still_admitted: std::collections::HashSet<&str> =
        admitted_keys.iter().map(String::as_str).collect();
    for p in &mut pending {
        p.victims_in_flight
            .retain(|v| still_admitted.contains(v.as_str()));
    }
    // A victim back in its queue yields only to a preemptor that still waits.
    let pending_keys: std::collections::HashSet<String> =
        pending.iter().map(|p| p.workload.key.clone()).collect();
    for p in &mut pending {
        p.yields_to = p.yields_to.take().filter(|k| pending_keys.contains(k));
    }
    // Evicted victims still holding quota (Jobs' workloads) name their preemptor: a
    // restarted shim, which forgot whom it chose, keeps waiting for them instead of
    // choosing more.
    for (victim, preemptor) in &evicting_for {
        if let Some(p) = pending.iter_mut().find(|p| p.workload.key == *preemptor)
            && !p.victims_in_flight.contains(victim)
        {
            p.victims_in_flight.push(victim.clone());
        }
    }
    Built {
        snapshot,
        pending,
        fingerprints,
        problems,
        class_problems,
        admitted_keys,
    }
}

/// The preemptor an evicted workload names in its `Evicted` condition (as
/// `status::evicted` writes it), if it is evicted.
fn evicted_for(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> Option<String> {
    let c = baton_crds::conditions::find_condition(conditions, condition::EVICTED)?;
    if c.status != "True" {
        return None;
    }
    let rest = c.message.split_once("to accommodate workload ")?.1;
    let key = rest.split_whitespace().next()?;
    key.contains('/').then(|| key.to_string())
}

/// What an admission holds: (flavor, resource, milli-units) per assigned resource. An
/// unreadable amount counts as zero (the admission was written by a scheduler, not a user).
pub fn admission_usage(admission: &baton_crds::workload::Admission) -> Vec<(String, String, i128)> {
    let mut usage = Vec::new();
    for psa in &admission.pod_set_assignments {
        for (resource, flavor) in &psa.flavors {
            let amount = psa
                .resource_usage
                .get(resource)
                .and_then(|q| parse_milli(q).ok())
                .unwrap_or(0);
            usage.push((flavor.0.clone(), resource.clone(), amount));
        }
    }
    usage
}

/// The core's view of one workload.
fn workload_model(
    wl: &Workload,
    key: &str,
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
    let mut pod_sets = Vec::new();
    for pod_set in &wl.spec.pod_sets {
        let demand = pod_set_demand(pod_set).map_err(|e| e.to_string())?;
        let spec = pod_set.template.spec.as_ref();
        pod_sets.push(PodSetModel {
            name: pod_set.name.clone(),
            count: demand.count,
            total: demand.total,
            node_selector: spec
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
            labels: pod_set
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.clone())
                .unwrap_or_default(),
        });
    }
    Ok(WorkloadModel {
        key: key.to_string(),
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

/// What of a pending workload can make it admissible again: its spec and its gates.
fn fingerprint(wl: &Workload) -> String {
    let mut text = format!("{}", wl.metadata.generation.unwrap_or(0));
    for gate in gates(wl) {
        text.push_str(&format!(";{}={:?}", gate.name, gate.state));
    }
    text
}

#[cfg(test)]
mod tests;
