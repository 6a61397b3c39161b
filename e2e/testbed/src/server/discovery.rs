//! Discovery documents: /version, /api, /apis, /apis/<group>, and resource lists.

use serde_json::{Value, json};

use super::resource::Registry;

/// The Kubernetes version the testbed reports.
pub const KUBE_MINOR: &str = "32";

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0+baton-testbed"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn api_versions(host: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    })
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn api_group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn api_group(registry: &Registry, group: &str) -> Option<Value> {
    let (g, vs) = registry
        .groups()
        .into_iter()
        .find(|(g, _)| g == group && !g.is_empty())?;
    let mut v = group_json(&g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for rt in &types {
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs(),
        });
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        resources.push(r);
        if rt.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}
