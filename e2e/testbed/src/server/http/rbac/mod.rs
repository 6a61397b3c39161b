//! Authorization: kube-apiserver's RBAC for the users the testbed authenticates by token or
//! impersonation. The testbed's own kubeconfig (no credentials) is the cluster administrator
//! and never reaches this module, so its requests cost nothing extra.
//!
//! `attributes` (HTTP to verb/resource), `rules` (one rule against a request), `policy` (the
//! bindings and roles), `defaults` (what every authenticated user may do). RBAC objects are
//! validated in `kinds::rbac`; aggregated ClusterRoles are `controllers::aggregation`.

pub(crate) mod attributes;
pub(crate) mod defaults;
pub(crate) mod policy;
pub(crate) mod rules;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

pub use attributes::Attributes;
pub use policy::{Decision, Policy};

use crate::server::api::error::{ApiError, qualified};
use crate::server::api::user::UserInfo;
use crate::server::storage::store::Store;

/// The compiled policy, rebuilt only when an RBAC object changed since the last request.
#[derive(Default)]
pub struct PolicyCache(Mutex<Option<(policy::Fingerprint, Arc<Policy>)>>);

impl PolicyCache {
    pub fn get(&self, store: &Store) -> Arc<Policy> {
        let fp = policy::fingerprint(store);
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some((cached, p)) if *cached == fp => p.clone(),
            _ => {
                let p = Arc::new(Policy::from_store(store));
                *slot = Some((fp, p.clone()));
                p
            }
        }
    }
}

/// The 403 kube-apiserver sends for a denied request.
pub fn forbidden(user: &UserInfo, a: &Attributes, reason: &str) -> ApiError {
    let mut msg = if !a.resource_request {
        format!("User {:?} cannot {} path {:?}", user.name, a.verb, a.path)
    } else if a.namespace.is_empty() {
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
            user.name,
            a.verb,
            a.combined_resource(),
            a.group
        )
    } else {
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
            user.name,
            a.verb,
            a.combined_resource(),
            a.group,
            a.namespace
        )
    };
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    let message = if !a.resource_request {
        format!("forbidden: {msg}")
    } else if a.name.is_empty() {
        format!("{} is forbidden: {msg}", qualified(&a.group, &a.resource))
    } else {
        format!(
            "{} {:?} is forbidden: {msg}",
            qualified(&a.group, &a.resource),
            a.name
        )
    };
    // Empty fields are left out, as Go's omitempty does.
    let mut details = Map::new();
    for (k, v) in [
        ("name", &a.name),
        ("group", &a.group),
        ("kind", &a.resource),
    ] {
        if !v.is_empty() {
            details.insert(k.into(), json!(v));
        }
    }
    ApiError::forbidden(message).with_details(Value::Object(details))
}
