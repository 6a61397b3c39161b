//! Manager-side quota (DESIGN.md §3, as Kueue): the admission loop the workers run
//! ([`crate::admission::scheduler`]) runs on the manager too, over the ClusterQueues that
//! carry a MultiKueue AdmissionCheck. A workload reserves quota there first; only then does
//! the lifecycle dispatch it. Other ClusterQueues on the manager cluster are not Baton's.
//!
//! It shares the reconciler's caches of Workloads and queues and adds the ones admission
//! reads besides (flavors, priority classes, namespaces). Disruption budgets are not read:
//! no pods run on the manager, and a manager eviction removes replicas, not pods.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::Api;
use tokio::sync::mpsc;

use crate::admission::scheduler::{Caches, LoopState, Role, Scope, Shell, Wakeups, cycle};
use crate::admission::status::Holding;
use crate::events::Events;
use crate::manager::plan::queues::{QueueObjects, check_activity, queue_activity};
use crate::manager::shell::classes::ClassStores;
use crate::manager::shell::stores::ManagerStores;
use crate::metrics::Metrics;
use crate::watch::cache;

/// The ClusterQueues the manager governs: those naming a MultiKueue check, each inactive
/// while its check is.
pub fn manager_scope(stores: &ManagerStores) -> Scope {
    let (checks, configs, clusters, cluster_queues) = (
        stores.admission_checks.state(),
        stores.configs.state(),
        stores.clusters.state(),
        stores.cluster_queues.state(),
    );
    let activity = check_activity(&QueueObjects {
        checks: &checks,
        configs: &configs,
        clusters: &clusters,
        cluster_queues: &cluster_queues,
    });
    Scope::Only(queue_activity(&cluster_queues, &activity))
}

/// Runs the manager's admission loop until the process stops. `woken` ticks when a Workload,
/// a queue or a check's activity changed; `wake` is its sender (a failed write retries
/// through it). `classes` tick `wake` too.
pub async fn run(
    client: Client,
    stores: ManagerStores,
    classes: ClassStores,
    recorder: Events,
    metrics: Arc<Metrics>,
    wake: mpsc::UnboundedSender<()>,
    woken: mpsc::UnboundedReceiver<()>,
) {
    let caches = Caches {
        workloads: stores.workloads.clone(),
        cluster_queues: stores.cluster_queues.clone(),
        local_queues: stores.local_queues.clone(),
        flavors: cache(Api::all(client.clone()), wake.clone()),
        workload_classes: classes.workload,
        pod_classes: classes.pod,
        budgets: None,
        namespaces: cache::<Namespace>(Api::all(client.clone()), wake.clone()),
    };
    futures::join!(caches.synced(), stores.synced());
    let scope_stores = stores.clone();
    let shell = Shell {
        client,
        recorder,
        metrics,
        caches,
        wake,
        role: Role {
            scope: Box::new(move || manager_scope(&scope_stores)),
            holding: Holding::Never,
        },
    };
    let mut state = LoopState::default();
    let mut wakeups = Wakeups::new(woken);
    while wakeups.next(&mut state).await {
        cycle(&shell, &mut state).await;
    }
}
