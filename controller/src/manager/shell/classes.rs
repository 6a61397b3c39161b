//! The manager's caches of priority classes, shared by its admission loop (which ranks
//! workloads by priority) and its reconcilers (which give replicas and Job Workloads their
//! resolved `spec.priority`, so that workers need no copy of the manager's classes).

use baton_crds::WorkloadPriorityClass;
use baton_crds::priority::{PriorityClasses, resolve_priority};
use baton_crds::workload::WorkloadSpec;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::mpsc;

use crate::watch::{cache, synced};

/// WorkloadPriorityClasses and PriorityClasses of the manager cluster; cheap to clone.
#[derive(Clone)]
pub struct ClassStores {
    pub workload: Store<WorkloadPriorityClass>,
    pub pod: Store<PriorityClass>,
}

impl ClassStores {
    /// Watches both kinds; every change ticks `changed`.
    pub fn watch(client: &Client, changed: &mpsc::UnboundedSender<()>) -> Self {
        Self {
            workload: cache(Api::all(client.clone()), changed.clone()),
            pod: cache(Api::all(client.clone()), changed.clone()),
        }
    }

    /// Waits until both caches hold their first full list.
    pub async fn synced(&self) {
        futures::join!(synced(&self.workload), synced(&self.pod));
    }

    /// A workload's priority on the manager: its `spec.priority`, else its class's value;
    /// `None` when the class is not found.
    pub fn priority_of(&self, spec: &WorkloadSpec) -> Option<i32> {
        resolve_priority(spec, self).ok()
    }
}

impl PriorityClasses for ClassStores {
    fn workload_priority_class(&self, name: &str) -> Option<i32> {
        self.workload
            .get(&ObjectRef::new(name))
            .map(|c| c.spec.value)
    }

    fn pod_priority_class(&self, name: &str) -> Option<i32> {
        self.pod
            .get(&ObjectRef::new(name))
            .map(|c| c.value.unwrap_or(0))
    }
}
