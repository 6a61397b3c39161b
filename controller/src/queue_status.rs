//! ClusterQueue and LocalQueue status: counts and usage per flavor, as `kubectl get cq,lq`
//! and Kueue users expect. Shared by the worker shim and the manager. Pure: objects in,
//! statuses out; `write` only sends the changes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use baton_crds::cluster_queue::{ClusterQueueStatus, FlavorUsage, ResourceUsage};
use baton_crds::conditions::{ConditionStatus, NewCondition, is_condition_true, set_condition};
use baton_crds::constants::condition;
use baton_crds::local_queue::{LocalQueueFlavorUsage, LocalQueueResourceUsage, LocalQueueStatus};
use baton_crds::quantity::{format_milli, parse_milli};
use baton_crds::{ClusterQueue, LocalQueue, Workload};
use chrono::{DateTime, Utc};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use baton_crds::demand::admission_usage;

/// Usage by flavor, then resource, in milli-units.
type FlavorTotals = BTreeMap<String, BTreeMap<String, i128>>;

#[derive(Default)]
struct Tally {
    pending: i32,
    /// Holding a quota reservation (Kueue's `reservingWorkloads`, `flavorsReservation`).
    reserving: i32,
    reservation: FlavorTotals,
    /// Of those, `Admitted=True` (every admission check Ready; Kueue's `admittedWorkloads`,
    /// `flavorsUsage`). On a worker, whose queues have no checks, the two are the same.
    admitted: i32,
    usage: FlavorTotals,
}

/// Why a ClusterQueue admits nothing new: its `Active=False` reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inactive {
    pub reason: String,
    pub message: String,
}

/// What the statuses are computed from. `activity` names every ClusterQueue the caller keeps
/// status for (absent ones get none) and, for each, why it is inactive, if it is.
pub struct QueueInputs<'a> {
    pub workloads: &'a [Arc<Workload>],
    pub cluster_queues: &'a [Arc<ClusterQueue>],
    pub local_queues: &'a [Arc<LocalQueue>],
    pub activity: &'a BTreeMap<String, Option<Inactive>>,
}

/// New statuses for queues whose status would change.
pub struct QueueStatuses {
    pub cluster_queues: Vec<(String, ClusterQueueStatus)>,
    /// (namespace, name, status)
    pub local_queues: Vec<(String, String, LocalQueueStatus)>,
}

/// Computes the status of every ClusterQueue in `activity`, and of every LocalQueue that
/// points to one, and keeps those that differ from what is stored.
pub fn queue_statuses(inputs: &QueueInputs<'_>, now: DateTime<Utc>) -> QueueStatuses {
    let (mut by_cq, mut by_lq) = tally(inputs.workloads, inputs.local_queues);
    QueueStatuses {
        cluster_queues: cluster_queue_statuses(inputs, &mut by_cq, now),
        local_queues: local_queue_statuses(inputs, &mut by_lq, now),
    }
}

/// Per ClusterQueue and per LocalQueue: the pending, reserving and admitted workloads and
/// what they hold. A reservation counts where its admission says the quota is held.
#[allow(clippy::type_complexity)]
fn tally(
    workloads: &[Arc<Workload>],
    local_queues: &[Arc<LocalQueue>],
) -> (HashMap<String, Tally>, HashMap<(String, String), Tally>) {
    let lq_target: HashMap<(String, String), String> = local_queues
        .iter()
        .filter_map(|lq| {
            Some((
                (lq.namespace().unwrap_or_default(), lq.name_any()),
                lq.spec.cluster_queue.clone()?,
            ))
        })
        .collect();
    let mut by_cq: HashMap<String, Tally> = HashMap::new();
    let mut by_lq: HashMap<(String, String), Tally> = HashMap::new();
    for wl in workloads {
        if wl.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let conditions = wl
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or(&[]);
        if is_condition_true(conditions, condition::FINISHED) {
            continue;
        }
        let namespace = wl.namespace().unwrap_or_default();
        let lq_key = wl.spec.queue_name.clone().map(|q| (namespace.clone(), q));
        let admission = wl.status.as_ref().and_then(|s| s.admission.as_ref());
        match admission {
            Some(admission) if is_condition_true(conditions, condition::QUOTA_RESERVED) => {
                let mut usage = FlavorTotals::new();
                for (flavor, resource, amount) in admission_usage(admission) {
                    *usage
                        .entry(flavor)
                        .or_default()
                        .entry(resource)
                        .or_default() += amount;
                }
                let admitted = is_condition_true(conditions, condition::ADMITTED);
                let add = |tally: &mut Tally| {
                    tally.reserving += 1;
                    add_usage(&mut tally.reservation, &usage);
                    if admitted {
                        tally.admitted += 1;
                        add_usage(&mut tally.usage, &usage);
                    }
                };
                add(by_cq.entry(admission.cluster_queue.clone()).or_default());
                if let Some(k) = lq_key {
                    add(by_lq.entry(k).or_default());
                }
            }
            _ => {
                if !wl.spec.active {
                    continue;
                }
                let Some(k) = lq_key else { continue };
                if let Some(cq) = lq_target.get(&k) {
                    by_cq.entry(cq.clone()).or_default().pending += 1;
                }
                by_lq.entry(k).or_default().pending += 1;
            }
        }
    }
    (by_cq, by_lq)
}

/// The ClusterQueues' new statuses (those that change).
fn cluster_queue_statuses(
    inputs: &QueueInputs<'_>,
    by_cq: &mut HashMap<String, Tally>,
    now: DateTime<Utc>,
) -> Vec<(String, ClusterQueueStatus)> {
    let mut statuses = Vec::new();
    for cq in inputs.cluster_queues {
        let name = cq.name_any();
        let Some(inactive) = inputs.activity.get(&name) else {
            continue;
        };
        let tally = by_cq.remove(&name).unwrap_or_default();
        let old = cq.status.clone().unwrap_or_default();
        let mut status = old.clone();
        status.pending_workloads = Some(tally.pending);
        status.reserving_workloads = Some(tally.reserving);
        status.admitted_workloads = Some(tally.admitted);
        status.flavors_reservation = cluster_queue_usage(cq, &tally.reservation);
        status.flavors_usage = cluster_queue_usage(cq, &tally.usage);
        let (value, why, message) = match inactive {
            None => (ConditionStatus::True, "Ready", "Can admit new workloads"),
            Some(inactive) => (
                ConditionStatus::False,
                inactive.reason.as_str(),
                inactive.message.as_str(),
            ),
        };
        set_condition(
            &mut status.conditions,
            NewCondition::new(condition::ACTIVE, value, why, message),
            now,
        );
        if status != old {
            statuses.push((name, status));
        }
    }
    statuses
}

/// The LocalQueues' new statuses (those that change); queues of ClusterQueues the caller
/// does not keep are someone else's.
fn local_queue_statuses(
    inputs: &QueueInputs<'_>,
    by_lq: &mut HashMap<(String, String), Tally>,
    now: DateTime<Utc>,
) -> Vec<(String, String, LocalQueueStatus)> {
    let activity = inputs.activity;
    let known: HashMap<String, bool> = inputs
        .cluster_queues
        .iter()
        .map(|cq| {
            let name = cq.name_any();
            let active = matches!(activity.get(&name), Some(None));
            (name, active)
        })
        .collect();
    let mut statuses = Vec::new();
    for lq in inputs.local_queues {
        let key = (lq.namespace().unwrap_or_default(), lq.name_any());
        let target = lq.spec.cluster_queue.as_deref().unwrap_or("");
        if known.contains_key(target) && !activity.contains_key(target) {
            continue;
        }
        let tally = by_lq.remove(&key).unwrap_or_default();
        let old = lq.status.clone().unwrap_or_default();
        let mut status = old.clone();
        status.pending_workloads = Some(tally.pending);
        status.reserving_workloads = Some(tally.reserving);
        status.admitted_workloads = Some(tally.admitted);
        status.flavors_reservation = local_queue_usage(&tally.reservation);
        status.flavors_usage = local_queue_usage(&tally.usage);
        let (value, why, message) = match known.get(target) {
            Some(true) => (
                ConditionStatus::True,
                "Ready",
                "Can submit new workloads to localQueue".to_string(),
            ),
            Some(false) => (
                ConditionStatus::False,
                "ClusterQueueIsInactive",
                "Can't submit new workloads to clusterQueue".to_string(),
            ),
            None => (
                ConditionStatus::False,
                "ClusterQueueDoesNotExist",
                format!("Can't submit new workloads to clusterQueue: {target:?} doesn't exist"),
            ),
        };
        set_condition(
            &mut status.conditions,
            NewCondition::new(condition::ACTIVE, value, why, &message),
            now,
        );
        if status != old {
            statuses.push((key.0, key.1, status));
        }
    }
    statuses
}

fn nominal_quota(cq: &ClusterQueue) -> HashMap<(String, String), i128> {
    let mut out = HashMap::new();
    for group in &cq.spec.resource_groups {
        for flavor in &group.flavors {
            for r in &flavor.resources {
                out.insert(
                    (flavor.name.clone(), r.name.clone()),
                    parse_milli(&r.nominal_quota).unwrap_or(0),
                );
            }
        }
    }
    out
}

fn flavor_order(cq: &ClusterQueue) -> Vec<String> {
    cq.spec
        .resource_groups
        .iter()
        .flat_map(|g| g.flavors.iter().map(|f| f.name.clone()))
        .collect()
}

fn resource_order(cq: &ClusterQueue, flavor: &str) -> Vec<String> {
    cq.spec
        .resource_groups
        .iter()
        .flat_map(|g| g.flavors.iter())
        .filter(|f| f.name == flavor)
        .flat_map(|f| f.resources.iter().map(|r| r.name.clone()))
        .collect()
}

fn add_usage(totals: &mut FlavorTotals, usage: &FlavorTotals) {
    for (f, rs) in usage {
        for (r, a) in rs {
            *totals
                .entry(f.clone())
                .or_default()
                .entry(r.clone())
                .or_default() += a;
        }
    }
}

/// A ClusterQueue's usage per flavor and resource, in the queue's own order, with what is
/// borrowed beyond its nominal quota.
fn cluster_queue_usage(cq: &ClusterQueue, totals: &FlavorTotals) -> Vec<FlavorUsage> {
    let nominal = nominal_quota(cq);
    flavor_order(cq)
        .into_iter()
        .map(|flavor| FlavorUsage {
            resources: resource_order(cq, &flavor)
                .into_iter()
                .map(|resource| {
                    let total = totals
                        .get(&flavor)
                        .and_then(|r| r.get(&resource))
                        .copied()
                        .unwrap_or(0);
                    let quota = nominal
                        .get(&(flavor.clone(), resource.clone()))
                        .copied()
                        .unwrap_or(0);
                    ResourceUsage {
                        name: resource,
                        total: Some(format_milli(total)),
                        borrowed: Some(format_milli((total - quota).max(0))),
                    }
                })
                .collect(),
            name: flavor,
        })
        .collect()
}

fn local_queue_usage(totals: &FlavorTotals) -> Vec<LocalQueueFlavorUsage> {
    totals
        .iter()
        .map(|(flavor, resources)| LocalQueueFlavorUsage {
            name: flavor.clone(),
            resources: resources
                .iter()
                .map(|(r, a)| LocalQueueResourceUsage {
                    name: r.clone(),
                    total: Some(format_milli(*a)),
                })
                .collect(),
        })
        .collect()
}

/// Writes the changed statuses with merge patches. A failure is logged and left for the next
/// round, which recomputes from the objects.
pub async fn write(client: &Client, statuses: QueueStatuses) {
    for (name, status) in statuses.cluster_queues {
        patch_status(Api::<ClusterQueue>::all(client.clone()), &name, &status).await;
    }
    for (namespace, name, status) in statuses.local_queues {
        patch_status(
            Api::<LocalQueue>::namespaced(client.clone(), &namespace),
            &name,
            &status,
        )
        .await;
    }
}

/// Merge-patches one object's status. A failure is logged, not returned: the next round
/// recomputes and tries again. A refused write is visible by default (a missing RBAC verb
/// must not go unnoticed); other failures are logged at debug.
pub async fn patch_status<K>(api: Api<K>, name: &str, status: &impl Serialize)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = serde_json::json!({ "status": status });
    let Err(error) = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    else {
        return;
    };
    let kind = K::kind(&());
    if matches!(&error, kube::Error::Api(status) if status.code == 403) {
        tracing::warn!(%kind, %name, %error, "cannot write status: forbidden");
    } else {
        tracing::debug!(%kind, %name, %error, "cannot write status");
    }
}

#[cfg(test)]
mod tests;
