//! The RBAC policy of one cluster, compiled from its Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings, and evaluated as kube-apiserver's RBAC authorizer evaluates it:
//! ClusterRoleBindings apply everywhere; RoleBindings (to a Role, or to a ClusterRole scoped
//! to the binding's namespace) only in their namespace.

use std::collections::HashMap;

use serde_json::Value;

use super::attributes::Attributes;
use super::rules::Rule;
use crate::server::api::user::UserInfo;
use crate::server::storage::store::Store;

pub const ROLES: &str = "rbac.authorization.k8s.io/roles";
pub const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";
pub const ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/rolebindings";
pub const CLUSTER_ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/clusterrolebindings";
const TABLES: [&str; 4] = [ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS];

/// One subject of a binding.
#[derive(Debug, Clone)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

impl Subject {
    /// Whether the subject names `user`; service accounts default to the binding's namespace.
    fn applies_to(&self, user: &UserInfo, binding_ns: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_ns
                } else {
                    &self.namespace
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }

    /// As RBAC reasons print it: `ServiceAccount "name/ns"`, `User "name"`.
    fn describe(&self, binding_ns: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_ns
            } else {
                &self.namespace
            };
            format!("{} \"{}/{ns}\"", self.kind, self.name)
        } else {
            format!("{} \"{}\"", self.kind, self.name)
        }
    }
}

#[derive(Debug, Clone)]
struct Binding {
    name: String,
    /// Empty for ClusterRoleBindings.
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(v: &Value) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        Self {
            name: s(&v["metadata"]["name"]),
            namespace: s(&v["metadata"]["namespace"]),
            role_kind: s(&v["roleRef"]["kind"]),
            role_name: s(&v["roleRef"]["name"]),
            subjects: v["subjects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| Subject {
                    kind: s(&x["kind"]),
                    name: s(&x["name"]),
                    namespace: s(&x["namespace"]),
                })
                .collect(),
        }
    }

    /// `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
    fn describe(&self, subject: &Subject) -> String {
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding \"{}\" of {} \"{}\" to {}",
                self.name,
                self.role_kind,
                self.role_name,
                subject.describe("")
            )
        } else {
            format!(
                "RoleBinding \"{}/{}\" of {} \"{}\" to {}",
                self.name,
                self.namespace,
                self.role_kind,
                self.role_name,
                subject.describe(&self.namespace)
            )
        }
    }
}

/// The outcome of an authorization check and kube-apiserver's reason for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

impl Decision {
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            allowed: true,
            reason: reason.into(),
        }
    }
}

/// The compiled policy, indexed for lookups by namespace and role name.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: HashMap<String, Vec<Rule>>,
    roles: HashMap<(String, String), Vec<Rule>>,
    cluster_bindings: Vec<Binding>,
    role_bindings: HashMap<String, Vec<Binding>>,
}

/// (object count, highest resourceVersion) of the RBAC tables.
pub type Fingerprint = (usize, u64);

/// Changes whenever any RBAC object changes: objects are only ever added with a new, highest
/// resourceVersion, so (count, highest version) of the four tables identifies their content.
pub fn fingerprint(store: &Store) -> Fingerprint {
    TABLES.iter().fold((0, 0), |(n, rv), t| {
        store
            .list(t, None, None)
            .fold((n, rv), |(n, rv), o| (n + 1, rv.max(o.rv)))
    })
}

impl Policy {
    pub fn from_store(store: &Store) -> Self {
        let mut p = Self::default();
        for o in store.list(CLUSTER_ROLES, None, None) {
            p.cluster_roles
                .insert(o.name.clone(), Rule::list_from(&o.value()));
        }
        for o in store.list(ROLES, None, None) {
            p.roles.insert(
                (o.namespace.clone(), o.name.clone()),
                Rule::list_from(&o.value()),
            );
        }
        p.cluster_bindings = store
            .list(CLUSTER_ROLE_BINDINGS, None, None)
            .map(|o| Binding::from_json(&o.value()))
            .collect();
        for o in store.list(ROLE_BINDINGS, None, None) {
            p.role_bindings
                .entry(o.namespace.clone())
                .or_default()
                .push(Binding::from_json(&o.value()));
        }
        p
    }

    fn rules_of(&self, b: &Binding) -> Result<&[Rule], String> {
        let found = match b.role_kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&b.role_name),
            "Role" => self.roles.get(&(b.namespace.clone(), b.role_name.clone())),
            other => return Err(format!("unsupported role reference kind: \"{other}\"")),
        };
        found.map(Vec::as_slice).ok_or_else(|| {
            format!(
                "{}.rbac.authorization.k8s.io \"{}\" not found",
                b.role_kind.to_lowercase(),
                b.role_name
            )
        })
    }

    /// The bindings that can grant something in `namespace`: every ClusterRoleBinding, then
    /// the namespace's RoleBindings.
    fn bindings_for<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a Binding> {
        let local = (!namespace.is_empty())
            .then(|| self.role_bindings.get(namespace))
            .flatten();
        self.cluster_bindings
            .iter()
            .chain(local.into_iter().flatten())
    }

    pub fn authorize(&self, user: &UserInfo, a: &Attributes) -> Decision {
        let mut errors: Vec<String> = Vec::new();
        for b in self.bindings_for(&a.namespace) {
            let Some(subject) = b.subjects.iter().find(|s| s.applies_to(user, &b.namespace)) else {
                continue;
            };
            match self.rules_of(b) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(a)) {
                        return Decision::allow(format!(
                            "RBAC: allowed by {}",
                            b.describe(subject)
                        ));
                    }
                }
                Err(e) => {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
            }
        }
        let reason = match errors.as_slice() {
            [] => String::new(),
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        };
        Decision {
            allowed: false,
            reason,
        }
    }

    /// Every rule that applies to `user` in `namespace` (SelfSubjectRulesReview), and the
    /// errors met resolving role references.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<Rule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        for b in self.bindings_for(namespace) {
            if !b.subjects.iter().any(|s| s.applies_to(user, &b.namespace)) {
                continue;
            }
            match self.rules_of(b) {
                Ok(r) => rules.extend_from_slice(r),
                Err(e) => errors.push(e),
            }
        }
        (rules, errors)
    }
}
