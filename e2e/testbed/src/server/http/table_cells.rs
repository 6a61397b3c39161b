//! Printer-column cells of built-in kinds that are not plain JSON paths, rendered as
//! kube-apiserver's table printers render them (`kubectl get` of Services, Deployments and
//! role bindings).

use serde_json::{Value, json};

use crate::server::http::json_path::json_path;

const NONE: &str = "<none>";

/// The cell for a `#name(...)` column path, if `path` is one of the functions here.
pub fn cell(obj: &Value, path: &str) -> Option<Value> {
    let (func, arg) = path.strip_prefix('#')?.split_once('(')?;
    let arg = arg.strip_suffix(')')?;
    let text = match func {
        "none" => none(obj, arg),
        "pairs" => pairs(obj, arg),
        "ports" => ports(obj),
        "ready" => ready(obj),
        "roleref" => role_ref(obj),
        "subjects" => subjects(obj, arg),
        // Admission policies and bindings.
        "paramkind" => crate::server::kinds::admission::printers::param_kind(obj),
        "paramref" => crate::server::kinds::admission::printers::param_ref(obj),
        // Jobs and pods (their printers live with the job controller model).
        other => return crate::server::controllers::jobs::cells::cell(obj, other),
    };
    Some(json!(text))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The value at `path` (lists joined with commas), or `<none>` when absent or empty.
fn none(obj: &Value, path: &str) -> String {
    let parts: Vec<String> = json_path(obj, path)
        .iter()
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().map(text).collect(),
            other => vec![text(other)],
        })
        .filter(|s| !s.is_empty())
        .collect();
    if parts.is_empty() {
        NONE.into()
    } else {
        parts.join(",")
    }
}

/// A label map as `k=v,...` in key order (as `labels.FormatLabels`), or `<none>`.
fn pairs(obj: &Value, path: &str) -> String {
    let Some(map) = json_path(obj, path)
        .first()
        .and_then(|m| m.as_object().cloned())
    else {
        return NONE.into();
    };
    if map.is_empty() {
        return NONE.into();
    }
    let mut kv: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", text(v)))
        .collect();
    kv.sort();
    kv.join(",")
}

/// A Service's ports: `80/TCP` or `80:30080/TCP` for node ports.
fn ports(obj: &Value) -> String {
    let list: Vec<String> = obj["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(node) => format!("{}:{node}/{protocol}", text(&p["port"])),
                None => format!("{}/{protocol}", text(&p["port"])),
            }
        })
        .collect();
    if list.is_empty() {
        NONE.into()
    } else {
        list.join(",")
    }
}

/// A Deployment's `ready/desired` replicas.
fn ready(obj: &Value) -> String {
    let ready = obj["status"]["readyReplicas"].as_i64().unwrap_or(0);
    let desired = obj["spec"]["replicas"].as_i64().unwrap_or(0);
    format!("{ready}/{desired}")
}

/// A binding's role as `Kind/name`.
fn role_ref(obj: &Value) -> String {
    let r = &obj["roleRef"];
    format!("{}/{}", text(&r["kind"]), text(&r["name"]))
}

/// A binding's subjects of one kind; service accounts as `namespace/name`.
fn subjects(obj: &Value, kind: &str) -> String {
    obj["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == kind)
        .map(|s| {
            if kind == "ServiceAccount" {
                format!("{}/{}", text(&s["namespace"]), text(&s["name"]))
            } else {
                text(&s["name"])
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_specific_cells() {
        let svc = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP", "nodePort": 30053}], "selector": {"b": "2", "a": "1"}}});
        assert_eq!(cell(&svc, "#ports()"), Some(json!("80/TCP,53:30053/UDP")));
        assert_eq!(cell(&svc, "#pairs(.spec.selector)"), Some(json!("a=1,b=2")));
        assert_eq!(
            cell(&svc, "#none(.spec.externalIPs)"),
            Some(json!("<none>"))
        );
        let rb = json!({"roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [
            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
            {"kind": "Group", "name": "g1"}, {"kind": "Group", "name": "g2"}]});
        assert_eq!(cell(&rb, "#roleref()"), Some(json!("ClusterRole/view")));
        assert_eq!(cell(&rb, "#subjects(Group)"), Some(json!("g1, g2")));
        assert_eq!(cell(&rb, "#subjects(ServiceAccount)"), Some(json!("ns/sa")));
        let d = json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 1}});
        assert_eq!(cell(&d, "#ready()"), Some(json!("1/3")));
        assert_eq!(cell(&d, "#unknown()"), None);
    }
}
