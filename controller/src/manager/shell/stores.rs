//! The manager's watch caches of its own cluster, shared by the reconciler and the queue
//! status writer.

use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig};
use kube::runtime::reflector::Store;

use crate::watch::synced;

#[derive(Clone)]
pub struct ManagerStores {
    pub workloads: Store<Workload>,
    pub local_queues: Store<LocalQueue>,
    pub cluster_queues: Store<ClusterQueue>,
    pub admission_checks: Store<AdmissionCheck>,
    pub configs: Store<MultiKueueConfig>,
    pub clusters: Store<MultiKueueCluster>,
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
