//! Authentication: who sends a request. Requests without credentials are the cluster
//! administrator (the testbed's own kubeconfig carries none, as before); bearer tokens of
//! ServiceAccounts (legacy Secret tokens, and bound tokens from the TokenRequest API)
//! authenticate as `system:serviceaccount:<ns>:<name>`; any other credential is a 401. An authenticated user may impersonate another (`kubectl --as`) if allowed to.

pub(crate) mod bound;
pub(crate) mod impersonation;
pub(crate) mod token_request;

use axum::http::{HeaderMap, header};

use crate::server::api::error::ApiError;
use crate::server::http::cluster::ClusterState;

pub use crate::server::api::user::{AUTHENTICATED, SERVICE_ACCOUNTS, UserInfo};

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
                crate::server::controllers::tokens::authenticate(&store, token)
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
