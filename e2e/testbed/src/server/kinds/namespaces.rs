//! Namespaces as kube-apiserver creates them. Their deletion is `deletion`'s; the namespace
//! controller's conditions are `controllers::namespaces`.

use serde_json::{Value, json};

const FINALIZER: &str = "kubernetes";

/// `PrepareForCreate`: phase Active and the `kubernetes` finalizer (which clients may remove
/// later, so it is not a default). Runs after field ownership was recorded, as in kube.
pub fn prepare_for_create(obj: &mut Value) {
    obj["status"] = json!({"phase": "Active"});
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    match spec["finalizers"].as_array_mut() {
        Some(f) if f.iter().any(|x| x == FINALIZER) => {}
        Some(f) => f.push(json!(FINALIZER)),
        None => spec["finalizers"] = json!([FINALIZER]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_adds_the_kubernetes_finalizer_once() {
        let mut ns = json!({"metadata": {"name": "a"}});
        prepare_for_create(&mut ns);
        assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        let mut other = json!({"spec": {"finalizers": ["x"]}});
        prepare_for_create(&mut other);
        assert_eq!(other["spec"]["finalizers"], json!(["x", "kubernetes"]));
    }
}
