//! The parts of kube-controller-manager whose effects charts and controllers can see, run
//! synchronously right after each committed change (so there is nothing to wait for and no
//! background task): ServiceAccount token Secrets and aggregated ClusterRoles. Their writes
//! go through `ops` like any other, so watchers see them as separate changes.

use serde_json::Value;

use super::auth::tokens;
use super::rbac::aggregation;
use super::resource::{Builtin, ResourceType};
use super::store::Store;

/// After an object was created or updated.
pub fn after_commit(store: &mut Store, rt: &ResourceType, value: &Value) {
    match rt.builtin {
        Some(Builtin::Secret) => tokens::secret_changed(store, value),
        Some(Builtin::ClusterRole) => aggregation::reconcile(store),
        _ => {}
    }
}

/// After an object was removed for good.
pub fn after_removal(store: &mut Store, rt: &ResourceType, value: &Value) {
    match rt.builtin {
        Some(Builtin::ServiceAccount) => tokens::service_account_removed(store, value),
        Some(Builtin::ClusterRole) => aggregation::reconcile(store),
        _ => {}
    }
}
