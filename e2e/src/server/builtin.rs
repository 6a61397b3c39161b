//! The built-in kinds Baton needs, with the columns `kubectl get` prints for them.

use super::resource::{Builtin, Column, ResourceType};

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
            columns: vec![col(
                "Created At",
                "date",
                "#time(.metadata.creationTimestamp)",
            )],
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
