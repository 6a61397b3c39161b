//! Which ClusterQueues an admission loop governs, and what that leaves of the cluster's
//! objects: the worker governs all of them; the manager only its MultiKueue ClusterQueues
//! (each inactive while its check is), their LocalQueues and those queues' workloads. Pure.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use baton_crds::{ClusterQueue, LocalQueue, Workload};
use kube::ResourceExt;

use crate::queue_status::Inactive;
use baton_core::admission::model::{QueueModel, QueueProblem};

/// Which ClusterQueues a loop governs, decided afresh every cycle.
#[derive(Clone, Debug, Default)]
pub enum Scope {
    /// Every ClusterQueue of the cluster (the worker).
    #[default]
    Everything,
    /// Only these, each with why it admits nothing if it doesn't (the manager: its
    /// MultiKueue ClusterQueues, inactive while their check is).
    Only(BTreeMap<String, Option<Inactive>>),
}

/// The ClusterQueues and LocalQueues in scope.
pub fn scoped_queues(
    scope: &Scope,
    cqs: Vec<Arc<ClusterQueue>>,
    lqs: Vec<Arc<LocalQueue>>,
) -> (Vec<Arc<ClusterQueue>>, Vec<Arc<LocalQueue>>) {
    match scope {
        Scope::Everything => (cqs, lqs),
        Scope::Only(governed) => (
            cqs.into_iter()
                .filter(|cq| governed.contains_key(&cq.name_any()))
                .collect(),
            lqs.into_iter()
                .filter(|lq| {
                    lq.spec
                        .cluster_queue
                        .as_ref()
                        .is_some_and(|cq| governed.contains_key(cq))
                })
                .collect(),
        ),
    }
}

/// The workloads of the LocalQueues in scope (all of them for the worker: one naming a
/// missing queue is reported there).
pub fn scoped_workloads(
    scope: &Scope,
    lqs: &[Arc<LocalQueue>],
    workloads: Vec<Arc<Workload>>,
) -> Vec<Arc<Workload>> {
    if matches!(scope, Scope::Everything) {
        return workloads;
    }
    let queues: HashSet<(String, String)> = lqs
        .iter()
        .map(|lq| (lq.namespace().unwrap_or_default(), lq.name_any()))
        .collect();
    workloads
        .into_iter()
        .filter(|wl| {
            queues.contains(&(
                wl.namespace().unwrap_or_default(),
                wl.spec.queue_name.clone().unwrap_or_default(),
            ))
        })
        .collect()
}

/// A queue the scope holds inactive admits nothing, unless it is inactive for a reason of
/// its own already.
pub fn mark_inactive(scope: &Scope, queues: &mut [QueueModel]) {
    let Scope::Only(governed) = scope else { return };
    for queue in queues.iter_mut().filter(|q| q.inactive.is_none()) {
        if let Some(Some(why)) = governed.get(&queue.name) {
            queue.inactive = Some(QueueProblem {
                reason: "AdmissionCheckInactive",
                message: why
                    .message
                    .trim_start_matches("Can't admit new workloads: ")
                    .to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests;
