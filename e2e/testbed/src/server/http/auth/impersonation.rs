//! Impersonation (`kubectl --as`, `--as-group`): the `Impersonate-User`, `Impersonate-Group`
//! and `Impersonate-Uid` headers. The requester needs the `impersonate` verb on users (or the
//! ServiceAccount), groups and uids; the administrator has it.

use axum::http::HeaderMap;

use super::{AUTHENTICATED, SERVICE_ACCOUNTS, UserInfo};
use crate::server::api::error::ApiError;
use crate::server::http::cluster::ClusterState;
use crate::server::http::rbac::{self, Attributes};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";

pub fn requested(headers: &HeaderMap) -> bool {
    headers.contains_key(USER) || headers.contains_key(GROUP) || headers.contains_key(UID)
}

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

fn impersonate_check(group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
    Attributes {
        verb: "impersonate".into(),
        resource_request: true,
        group: group.into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    }
}

/// The user `requester` asks to act as, once allowed.
pub fn impersonate(
    cluster: &ClusterState,
    requester: &UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let Some(name) = values(headers, USER).first().map(|s| s.to_string()) else {
        return Err(ApiError::bad_request(
            "impersonating groups or a uid requires impersonating a user",
        ));
    };
    let groups: Vec<String> = values(headers, GROUP)
        .into_iter()
        .map(String::from)
        .collect();
    let uid = values(headers, UID).first().map(|s| s.to_string());
    let service_account =
        UserInfo::service_account_of(&name).map(|(ns, sa)| (ns.to_string(), sa.to_string()));
    let mut checks = vec![match &service_account {
        Some((ns, sa)) => impersonate_check("", "serviceaccounts", ns, sa),
        None => impersonate_check("", "users", "", &name),
    }];
    checks.extend(
        groups
            .iter()
            .map(|g| impersonate_check("", "groups", "", g)),
    );
    if let Some(u) = &uid {
        checks.push(impersonate_check("authentication.k8s.io", "uids", "", u));
    }
    for a in &checks {
        let d = cluster.authorize(requester, a);
        if !d.allowed {
            return Err(rbac::forbidden(requester, a, &d.reason));
        }
    }
    let anonymous = name == "system:anonymous";
    let mut user = UserInfo {
        name,
        uid: uid.unwrap_or_default(),
        groups,
        extra: Default::default(),
    };
    let mut add = |g: String| {
        if !user.groups.contains(&g) {
            user.groups.push(g);
        }
    };
    if let Some((ns, _)) = service_account {
        add(SERVICE_ACCOUNTS.into());
        add(format!("{SERVICE_ACCOUNTS}:{ns}"));
    }
    if !anonymous {
        add(AUTHENTICATED.into());
    }
    Ok(user)
}
