//! Authentication: who sends a request. Requests without credentials are the cluster
//! administrator (the testbed's own kubeconfig carries none, as before); bearer tokens of
//! ServiceAccounts (legacy Secret tokens, and bound tokens from the TokenRequest API)
//! authenticate as `system:serviceaccount:<ns>:<name>`; any other credential is a 401. An authenticated user may impersonate another (`kubectl --as`) if allowed to.

pub mod bound;
pub mod impersonation;
pub mod token_request;
pub mod tokens;

use std::collections::BTreeMap;

use axum::http::{HeaderMap, header};

use super::cluster::ClusterState;
use super::error::ApiError;

pub const AUTHENTICATED: &str = "system:authenticated";
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
const MASTERS: &str = "system:masters";
const SA_PREFIX: &str = "system:serviceaccount:";

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// `extra` (e.g. the credential id of a bound token), as SelfSubjectReview shows it.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user of credential-less requests.
    pub fn admin() -> Self {
        Self {
            name: "kubernetes-admin".into(),
            uid: String::new(),
            groups: vec![MASTERS.into(), AUTHENTICATED.into()],
            extra: BTreeMap::new(),
        }
    }

    /// A ServiceAccount's user, with the groups kube-apiserver gives it.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: format!("{SA_PREFIX}{namespace}:{name}"),
            uid: uid.into(),
            groups: vec![
                SERVICE_ACCOUNTS.into(),
                format!("{SERVICE_ACCOUNTS}:{namespace}"),
                AUTHENTICATED.into(),
            ],
            extra: BTreeMap::new(),
        }
    }

    /// `system:masters` bypasses authorization, as in kube-apiserver.
    pub fn is_superuser(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    /// (namespace, name) when this is a ServiceAccount's user name.
    pub fn service_account_of(name: &str) -> Option<(&str, &str)> {
        name.strip_prefix(SA_PREFIX)?
            .split_once(':')
            .filter(|(ns, n)| !ns.is_empty() && !n.is_empty() && !n.contains(':'))
    }
}

/// kube-apiserver's answer to a credential it does not accept.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// The user of a request: None for the administrator (no credentials, no impersonation),
/// which is the common case and costs two header lookups.
pub fn authenticate(
    cluster: &ClusterState,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let credential = headers.get(header::AUTHORIZATION);
    let impersonating = impersonation::requested(headers);
    if credential.is_none() && !impersonating {
        return Ok(None);
    }
    let user = match credential {
        None => UserInfo::admin(),
        Some(value) => {
            let token = value
                .to_str()
                .ok()
                .and_then(bearer_token)
                .ok_or_else(unauthorized)?;
            let store = cluster.store();
            let user = if bound::is_bound(token) {
                bound::authenticate(&store, token)
            } else {
                tokens::authenticate(&store, token)
            };
            user.ok_or_else(unauthorized)?
        }
    };
    if impersonating {
        return impersonation::impersonate(cluster, &user, headers).map(Some);
    }
    Ok(Some(user))
}

/// The token of an `Authorization: Bearer <token>` header value.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_headers() {
        let sa = UserInfo::service_account("ns", "sa", "u");
        assert_eq!(sa.name, "system:serviceaccount:ns:sa");
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                "system:authenticated"
            ]
        );
        assert!(!sa.is_superuser() && UserInfo::admin().is_superuser());
        assert_eq!(
            UserInfo::service_account_of("system:serviceaccount:a:b"),
            Some(("a", "b"))
        );
        assert_eq!(
            UserInfo::service_account_of("system:serviceaccount:a"),
            None
        );
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}
