//! Small objects the testbed suites share.

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
