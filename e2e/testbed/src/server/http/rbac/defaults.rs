//! What kube-apiserver's bootstrap policy lets every authenticated user do: ask who they are
//! and what they may do (`system:basic-user`), read discovery and OpenAPI
//! (`system:discovery`), health and version (`system:public-info-viewer`), all bound to
//! `system:authenticated`; ServiceAccounts may also read the issuer's OpenID documents
//! (`system:service-account-issuer-discovery`, bound to `system:serviceaccounts`). Kept in
//! code, not as objects, so clusters start as before.

use std::sync::LazyLock;

use super::attributes::Attributes;
use super::policy::Decision;
use super::rules::Rule;
use crate::server::api::user::{AUTHENTICATED, SERVICE_ACCOUNTS, UserInfo};

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn urls(paths: &[&str]) -> Rule {
    Rule {
        verbs: list(&["get"]),
        non_resource_urls: list(paths),
        ..Rule::default()
    }
}

/// One default ClusterRole and the group its ClusterRoleBinding (of the same name) binds.
struct DefaultRole {
    name: &'static str,
    group: &'static str,
    rules: Vec<Rule>,
}

/// In the order kube-apiserver's authorizer meets their bindings (by name).
static DEFAULTS: LazyLock<Vec<DefaultRole>> = LazyLock::new(|| {
    vec![
        DefaultRole {
            name: "system:basic-user",
            group: AUTHENTICATED,
            rules: vec![
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
        },
        DefaultRole {
            name: "system:discovery",
            group: AUTHENTICATED,
            rules: vec![urls(&[
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
            ])],
        },
        DefaultRole {
            name: "system:public-info-viewer",
            group: AUTHENTICATED,
            rules: vec![
                urls(&["/healthz", "/livez", "/readyz", "/version", "/version/"]),
                urls(&["/.well-known", "/.well-known/*"]),
            ],
        },
        DefaultRole {
            name: "system:service-account-issuer-discovery",
            group: SERVICE_ACCOUNTS,
            rules: vec![urls(&[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ])],
        },
    ]
});

/// The default roles bound to one of `user`'s groups.
fn bound_to(user: &UserInfo) -> impl Iterator<Item = &'static DefaultRole> {
    DEFAULTS
        .iter()
        .filter(|r| user.groups.iter().any(|g| g == r.group))
}

/// Allowed by the default policy, with kube-apiserver's reason; None when it has no say.
pub fn authorize(user: &UserInfo, a: &Attributes) -> Option<Decision> {
    bound_to(user).find_map(|role| {
        role.rules.iter().any(|r| r.allows(a)).then(|| {
            Decision::allow(format!(
                "RBAC: allowed by ClusterRoleBinding \"{name}\" of ClusterRole \"{name}\" to Group \"{group}\"",
                name = role.name,
                group = role.group
            ))
        })
    })
}

/// The default rules `user` has (for SelfSubjectRulesReview).
pub fn rules(user: &UserInfo) -> Vec<Rule> {
    bound_to(user)
        .flat_map(|r| r.rules.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_accounts_get_the_issuer_documents_too() {
        let sa = UserInfo::service_account("n", "robot", "u");
        let path = |p: &str| Attributes::for_path(&axum::http::Method::GET, p);
        let d = authorize(&sa, &path("/openid/v1/jwks")).map(|d| d.reason);
        assert_eq!(
            d.as_deref(),
            Some(
                "RBAC: allowed by ClusterRoleBinding \"system:service-account-issuer-discovery\" of ClusterRole \"system:service-account-issuer-discovery\" to Group \"system:serviceaccounts\""
            )
        );
        assert!(authorize(&sa, &path("/metrics")).is_none());
        assert_eq!(rules(&sa).len(), 6);
        let mut user = sa.clone();
        user.groups = vec![AUTHENTICATED.into()];
        assert!(authorize(&user, &path("/openid/v1/jwks")).is_none());
        assert_eq!(rules(&user).len(), 5);
    }
}
