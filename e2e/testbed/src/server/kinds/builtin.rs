//! The built-in kinds' strategies' own steps: admission of Namespaces, Secrets, Events and
//! Leases, what runs after ownership is recorded on create, and the group 422 messages name.

use serde_json::{Map, Value, json};

use crate::server::api::error::{Cause, invalid_value};
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::{api::meta, kinds::events, kinds::namespaces, kinds::secrets};

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
        crate::server::kinds::jobs::job_defaults::generate_selector(obj);
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
        Builtin::Job => crate::server::kinds::jobs::admit_job(obj, old, causes),
        Builtin::Pod => crate::server::kinds::jobs::admit_pod(obj, old, causes),
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
    fn events_v1_are_validated_as_core_events() {
        let types = crate::server::api::builtin_types::builtin_types();
        let v1 = types.iter().find(|t| t.builtin == Some(Builtin::EventV1));
        assert_eq!(v1.map(error_group), Some(""));
    }
}
