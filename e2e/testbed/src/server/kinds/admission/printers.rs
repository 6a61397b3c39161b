//! The table cells kube-apiserver's printers give policies and bindings that are not plain
//! JSON paths: a policy's ParamKind and a binding's ParamRef.

use serde_json::Value;

/// `apiVersion/kind` of `spec.paramKind`, or `<unset>`.
pub fn param_kind(obj: &Value) -> String {
    let pk = &obj["spec"]["paramKind"];
    if !pk.is_object() {
        return "<unset>".into();
    }
    format!(
        "{}/{}",
        pk["apiVersion"].as_str().unwrap_or(""),
        pk["kind"].as_str().unwrap_or("")
    )
}

/// `namespace/name` of `spec.paramRef` (`*/name` without a namespace), its selector, or
/// `<unset>`.
pub fn param_ref(obj: &Value) -> String {
    let pr = &obj["spec"]["paramRef"];
    let name = pr["name"].as_str().unwrap_or("");
    let ns = pr["namespace"].as_str().unwrap_or("");
    match (name, ns) {
        ("", _) if pr["selector"].is_object() => pr["selector"].to_string(),
        ("", _) => "<unset>".into(),
        (name, "") => format!("*/{name}"),
        (name, ns) => format!("{ns}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cells() {
        assert_eq!(param_kind(&json!({"spec": {}})), "<unset>");
        assert_eq!(
            param_kind(&json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}})),
            "v1/ConfigMap"
        );
        assert_eq!(param_ref(&json!({"spec": {}})), "<unset>");
        assert_eq!(
            param_ref(&json!({"spec": {"paramRef": {"name": "p"}}})),
            "*/p"
        );
        assert_eq!(
            param_ref(&json!({"spec": {"paramRef": {"name": "p", "namespace": "n"}}})),
            "n/p"
        );
    }
}
