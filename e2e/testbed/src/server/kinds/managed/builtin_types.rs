//! The structure of the built-in kinds the testbed serves, as their Go types and list
//! markers (`+listType`, `+structType=atomic`) give it to structured-merge-diff. Fields
//! marked `*` are present in the Go zero value (value structs, fields without `omitempty`).
//! Unlisted fields are untyped, so an incomplete table never rejects an object.

use super::schema::{
    Type, any_scalar, atomic_list, atomic_struct, boolean, kind_with, lenient, map_list, map_of,
    number, string, strukt,
};
use crate::server::api::resource::Builtin;

fn condition() -> Type {
    strukt(vec![
        ("type", string()),
        ("status", string()),
        ("observedGeneration", number()),
        ("*lastTransitionTime", string()),
        ("reason", string()),
        ("message", string()),
    ])
}

fn conditions() -> Type {
    map_list(&["type"], condition())
}

fn label_selector() -> Type {
    strukt(vec![
        ("matchLabels", map_of(string())),
        ("matchExpressions", atomic_list()),
    ])
}

fn event_source() -> Type {
    strukt(vec![("component", string()), ("host", string())])
}

fn crd_names() -> Type {
    strukt(vec![
        ("plural", string()),
        ("singular", string()),
        ("shortNames", atomic_list()),
        ("kind", string()),
        ("listKind", string()),
        ("categories", atomic_list()),
    ])
}

/// The type of a built-in kind.
pub fn of(builtin: Builtin) -> Type {
    lenient(table(builtin))
}

fn table(builtin: Builtin) -> Type {
    match builtin {
        Builtin::Namespace => kind_with(vec![
            ("*spec", strukt(vec![("finalizers", atomic_list())])),
            (
                "*status",
                strukt(vec![("phase", string()), ("conditions", conditions())]),
            ),
        ]),
        Builtin::Secret => kind_with(vec![
            ("immutable", boolean()),
            ("data", map_of(string())),
            ("stringData", map_of(string())),
            ("type", string()),
        ]),
        Builtin::ConfigMap => kind_with(vec![
            ("immutable", boolean()),
            ("data", map_of(string())),
            ("binaryData", map_of(string())),
        ]),
        Builtin::Event => kind_with(vec![
            ("*involvedObject", atomic_struct()),
            ("reason", string()),
            ("message", string()),
            ("*source", event_source()),
            ("*firstTimestamp", string()),
            ("*lastTimestamp", string()),
            ("count", number()),
            ("type", string()),
            ("*eventTime", string()),
            (
                "series",
                strukt(vec![("count", number()), ("*lastObservedTime", string())]),
            ),
            ("action", string()),
            ("related", atomic_struct()),
            ("*reportingComponent", string()),
            ("*reportingInstance", string()),
        ]),
        Builtin::EventV1 => kind_with(vec![
            ("*eventTime", string()),
            (
                "series",
                strukt(vec![("count", number()), ("*lastObservedTime", string())]),
            ),
            ("reportingController", string()),
            ("reportingInstance", string()),
            ("action", string()),
            ("reason", string()),
            ("*regarding", atomic_struct()),
            ("related", atomic_struct()),
            ("note", string()),
            ("type", string()),
            ("*deprecatedSource", event_source()),
            ("*deprecatedFirstTimestamp", string()),
            ("*deprecatedLastTimestamp", string()),
            ("deprecatedCount", number()),
        ]),
        Builtin::Lease => kind_with(vec![(
            "*spec",
            strukt(vec![
                ("holderIdentity", string()),
                ("leaseDurationSeconds", number()),
                ("acquireTime", string()),
                ("renewTime", string()),
                ("leaseTransitions", number()),
                ("strategy", string()),
                ("preferredHolder", string()),
            ]),
        )]),
        Builtin::PriorityClass => kind_with(vec![
            ("*value", number()),
            ("globalDefault", boolean()),
            ("description", string()),
            ("preemptionPolicy", string()),
        ]),
        Builtin::PodDisruptionBudget => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    ("minAvailable", any_scalar()),
                    ("selector", label_selector()),
                    ("maxUnavailable", any_scalar()),
                    ("unhealthyPodEvictionPolicy", string()),
                ]),
            ),
            (
                "*status",
                strukt(vec![
                    ("observedGeneration", number()),
                    ("disruptedPods", map_of(string())),
                    ("*disruptionsAllowed", number()),
                    ("*currentHealthy", number()),
                    ("*desiredHealthy", number()),
                    ("*expectedPods", number()),
                    ("conditions", conditions()),
                ]),
            ),
        ]),
        Builtin::CustomResourceDefinition => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    ("group", string()),
                    ("*names", crd_names()),
                    ("scope", string()),
                    ("versions", atomic_list()),
                    (
                        "conversion",
                        strukt(vec![("strategy", string()), ("webhook", Type::Untyped)]),
                    ),
                    ("preserveUnknownFields", boolean()),
                ]),
            ),
            (
                "*status",
                strukt(vec![
                    ("*conditions", conditions()),
                    ("*acceptedNames", crd_names()),
                    ("*storedVersions", atomic_list()),
                ]),
            ),
        ]),
        Builtin::ServiceAccount => kind_with(vec![
            ("secrets", map_list(&["name"], atomic_struct())),
            ("imagePullSecrets", atomic_list()),
            ("automountServiceAccountToken", boolean()),
        ]),
        Builtin::Service => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    (
                        "ports",
                        map_list(&["port", "protocol"], strukt(vec![("port", number())])),
                    ),
                    ("selector", map_of(string())),
                    ("clusterIPs", atomic_list()),
                    ("ipFamilies", atomic_list()),
                    ("externalIPs", atomic_list()),
                ]),
            ),
            ("*status", strukt(vec![])),
        ]),
        Builtin::Deployment => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    ("replicas", number()),
                    ("selector", label_selector()),
                    ("*template", Type::Untyped),
                    ("*strategy", Type::Untyped),
                ]),
            ),
            ("*status", strukt(vec![("conditions", conditions())])),
        ]),
        Builtin::Role => kind_with(vec![("rules", atomic_list())]),
        Builtin::ClusterRole => kind_with(vec![
            ("rules", atomic_list()),
            (
                "aggregationRule",
                strukt(vec![("clusterRoleSelectors", atomic_list())]),
            ),
        ]),
        Builtin::RoleBinding | Builtin::ClusterRoleBinding => kind_with(vec![
            ("subjects", atomic_list()),
            ("*roleRef", atomic_struct()),
        ]),
        Builtin::SelfSubjectAccessReview => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    ("resourceAttributes", strukt(vec![])),
                    ("nonResourceAttributes", strukt(vec![])),
                ]),
            ),
            ("*status", strukt(vec![("*allowed", boolean())])),
        ]),
        Builtin::SelfSubjectRulesReview => {
            kind_with(vec![("*spec", strukt(vec![])), ("*status", strukt(vec![]))])
        }
        Builtin::SelfSubjectReview => kind_with(vec![("*status", strukt(vec![]))]),
        Builtin::ValidatingAdmissionPolicy
        | Builtin::ValidatingAdmissionPolicyBinding
        | Builtin::MutatingAdmissionPolicy
        | Builtin::MutatingAdmissionPolicyBinding => {
            kind_with(vec![("*spec", Type::Untyped), ("*status", Type::Untyped)])
        }
        Builtin::Job => kind_with(vec![
            (
                "*spec",
                strukt(vec![
                    ("selector", label_selector()),
                    ("*template", Type::Untyped),
                ]),
            ),
            ("*status", strukt(vec![("conditions", conditions())])),
        ]),
        Builtin::Pod => kind_with(vec![
            ("*spec", Type::Untyped),
            ("*status", strukt(vec![("conditions", conditions())])),
        ]),
    }
}
