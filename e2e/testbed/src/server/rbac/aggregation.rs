//! Aggregated ClusterRoles: a ClusterRole with an `aggregationRule` gets the rules of every
//! ClusterRole its selectors match, in name order without duplicates (as kube-controller-
//! manager's clusterrole-aggregation controller writes them).

use serde_json::Value;

use super::policy::CLUSTER_ROLES;
use crate::server::managed::Operation;
use crate::server::meta;
use crate::server::ops::{self, WriteOpts};
use crate::server::selector::LabelSelector;
use crate::server::store::Store;

const MANAGER: &str = "clusterrole-aggregation-controller";

/// Brings every aggregated ClusterRole up to date; run after any ClusterRole changed.
pub fn reconcile(store: &mut Store) {
    let roles: Vec<Value> = store
        .list(CLUSTER_ROLES, None, None)
        .map(|o| o.value())
        .collect();
    for agg in &roles {
        let Some(selectors) = agg["aggregationRule"]["clusterRoleSelectors"].as_array() else {
            continue;
        };
        let selectors: Vec<LabelSelector> = selectors
            .iter()
            .filter_map(LabelSelector::from_object)
            .collect();
        let name = meta::name_of(agg);
        let mut rules: Vec<Value> = Vec::new();
        for r in &roles {
            if meta::name_of(r) == name {
                continue;
            }
            let labels = meta::labels(r);
            if !selectors
                .iter()
                .any(|s| !s.is_empty() && s.matches(&labels))
            {
                continue;
            }
            for rule in r["rules"].as_array().into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        let current = agg["rules"].as_array().cloned().unwrap_or_default();
        if current == rules {
            continue;
        }
        let Some(rt) = store
            .registry
            .get("rbac.authorization.k8s.io", "v1", "clusterroles")
        else {
            return;
        };
        let mut updated = agg.clone();
        updated["rules"] = Value::Array(rules);
        let opts = WriteOpts {
            manager: MANAGER.into(),
            ..WriteOpts::default()
        };
        // The update runs this again (after every ClusterRole commit) with fresh objects, which
        // handles the other aggregated roles; this pass's copies are stale from here on.
        if let Err(e) = ops::update(store, &rt, None, name, updated, &opts, Operation::Update) {
            tracing::debug!(role = name, error = %e, "cannot aggregate ClusterRole");
        }
        return;
    }
}
