//! What the suites share: errors of kube-rs calls, running kubectl, waiting, and the Widget
//! test CRD.

/// The API `Status` inside a kube-rs error, if the server answered with one.
pub fn status_of(e: &kube::Error) -> Option<&kube::core::Status> {
    match e {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

/// The HTTP code of an API error (None for transport errors).
pub fn code_of(e: &kube::Error) -> Option<u16> {
    status_of(e).map(|s| s.code)
}

/// Runs kubectl against a kubeconfig, with its own cache directory. Returns None when
/// kubectl is not installed (callers decide whether that skips or fails them).
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "/usr/bin/kubectl".into());
    if !std::path::Path::new(&bin).exists() {
        return None;
    }
    let cache = kubeconfig.with_extension("kubectl-cache");
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args);
    cmd.output().ok()
}

/// Waits until `check` holds, polling every 20 ms, or panics with `what` after `deadline`.
pub async fn wait_until<F, Fut>(deadline: std::time::Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = tokio::time::Instant::now();
    loop {
        if check().await {
            return;
        }
        assert!(
            start.elapsed() < deadline,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Small objects the suites share.
pub mod fixtures {
    use serde_json::{Value, json};

    pub const WIDGET_GROUP: &str = "testbed.example.com";

    /// A namespaced test CRD (`widgets.testbed.example.com`, kind Widget, short name `wd`) with a
    /// status subresource, printer columns, defaults, and validation rules.
    pub fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.testbed.example.com"},
            "spec": {
                "group": WIDGET_GROUP,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                    ],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "description": "A Widget is a test object of the testbed.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "description": "The desired state of a Widget.",
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 0, "maximum": 100, "description": "How big the widget is."},
                                    "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "red"},
                                    "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "pattern": "^[a-z]+$"}},
                                    "parts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                              "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}}}
                                }
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "phase": {"type": "string"},
                                    "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                                                   "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}
                                }
                            }
                        }
                    }}
                }]
            }
        })
    }

    /// A Widget object.
    pub fn widget(namespace: &str, name: &str, size: i64) -> Value {
        json!({
            "apiVersion": format!("{WIDGET_GROUP}/v1"),
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"size": size},
        })
    }
}
