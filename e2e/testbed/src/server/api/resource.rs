//! Resource types the server serves: the built-in kinds and those registered by CRDs.

use std::sync::Arc;

use serde_json::Value;

/// Special behaviour of a built-in kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Namespace,
    Secret,
    ConfigMap,
    /// core/v1 Event (stored form).
    Event,
    /// events.k8s.io/v1 Event (converted view of the core events).
    EventV1,
    Lease,
    PriorityClass,
    PodDisruptionBudget,
    CustomResourceDefinition,
    ServiceAccount,
    Service,
    Deployment,
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
    /// `authorization.k8s.io/v1`: answered, never stored.
    SelfSubjectAccessReview,
    /// `authorization.k8s.io/v1` (`kubectl auth can-i --list`): answered, never stored.
    SelfSubjectRulesReview,
    /// `authentication.k8s.io/v1` (`kubectl auth whoami`): answered, never stored.
    SelfSubjectReview,
    /// `admissionregistration.k8s.io/v1` admission policies and their bindings (`admission`).
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    MutatingAdmissionPolicy,
    MutatingAdmissionPolicyBinding,
    /// `batch/v1` Job (admission and the job controller model in `jobs`).
    Job,
    /// core/v1 Pod (admission, graceful deletion and the kubelet model in `jobs`).
    Pod,
}

impl Builtin {
    /// Kinds that are only ever created, answered on the spot and never stored.
    pub fn is_review(self) -> bool {
        matches!(
            self,
            Self::SelfSubjectAccessReview | Self::SelfSubjectRulesReview | Self::SelfSubjectReview
        )
    }

    /// The four kinds of `rbac.authorization.k8s.io`.
    pub fn is_rbac(self) -> bool {
        matches!(
            self,
            Self::Role | Self::ClusterRole | Self::RoleBinding | Self::ClusterRoleBinding
        )
    }
}

/// One printer column, as `additionalPrinterColumns` describes it.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// A compiled CRD schema (CEL rules compiled once per served version).
#[derive(Clone)]
pub struct Validator(pub Arc<crate::schema::SchemaValidator>);

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

/// The `scale` subresource of a custom resource: where a Scale's fields live in the object
/// (JSON paths such as `.spec.replicas`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One served group/version/resource.
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// The version's `openAPIV3Schema` (custom resources only).
    pub schema: Option<Value>,
    /// The compiled form of `schema`.
    pub validator: Option<Validator>,
    pub columns: Vec<Column>,
    pub builtin: Option<Builtin>,
    /// Name of the CRD that defines this resource (custom resources only).
    pub crd_name: Option<String>,
    /// Key of the table that stores the objects (shared by every version of a resource).
    pub table: String,
    /// Whether this version is the CRD's storage version.
    pub storage_version: bool,
    /// The `scale` subresource (custom resources that declare one).
    pub scale: Option<ScalePaths>,
    /// The structure `managedFields` are computed against, built once.
    pub managed_type: crate::server::api::managed_type::TypeCache,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        if self.builtin.is_some_and(Builtin::is_review) {
            return vec!["create"];
        }
        if self.crd_name.is_some() {
            // The apiextensions discovery controller lists custom resources' verbs in this order.
            return vec![
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

/// `ObjectMeta.creationTimestamp`'s documentation (Age columns).
pub const CREATION_TIMESTAMP_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A version of the form `v<N>`, `v<N>beta<M>` or `v<N>alpha<M>`: (stability, major, minor),
/// stability 0 for GA, 1 for beta, 2 for alpha.
fn kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major = number(&rest[..digits])?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((0, major, 0));
    }
    if let Some(n) = tail.strip_prefix("beta") {
        return Some((1, major, number(n)?));
    }
    Some((2, major, number(tail.strip_prefix("alpha")?)?))
}

/// Kubernetes-aware version priority (`version.CompareKubeAwareVersionStrings`): GA before
/// beta before alpha, higher numbers first; other strings after them, alphabetically.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => sa
            .cmp(&sb)
            .then_with(|| mb.cmp(&ma))
            .then_with(|| nb.cmp(&na)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

fn scale_paths(scale: &Value) -> Option<ScalePaths> {
    if !scale.is_object() {
        return None;
    }
    let path = |k: &str| scale[k].as_str().map(String::from);
    Some(ScalePaths {
        spec_replicas: path("specReplicasPath").unwrap_or_default(),
        status_replicas: path("statusReplicasPath").unwrap_or_default(),
        label_selector: path("labelSelectorPath").filter(|p| !p.is_empty()),
    })
}

/// Resource types for every served version of a CRD (given as JSON).
pub fn types_from_crd(crd: &Value) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_string();
    let names = &spec["names"];
    let kind = names["kind"].as_str().unwrap_or_default().to_string();
    let plural = names["plural"].as_str().unwrap_or_default().to_string();
    let singular = names["singular"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let list_kind = names["listKind"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| format!("{kind}List"));
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let crd_name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut out = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"].as_bool() == Some(false) {
            continue;
        }
        let mut columns: Vec<Column> = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| Column {
                name: c["name"].as_str().unwrap_or_default().into(),
                type_: c["type"].as_str().unwrap_or("string").into(),
                format: c["format"].as_str().unwrap_or_default().into(),
                description: c["description"].as_str().unwrap_or_default().into(),
                priority: c["priority"].as_i64().unwrap_or(0),
                json_path: c["jsonPath"].as_str().unwrap_or_default().into(),
            })
            .collect();
        if columns.is_empty() {
            columns.push(Column {
                name: "Age".into(),
                type_: "date".into(),
                format: String::new(),
                description: CREATION_TIMESTAMP_DOC.into(),
                priority: 0,
                json_path: ".metadata.creationTimestamp".into(),
            });
        }
        out.push(ResourceType {
            group: group.clone(),
            version: version["name"].as_str().unwrap_or_default().into(),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            list_kind: list_kind.clone(),
            namespaced,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status_subresource: version["subresources"].get("status").is_some(),
            generation: true,
            schema: version["schema"].get("openAPIV3Schema").cloned(),
            validator: version["schema"]
                .get("openAPIV3Schema")
                .map(|s| Validator(Arc::new(crate::schema::SchemaValidator::new(s)))),
            columns,
            builtin: None,
            crd_name: Some(crd_name.clone()),
            table: format!("{group}/{plural}"),
            storage_version: version["storage"].as_bool().unwrap_or(false),
            scale: scale_paths(&version["subresources"]["scale"]),
            managed_type: Default::default(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_in_kubernetes_priority_order() {
        let mut vs = vec![
            "v1alpha1",
            "foo",
            "v2beta1",
            "v1",
            "v11alpha2",
            "v1beta",
            "v2",
            "v1beta2",
            "bar",
            "v10",
        ];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            vs,
            [
                "v10",
                "v2",
                "v1",
                "v2beta1",
                "v1beta2",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo",
                "v1beta"
            ]
        );
    }

    #[test]
    fn scale_paths_come_from_the_crd_version() {
        let crd = serde_json::json!({"metadata": {"name": "ws.g.io"}, "spec": {"group": "g.io",
            "names": {"kind": "W", "plural": "ws"}, "scope": "Namespaced", "versions": [
            {"name": "v1", "served": true, "storage": true, "subresources": {"scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}},
            {"name": "v2", "served": false, "storage": false}]}});
        let types = types_from_crd(&crd);
        assert_eq!(types.len(), 1);
        assert_eq!(
            types[0].scale,
            Some(ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: None,
            })
        );
        assert_eq!(types[0].verbs()[0], "delete");
    }
}
