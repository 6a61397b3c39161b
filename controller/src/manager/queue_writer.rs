//! Keeps the status of the manager's AdmissionChecks, ClusterQueues and LocalQueues current.
//! It runs after reconciles report a change (batched), and every 30 s in case a change was
//! missed. It writes only what differs from the cached objects.

use std::sync::Arc;
use std::time::Duration;

use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig};
use chrono::Utc;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use tokio::sync::Notify;

use super::queues::{QueueObjects, check_activity, check_statuses, queue_activity};
use crate::queue_status::{self, Attribution, QueueInputs, queue_statuses, report_write_failure};
use crate::watch::synced;

/// How long changes gather before one recomputation.
const BATCH: Duration = Duration::from_millis(100);
const RESYNC: Duration = Duration::from_secs(30);

/// The caches the statuses are computed from.
#[derive(Clone)]
pub struct QueueStores {
    pub workloads: Store<Workload>,
    pub local_queues: Store<LocalQueue>,
    pub cluster_queues: Store<ClusterQueue>,
    pub admission_checks: Store<AdmissionCheck>,
    pub configs: Store<MultiKueueConfig>,
    pub clusters: Store<MultiKueueCluster>,
}

/// Runs until the process stops.
pub async fn keep_queue_status(client: Client, stores: QueueStores, changed: Arc<Notify>) {
    futures::join!(
        synced(&stores.workloads),
        synced(&stores.local_queues),
        synced(&stores.cluster_queues),
        synced(&stores.admission_checks),
        synced(&stores.configs),
        synced(&stores.clusters),
    );
    loop {
        write_changes(&client, &stores).await;
        let _ = tokio::time::timeout(RESYNC, changed.notified()).await;
        tokio::time::sleep(BATCH).await;
    }
}

async fn write_changes(client: &Client, stores: &QueueStores) {
    let checks = stores.admission_checks.state();
    let configs = stores.configs.state();
    let clusters = stores.clusters.state();
    let cluster_queues = stores.cluster_queues.state();
    let objects = QueueObjects {
        checks: &checks,
        configs: &configs,
        clusters: &clusters,
        cluster_queues: &cluster_queues,
    };
    let now = Utc::now();
    let checks_active = check_activity(&objects);
    for (name, status) in check_statuses(&checks, &checks_active, now) {
        let api: Api<AdmissionCheck> = Api::all(client.clone());
        let patch = serde_json::json!({ "status": status });
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            report_write_failure("AdmissionCheck", &name, &e);
        }
    }
    let activity = queue_activity(&cluster_queues, &checks_active);
    let statuses = queue_statuses(
        &QueueInputs {
            workloads: &stores.workloads.state(),
            cluster_queues: &cluster_queues,
            local_queues: &stores.local_queues.state(),
            activity: &activity,
            attribution: Attribution::LocalQueue,
        },
        now,
    );
    queue_status::write(client, statuses).await;
}
