//! The built-in kinds Baton needs, with the columns `kubectl get` prints for them, and their
//! strategies' own steps (admission of Namespaces, Secrets, Events and Leases; what runs
//! after ownership is recorded on create; how their list items are written).

use serde_json::{Map, Value, json};

use super::error::{Cause, invalid_value};
use super::resource::{Builtin, Column, ResourceType};
use super::{events, meta, namespaces, secrets};

fn col(name: &str, type_: &str, json_path: &str) -> Column {
    Column {
        name: name.into(),
        type_: type_.into(),
        format: if name == "Name" {
            "name".into()
        } else {
            String::new()
        },
        description: String::new(),
        priority: 0,
        json_path: json_path.into(),
    }
}

fn age() -> Column {
    col("Age", "date", ".metadata.creationTimestamp")
}

/// A column `kubectl get -o wide` adds.
fn wide(name: &str, type_: &str, json_path: &str) -> Column {
    Column {
        priority: 1,
        ..col(name, type_, json_path)
    }
}

/// The only column of kinds kube-apiserver prints with its default table convertor.
fn created_at() -> Vec<Column> {
    vec![col(
        "Created At",
        "date",
        "#time(.metadata.creationTimestamp)",
    )]
}

/// Columns of RoleBindings and ClusterRoleBindings.
fn binding_columns() -> Vec<Column> {
    vec![
        col("Role", "string", "#roleref()"),
        age(),
        wide("Users", "string", "#subjects(User)"),
        wide("Groups", "string", "#subjects(Group)"),
        wide("ServiceAccounts", "string", "#subjects(ServiceAccount)"),
    ]
}

struct Def {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    status: bool,
    generation: bool,
    builtin: Builtin,
    table: &'static str,
    columns: Vec<Column>,
}

/// Every built-in resource type.
pub fn builtin_types() -> Vec<ResourceType> {
    let defs = vec![
        Def {
            group: "",
            version: "v1",
            kind: "Namespace",
            plural: "namespaces",
            namespaced: false,
            short: &["ns"],
            status: true,
            generation: false,
            builtin: Builtin::Namespace,
            table: "/namespaces",
            columns: vec![col("Status", "string", ".status.phase"), age()],
        },
        Def {
            group: "",
            version: "v1",
            kind: "Secret",
            plural: "secrets",
            namespaced: true,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::Secret,
            table: "/secrets",
            columns: vec![
                col("Type", "string", ".type"),
                col("Data", "integer", "#count(.data)"),
                age(),
            ],
        },
        Def {
            group: "",
            version: "v1",
            kind: "ConfigMap",
            plural: "configmaps",
            namespaced: true,
            short: &["cm"],
            status: false,
            generation: false,
            builtin: Builtin::ConfigMap,
            table: "/configmaps",
            columns: vec![col("Data", "integer", "#count(.data)"), age()],
        },
        Def {
            group: "",
            version: "v1",
            kind: "Event",
            plural: "events",
            namespaced: true,
            short: &["ev"],
            status: false,
            generation: false,
            builtin: Builtin::Event,
            table: "/events",
            columns: event_columns(),
        },
        Def {
            group: "events.k8s.io",
            version: "v1",
            kind: "Event",
            plural: "events",
            namespaced: true,
            short: &["ev"],
            status: false,
            generation: false,
            builtin: Builtin::EventV1,
            table: "/events",
            columns: event_columns(),
        },
        Def {
            group: "coordination.k8s.io",
            version: "v1",
            kind: "Lease",
            plural: "leases",
            namespaced: true,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::Lease,
            table: "coordination.k8s.io/leases",
            columns: vec![col("Holder", "string", ".spec.holderIdentity"), age()],
        },
        Def {
            group: "scheduling.k8s.io",
            version: "v1",
            kind: "PriorityClass",
            plural: "priorityclasses",
            namespaced: false,
            short: &["pc"],
            status: false,
            generation: false,
            builtin: Builtin::PriorityClass,
            table: "scheduling.k8s.io/priorityclasses",
            columns: vec![
                col("Value", "integer", ".value"),
                col("Global-Default", "boolean", "#bool(.globalDefault)"),
                age(),
                col("PreemptionPolicy", "string", ".preemptionPolicy"),
            ],
        },
        Def {
            group: "policy",
            version: "v1",
            kind: "PodDisruptionBudget",
            plural: "poddisruptionbudgets",
            namespaced: true,
            short: &["pdb"],
            status: true,
            generation: true,
            builtin: Builtin::PodDisruptionBudget,
            table: "policy/poddisruptionbudgets",
            columns: vec![
                col("Min Available", "string", "#or(.spec.minAvailable)"),
                col("Max Unavailable", "string", "#or(.spec.maxUnavailable)"),
                col(
                    "Allowed Disruptions",
                    "integer",
                    "#int(.status.disruptionsAllowed)",
                ),
                age(),
            ],
        },
        Def {
            group: "apiextensions.k8s.io",
            version: "v1",
            kind: "CustomResourceDefinition",
            plural: "customresourcedefinitions",
            namespaced: false,
            short: &["crd", "crds"],
            status: true,
            generation: true,
            builtin: Builtin::CustomResourceDefinition,
            table: "apiextensions.k8s.io/customresourcedefinitions",
            columns: created_at(),
        },
        Def {
            group: "",
            version: "v1",
            kind: "ServiceAccount",
            plural: "serviceaccounts",
            namespaced: true,
            short: &["sa"],
            status: false,
            generation: false,
            builtin: Builtin::ServiceAccount,
            table: "/serviceaccounts",
            columns: vec![col("Secrets", "integer", "#count(.secrets)"), age()],
        },
        Def {
            group: "",
            version: "v1",
            kind: "Service",
            plural: "services",
            namespaced: true,
            short: &["svc"],
            status: true,
            generation: false,
            builtin: Builtin::Service,
            table: "/services",
            columns: vec![
                col("Type", "string", ".spec.type"),
                col("Cluster-IP", "string", "#none(.spec.clusterIP)"),
                col("External-IP", "string", "#none(.spec.externalIPs)"),
                col("Port(s)", "string", "#ports()"),
                age(),
                wide("Selector", "string", "#pairs(.spec.selector)"),
            ],
        },
        Def {
            group: "apps",
            version: "v1",
            kind: "Deployment",
            plural: "deployments",
            namespaced: true,
            short: &["deploy"],
            status: true,
            generation: true,
            builtin: Builtin::Deployment,
            table: "apps/deployments",
            columns: vec![
                col("Ready", "string", "#ready()"),
                col("Up-to-date", "integer", "#int(.status.updatedReplicas)"),
                col("Available", "integer", "#int(.status.availableReplicas)"),
                age(),
                wide(
                    "Containers",
                    "string",
                    ".spec.template.spec.containers[*].name",
                ),
                wide(
                    "Images",
                    "string",
                    ".spec.template.spec.containers[*].image",
                ),
                wide("Selector", "string", "#pairs(.spec.selector.matchLabels)"),
            ],
        },
        Def {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            kind: "Role",
            plural: "roles",
            namespaced: true,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::Role,
            table: "rbac.authorization.k8s.io/roles",
            columns: created_at(),
        },
        Def {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            kind: "ClusterRole",
            plural: "clusterroles",
            namespaced: false,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::ClusterRole,
            table: "rbac.authorization.k8s.io/clusterroles",
            columns: created_at(),
        },
        Def {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            kind: "RoleBinding",
            plural: "rolebindings",
            namespaced: true,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::RoleBinding,
            table: "rbac.authorization.k8s.io/rolebindings",
            columns: binding_columns(),
        },
        Def {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            kind: "ClusterRoleBinding",
            plural: "clusterrolebindings",
            namespaced: false,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::ClusterRoleBinding,
            table: "rbac.authorization.k8s.io/clusterrolebindings",
            columns: binding_columns(),
        },
        Def {
            group: "authorization.k8s.io",
            version: "v1",
            kind: "SelfSubjectAccessReview",
            plural: "selfsubjectaccessreviews",
            namespaced: false,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::SelfSubjectAccessReview,
            table: "authorization.k8s.io/selfsubjectaccessreviews",
            columns: Vec::new(),
        },
        Def {
            group: "authorization.k8s.io",
            version: "v1",
            kind: "SelfSubjectRulesReview",
            plural: "selfsubjectrulesreviews",
            namespaced: false,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::SelfSubjectRulesReview,
            table: "authorization.k8s.io/selfsubjectrulesreviews",
            columns: Vec::new(),
        },
        Def {
            group: "authentication.k8s.io",
            version: "v1",
            kind: "SelfSubjectReview",
            plural: "selfsubjectreviews",
            namespaced: false,
            short: &[],
            status: false,
            generation: false,
            builtin: Builtin::SelfSubjectReview,
            table: "authentication.k8s.io/selfsubjectreviews",
            columns: Vec::new(),
        },
        Def {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "ValidatingAdmissionPolicy",
            plural: "validatingadmissionpolicies",
            namespaced: false,
            short: &[],
            status: true,
            generation: true,
            builtin: Builtin::ValidatingAdmissionPolicy,
            table: "admissionregistration.k8s.io/validatingadmissionpolicies",
            columns: vec![
                col("Validations", "integer", "#count(.spec.validations)"),
                col("ParamKind", "string", "#paramkind()"),
                age(),
            ],
        },
        Def {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "ValidatingAdmissionPolicyBinding",
            plural: "validatingadmissionpolicybindings",
            namespaced: false,
            short: &[],
            status: false,
            generation: true,
            builtin: Builtin::ValidatingAdmissionPolicyBinding,
            table: "admissionregistration.k8s.io/validatingadmissionpolicybindings",
            columns: vec![
                col("PolicyName", "string", ".spec.policyName"),
                col("ParamRef", "string", "#paramref()"),
                age(),
            ],
        },
        Def {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "MutatingAdmissionPolicy",
            plural: "mutatingadmissionpolicies",
            namespaced: false,
            short: &[],
            status: false,
            generation: true,
            builtin: Builtin::MutatingAdmissionPolicy,
            table: "admissionregistration.k8s.io/mutatingadmissionpolicies",
            columns: vec![
                col("Mutations", "integer", "#count(.spec.mutations)"),
                col("ParamKind", "string", "#paramkind()"),
                age(),
            ],
        },
        Def {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind: "MutatingAdmissionPolicyBinding",
            plural: "mutatingadmissionpolicybindings",
            namespaced: false,
            short: &[],
            status: false,
            generation: true,
            builtin: Builtin::MutatingAdmissionPolicyBinding,
            table: "admissionregistration.k8s.io/mutatingadmissionpolicybindings",
            columns: vec![
                col("PolicyName", "string", ".spec.policyName"),
                col("ParamRef", "string", "#paramref()"),
                age(),
            ],
        },
        Def {
            group: "batch",
            version: "v1",
            kind: "Job",
            plural: "jobs",
            namespaced: true,
            short: &[],
            status: true,
            generation: true,
            builtin: Builtin::Job,
            table: "batch/jobs",
            columns: vec![
                col("Status", "string", "#jobstatus()"),
                col("Completions", "string", "#completions()"),
                col("Duration", "string", "#jobduration()"),
                age(),
                wide(
                    "Containers",
                    "string",
                    ".spec.template.spec.containers[*].name",
                ),
                wide(
                    "Images",
                    "string",
                    ".spec.template.spec.containers[*].image",
                ),
                wide("Selector", "string", "#pairs(.spec.selector.matchLabels)"),
            ],
        },
        Def {
            group: "",
            version: "v1",
            kind: "Pod",
            plural: "pods",
            namespaced: true,
            short: &["po"],
            status: true,
            generation: false,
            builtin: Builtin::Pod,
            table: "/pods",
            columns: vec![
                col("Ready", "string", "#podready()"),
                col("Status", "string", "#podstatus()"),
                col("Restarts", "string", "#restarts()"),
                age(),
                wide("IP", "string", "#none(.status.podIP)"),
                wide("Node", "string", "#none(.spec.nodeName)"),
                wide(
                    "Nominated Node",
                    "string",
                    "#none(.status.nominatedNodeName)",
                ),
                wide("Readiness Gates", "string", "#none(.spec.readinessGates)"),
            ],
        },
    ];
    defs.into_iter()
        .map(|d| ResourceType {
            group: d.group.into(),
            version: d.version.into(),
            kind: d.kind.into(),
            plural: d.plural.into(),
            singular: d.kind.to_lowercase(),
            list_kind: format!("{}List", d.kind),
            namespaced: d.namespaced,
            short_names: d.short.iter().map(|s| s.to_string()).collect(),
            categories: Vec::new(),
            status_subresource: d.status,
            generation: d.generation,
            schema: None,
            validator: None,
            columns: d.columns,
            builtin: Some(d.builtin),
            crd_name: None,
            table: d.table.into(),
            storage_version: d.builtin != Builtin::EventV1,
            scale: None,
            managed_type: Default::default(),
        })
        .collect()
}

fn event_columns() -> Vec<Column> {
    vec![
        col("Last Seen", "string", "#eventage()"),
        col("Type", "string", ".type"),
        col("Reason", "string", ".reason"),
        col("Object", "string", "#eventobject()"),
        col("Message", "string", ".message"),
    ]
}

/// A serialised object without `kind` and `apiVersion`, as items of built-in lists are.
pub fn without_type_meta(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut m)) => {
            m.remove("kind");
            m.remove("apiVersion");
            Value::Object(m).to_string().into_bytes()
        }
        _ => bytes.to_vec(),
    }
}

/// The group 422 messages name: events of both groups are validated as core Events.
pub fn error_group(rt: &ResourceType) -> &str {
    match rt.builtin {
        Some(Builtin::EventV1) => "",
        _ => &rt.group,
    }
}

/// The strategies' `PrepareForCreate` steps that come after field ownership was recorded.
pub fn prepare_for_create(rt: &ResourceType, obj: &mut Value) {
    if rt.builtin == Some(Builtin::Namespace) {
        namespaces::prepare_for_create(obj);
    }
    if rt.builtin == Some(Builtin::Job) {
        // The generated selector and labels belong to no field manager.
        super::jobs::job_defaults::generate_selector(obj);
    }
}

/// Defaulting and validation of Namespaces, Secrets, Events and Leases (`old` on updates).
pub fn admit(kind: Builtin, obj: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    match kind {
        Builtin::Namespace => {
            // Defaulting: every namespace carries its name as a label.
            let name = meta::name_of(obj).to_string();
            let labels = meta::metadata_mut(obj)
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(l) = labels {
                l.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
        }
        Builtin::Secret => secrets::validate(obj, old, causes),
        Builtin::Event if old.is_none() => causes.extend(events::validate(obj, false)),
        Builtin::EventV1 if old.is_none() => {
            causes.extend(events::validate(&events::to_core(obj.clone()), true));
        }
        Builtin::Lease => validate_lease(&obj["spec"], causes),
        Builtin::Job => super::jobs::admit_job(obj, old, causes),
        Builtin::Pod => super::jobs::admit_pod(obj, old, causes),
        _ => {}
    }
}

/// `ValidateLeaseSpec`.
fn validate_lease(spec: &Value, causes: &mut Vec<Cause>) {
    if let Some(d) = spec["leaseDurationSeconds"].as_i64()
        && d <= 0
    {
        causes.push(invalid_value(
            "spec.leaseDurationSeconds",
            &json!(d),
            "must be greater than 0",
        ));
    }
    if let Some(t) = spec["leaseTransitions"].as_i64()
        && t < 0
    {
        causes.push(invalid_value(
            "spec.leaseTransitions",
            &json!(t),
            "must be greater than or equal to 0",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes_of(kind: Builtin, mut obj: Value) -> Vec<String> {
        let mut causes = Vec::new();
        admit(kind, &mut obj, None, &mut causes);
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn leases_and_namespaces() {
        assert_eq!(
            causes_of(
                Builtin::Lease,
                json!({"spec": {"leaseDurationSeconds": -1, "leaseTransitions": 0}})
            ),
            ["spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0"]
        );
        let mut ns = json!({"metadata": {"name": "a"}});
        admit(Builtin::Namespace, &mut ns, None, &mut Vec::new());
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "a");
        assert!(ns.get("spec").is_none());
    }

    #[test]
    fn events_and_list_items() {
        let types = builtin_types();
        let v1 = types.iter().find(|t| t.builtin == Some(Builtin::EventV1));
        assert_eq!(v1.map(error_group), Some(""));
        assert_eq!(
            without_type_meta(br#"{"kind":"Event","apiVersion":"v1","metadata":{}}"#),
            br#"{"metadata":{}}"#
        );
    }
}
