//! What kube-apiserver's bootstrap policy lets every authenticated user do (the
//! `system:basic-user`, `system:discovery` and `system:public-info-viewer` ClusterRoles bound
//! to `system:authenticated`): ask who they are and what they may do, read discovery,
//! OpenAPI, health and version. Kept in code, not as objects, so clusters start as before.

use std::sync::LazyLock;

use super::attributes::Attributes;
use super::policy::Decision;
use super::rules::Rule;
use crate::server::auth::{AUTHENTICATED, UserInfo};

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// (ClusterRole name, its rules).
static DEFAULTS: LazyLock<Vec<(&'static str, Vec<Rule>)>> = LazyLock::new(|| {
    vec![
        (
            "system:basic-user",
            vec![
                Rule {
                    verbs: list(&["create"]),
                    api_groups: list(&["authorization.k8s.io"]),
                    resources: list(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                    ..Rule::default()
                },
                Rule {
                    verbs: list(&["create"]),
                    api_groups: list(&["authentication.k8s.io"]),
                    resources: list(&["selfsubjectreviews"]),
                    ..Rule::default()
                },
            ],
        ),
        (
            "system:discovery",
            vec![Rule {
                verbs: list(&["get"]),
                non_resource_urls: list(&[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ]),
                ..Rule::default()
            }],
        ),
    ]
});

/// Allowed by the default policy, with kube-apiserver's reason; None when it has no say.
pub fn authorize(user: &UserInfo, a: &Attributes) -> Option<Decision> {
    if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        return None;
    }
    DEFAULTS.iter().find_map(|(role, rules)| {
        rules.iter().any(|r| r.allows(a)).then(|| {
            Decision::allow(format!(
                "RBAC: allowed by ClusterRoleBinding \"{role}\" of ClusterRole \"{role}\" to Group \"{AUTHENTICATED}\""
            ))
        })
    })
}

/// The default rules every authenticated user has (for SelfSubjectRulesReview).
pub fn rules(user: &UserInfo) -> Vec<Rule> {
    if !user.groups.iter().any(|g| g == AUTHENTICATED) {
        return Vec::new();
    }
    DEFAULTS
        .iter()
        .flat_map(|(_, r)| r.iter().cloned())
        .collect()
}
