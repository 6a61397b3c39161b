//! Aggregated ClusterRoles, as kube-controller-manager's clusterrole-aggregation controller
//! keeps them: a ClusterRole with an `aggregationRule` gets the rules of the ClusterRoles
//! each selector matches (selector by selector, roles in name order, no duplicates), written
//! by server-side apply with force, so the controller owns `rules`.

use serde_json::{Value, json};

use crate::server::api::meta;
use crate::server::api::selector::LabelSelector;
use crate::server::kinds::managed::{self, Operation};
use crate::server::kinds::ops::{self, WriteOpts};
use crate::server::storage::store::Store;

const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";

const MANAGER: &str = "clusterrole-aggregation-controller";
const GROUP: &str = "rbac.authorization.k8s.io";

/// The rules an aggregated role should have, from all `roles` (in name order).
pub fn aggregated_rules(aggregate: &Value, roles: &[Value]) -> Vec<Value> {
    let name = meta::name_of(aggregate);
    let mut rules: Vec<Value> = Vec::new();
    let selectors = aggregate["aggregationRule"]["clusterRoleSelectors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(LabelSelector::from_object);
    for selector in selectors {
        // An empty selector matches nothing here (the controller's lister gets `Nothing`).
        if selector.is_empty() {
            continue;
        }
        for role in roles {
            if meta::name_of(role) == name || !selector.matches(&meta::labels(role)) {
                continue;
            }
            for rule in role["rules"].as_array().into_iter().flatten() {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    rules
}

/// Brings every aggregated ClusterRole up to date; run after any ClusterRole changed.
pub fn reconcile(store: &mut Store) {
    let mut roles: Vec<Value> = store
        .list(CLUSTER_ROLES, None, None)
        .map(|o| o.value())
        .collect();
    roles.sort_by(|a, b| meta::name_of(a).cmp(meta::name_of(b)));
    for agg in &roles {
        if !agg["aggregationRule"].is_object() {
            continue;
        }
        let rules = aggregated_rules(agg, &roles);
        let current = agg["rules"].as_array().cloned().unwrap_or_default();
        // Empty and absent are the same rule list (Go's semantic equality).
        if current == rules {
            continue;
        }
        let Some(rt) = store.registry.get(GROUP, "v1", "clusterroles") else {
            return;
        };
        let name = meta::name_of(agg).to_string();
        let applied = json!({
            "apiVersion": rt.api_version(),
            "kind": rt.kind,
            "metadata": {"name": name},
            "rules": rules,
        });
        let merged = managed::apply(
            Some(agg),
            &applied,
            MANAGER,
            true,
            &rt.api_version(),
            None,
            rt.schema.as_ref(),
            false,
            (GROUP, "clusterroles", &name),
        );
        let opts = WriteOpts {
            manager: MANAGER.into(),
            ..WriteOpts::default()
        };
        // The write runs this again (after every ClusterRole commit) with fresh objects, which
        // handles the other aggregated roles; this pass's copies are stale from here on.
        let written = merged.and_then(|m| {
            ops::update_from(
                store,
                &rt,
                None,
                &name,
                m,
                Some(agg.clone()),
                &opts,
                Operation::Apply,
            )
        });
        if let Err(e) = written {
            tracing::debug!(role = %name, error = %e, "cannot aggregate ClusterRole");
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, label: Option<&str>, verb: &str) -> Value {
        let mut r = json!({"metadata": {"name": name}, "rules": [{"verbs": [verb]}]});
        if let Some(l) = label {
            r["metadata"]["labels"] = json!({"agg": l});
        }
        r
    }

    #[test]
    fn rules_follow_selectors_then_names() {
        let agg = json!({"metadata": {"name": "all"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"agg": "b"}}, {"matchLabels": {"agg": "a"}}, {}
        ]}});
        let roles = vec![
            role("a1", Some("a"), "get"),
            role("a2", Some("a"), "list"),
            role("b1", Some("b"), "watch"),
            role("b2", Some("b"), "get"),
            role("c", None, "delete"),
        ];
        let verbs: Vec<Value> = aggregated_rules(&agg, &roles)
            .into_iter()
            .map(|r| r["verbs"][0].clone())
            .collect();
        assert_eq!(verbs, [json!("watch"), json!("get"), json!("list")]);
    }
}
