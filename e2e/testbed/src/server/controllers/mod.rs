//! The parts of kube-controller-manager (and kube-apiserver's own controllers) whose effects
//! charts and controllers can see. Most run synchronously from the store's [`Hooks`] right
//! after the write path commits or removes an object (so there is nothing to wait for and no
//! background task): ServiceAccount token Secrets (`tokens`), aggregated ClusterRoles
//! (`aggregation`), CRD names and conditions (`crd_status`), a terminating namespace's
//! conditions (`namespaces`) and the garbage collector (`gc`). Their writes go through
//! `kinds::ops` like any other, so watchers see them as separate changes. The job controller
//! and kubelet model (`jobs`) is a background task, and so are the stand-ins for the JobSet,
//! Kubeflow Trainer and KubeRay controllers (`integrations`), which stand on it.

pub(crate) mod aggregation;
pub(crate) mod crd_status;
pub(crate) mod gc;
pub(crate) mod integrations;
pub(crate) mod jobs;
pub(crate) mod namespaces;
pub(crate) mod tokens;

use serde_json::Value;

use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::storage::store::{Hooks, Store};

/// What the write path calls (installed in each cluster's store).
pub const HOOKS: Hooks = Hooks {
    committed,
    deletion_started: gc::deletion_started,
    removed,
    namespace_terminating: namespaces::report_remaining,
};

/// After an object was created or updated.
fn committed(store: &mut Store, rt: &ResourceType, value: &Value) {
    match rt.builtin {
        Some(Builtin::Secret) => tokens::secret_changed(store, value),
        Some(Builtin::ClusterRole) => aggregation::reconcile(store),
        Some(Builtin::CustomResourceDefinition) => crd_status::reconcile(store, value),
        _ => {}
    }
}

/// After an object was removed for good.
fn removed(store: &mut Store, rt: &ResourceType, value: &Value) {
    gc::object_removed(store, value);
    match rt.builtin {
        Some(Builtin::ServiceAccount) => tokens::service_account_removed(store, value),
        Some(Builtin::ClusterRole) => aggregation::reconcile(store),
        _ => {}
    }
}
