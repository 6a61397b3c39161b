//! The manager's watch caches of its own cluster, shared by the reconciler and the queue
//! status writer.

use std::sync::Arc;

use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig};
use kube::runtime::reflector::{ObjectRef, Store};

use crate::manager::plan::replica::LAST_APPLIED;
use crate::manager::plan::routing::RoutingObjects;
use crate::watch::{strip_managed_fields, synced};

#[derive(Clone)]
pub struct ManagerStores {
    pub workloads: Store<Workload>,
    pub local_queues: Store<LocalQueue>,
    pub cluster_queues: Store<ClusterQueue>,
    pub admission_checks: Store<AdmissionCheck>,
    pub configs: Store<MultiKueueConfig>,
    pub clusters: Store<MultiKueueCluster>,
    /// The manager Workloads by the uid of the object controlling them.
    pub owners: Arc<crate::manager::shell::owner_index::OwnerIndex>,
}

impl ManagerStores {
    /// Waits until every cache holds its first full list.
    pub async fn synced(&self) {
        futures::join!(
            synced(&self.workloads),
            synced(&self.local_queues),
            synced(&self.cluster_queues),
            synced(&self.admission_checks),
            synced(&self.configs),
            synced(&self.clusters),
        );
    }
}

/// Routing reads the caches' shared objects, one lookup each.
impl RoutingObjects for ManagerStores {
    fn local_queue(&self, namespace: &str, name: &str) -> Option<Arc<LocalQueue>> {
        self.local_queues
            .get(&ObjectRef::new(name).within(namespace))
    }

    fn cluster_queue(&self, name: &str) -> Option<Arc<ClusterQueue>> {
        self.cluster_queues.get(&ObjectRef::new(name))
    }

    fn admission_check(&self, name: &str) -> Option<Arc<AdmissionCheck>> {
        self.admission_checks.get(&ObjectRef::new(name))
    }

    fn config(&self, name: &str) -> Option<Arc<MultiKueueConfig>> {
        self.configs.get(&ObjectRef::new(name))
    }
}

/// A manager Workload as its cache keeps it: without managed fields and kubectl's copy of
/// the applied object (replicas do not carry it, and the manager writes only the status and
/// the finalizers, never the whole object), and without the spare room of its lists.
pub fn strip_manager_workload(wl: &mut Workload) {
    strip_managed_fields(wl);
    if let Some(annotations) = wl.metadata.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty() {
            // An emptied map keeps its node; a new one holds none.
            *annotations = Default::default();
        }
    }
    wl.shrink_to_fit();
}

/// See [`strip_manager_workload`].
pub fn stripped_manager_workload(mut wl: Workload) -> Workload {
    strip_manager_workload(&mut wl);
    wl
}
