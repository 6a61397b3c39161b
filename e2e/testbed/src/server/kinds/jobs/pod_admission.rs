//! Pod admission, minimal: `SetDefaults_PodSpec`'s scalar defaults, the pod spec checks a
//! Job's template shares (containers, their names and images, the restart policy), and the
//! status a new pod starts with (`Pending`, its QoS class).
//!
//! Defaults go only outside lists (no container-level defaults): see `apps.rs` on why.

use serde_json::{Value, json};

use crate::server::api::error::{Cause, required};

fn set_default(obj: &mut Value, key: &str, value: Value) {
    if obj.is_object() && obj[key].is_null() {
        obj[key] = value;
    }
}

/// `SetDefaults_PodSpec`, the fields outside lists.
pub fn default_pod_spec(spec: &mut Value) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "enableServiceLinks", json!(true));
}

/// A `NotSupported` cause, as `field.NotSupported` words it.
pub fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported",
        field: field.into(),
        message: format!(
            "Unsupported value: {}: supported values: {}",
            crate::server::api::error::render_value(value),
            list.join(", ")
        ),
    }
}

/// The containers of a pod spec at `path` (`spec` of a pod, `spec.template.spec` of a Job):
/// at least one, each with a name and an image.
pub fn validate_containers(spec: &Value, path: &str, causes: &mut Vec<Cause>) {
    let containers = spec["containers"].as_array().filter(|c| !c.is_empty());
    let Some(containers) = containers else {
        causes.push(required(&format!("{path}.containers"), ""));
        return;
    };
    for (i, c) in containers.iter().enumerate() {
        if c["name"].as_str().is_none_or(str::is_empty) {
            causes.push(required(&format!("{path}.containers[{i}].name"), ""));
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            causes.push(required(&format!("{path}.containers[{i}].image"), ""));
        }
    }
}

/// The QoS class of a pod spec: Guaranteed when every container limits cpu and memory (with
/// requests, if any, equal), BestEffort when none asks for anything, else Burstable.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = spec["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let asks = |c: &Value| {
        ["requests", "limits"].iter().any(|k| {
            c["resources"][*k]
                .as_object()
                .is_some_and(|m| !m.is_empty())
        })
    };
    if !containers.iter().any(|c| asks(c)) {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = &c["resources"]["limits"];
        let requests = &c["resources"]["requests"];
        ["cpu", "memory"].iter().all(|r| {
            !limits[*r].is_null() && (requests[*r].is_null() || requests[*r] == limits[*r])
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Defaulting and validation of a pod (`old` on updates). A new pod starts `Pending`.
pub fn admit_pod(obj: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    default_pod_spec(&mut obj["spec"]);
    validate_containers(&obj["spec"], "spec", causes);
    let policy = &obj["spec"]["restartPolicy"];
    if !["Always", "OnFailure", "Never"]
        .iter()
        .any(|p| policy == *p)
    {
        causes.push(not_supported(
            "spec.restartPolicy",
            policy,
            &["Always", "OnFailure", "Never"],
        ));
    }
    if old.is_none() {
        // The strategy's PrepareForCreate: whatever status the client sent is replaced.
        let qos = qos_class(&obj["spec"]);
        obj["status"] = json!({"phase": "Pending", "qosClass": qos});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_new_pod_is_defaulted_and_pending() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "i"}]}});
        let mut causes = Vec::new();
        admit_pod(&mut pod, None, &mut causes);
        assert!(causes.is_empty());
        assert_eq!(pod["spec"]["restartPolicy"], "Always");
        assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
    }

    #[test]
    fn pods_need_named_containers_with_images_and_a_known_restart_policy() {
        let mut pod = json!({"spec": {"restartPolicy": "Sometimes", "containers": [{}]}});
        let mut causes = Vec::new();
        admit_pod(&mut pod, Some(&json!({})), &mut causes);
        assert_eq!(
            messages(&causes),
            [
                "spec.containers[0].name: Required value",
                "spec.containers[0].image: Required value",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ]
        );
        let mut empty = json!({});
        let mut causes = Vec::new();
        admit_pod(&mut empty, None, &mut causes);
        assert_eq!(messages(&causes), ["spec.containers: Required value"]);
    }

    #[test]
    fn qos_classes() {
        let c = |r: Value| json!({"containers": [{"resources": r}]});
        assert_eq!(qos_class(&c(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&c(json!({"requests": {"cpu": "1"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&c(json!({"limits": {"cpu": "1", "memory": "1Gi"}}))),
            "Guaranteed"
        );
    }
}
