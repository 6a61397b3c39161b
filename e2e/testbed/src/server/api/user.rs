//! Who a request is: the user authentication finds (the write path records it, admission
//! policies and RBAC read it).

use std::collections::BTreeMap;

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
