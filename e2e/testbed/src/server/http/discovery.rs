//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<group>`, and resource lists.

use serde_json::{Value, json};

use crate::server::api::registry::Registry;
use crate::server::api::resource::{Builtin, ResourceType};

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

/// `storageVersionHash` of a stored resource: an opaque digest of the storage
/// group/version/kind that clients (the storage version migrator) only compare for equality.
/// kube-apiserver uses the first 8 bytes of a SHA-256; any stable digest serves the same use.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    format!("{group}/{version}/{kind}").hash(&mut hasher);
    base64::engine::general_purpose::STANDARD.encode(hasher.finish().to_be_bytes())
}

/// The hash of the version a resource is stored in (every served version of a custom resource
/// reports its storage version's); None for kinds that are never stored.
fn storage_hash_of(registry: &Registry, rt: &ResourceType) -> Option<String> {
    if rt.builtin.is_some_and(Builtin::is_review) {
        return None;
    }
    let storage = registry
        .by_table(&rt.table)
        .into_iter()
        .find(|t| t.storage_version && t.group == rt.group)
        .map(|t| t.version.clone())
        .unwrap_or_else(|| rt.version.clone());
    Some(storage_version_hash(&rt.group, &storage, &rt.kind))
}

/// The verbs of the status and scale subresources.
const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// `/apis/<group>/<version>` (or `/api/v1`): an APIResourceList, or None when the
/// group/version is not served.
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
        add_names(&mut r, rt);
        if let Some(hash) = storage_hash_of(registry, rt) {
            r["storageVersionHash"] = json!(hash);
        }
        resources.push(r);
        if rt.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        if rt.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": SUBRESOURCE_VERBS,
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

/// The aggregated discovery document versions a client may ask for with
/// `Accept: application/json;g=apidiscovery.k8s.io;v=<v>;as=APIGroupDiscoveryList`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregated {
    V2,
    V2Beta1,
}

impl Aggregated {
    fn version(self) -> &'static str {
        match self {
            Self::V2 => "v2",
            Self::V2Beta1 => "v2beta1",
        }
    }

    /// The Content-Type kube-apiserver answers with.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::V2 => "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            Self::V2Beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
        }
    }
}

/// The first media range of an Accept header that asks for aggregated discovery as JSON;
/// None when the client wants the classic documents (or names no aggregated JSON form first).
pub fn negotiate(accept: &str) -> Option<Aggregated> {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        if param("as") != Some("APIGroupDiscoveryList") {
            // A plain `application/json` (or `*/*`) earlier in the list wins.
            if matches!(media, "application/json" | "*/*" | "application/*") {
                return None;
            }
            continue;
        }
        if !matches!(media, "application/json" | "*/*" | "application/*")
            || param("g") != Some("apidiscovery.k8s.io")
        {
            continue;
        }
        match param("v") {
            Some("v2") => return Some(Aggregated::V2),
            Some("v2beta1") => return Some(Aggregated::V2Beta1),
            _ => continue,
        }
    }
    None
}

/// The optional names both discovery forms list (omitted when empty).
fn add_names(r: &mut Value, rt: &ResourceType) {
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
}

fn aggregated_resource(rt: &ResourceType) -> Value {
    let response_kind = |group: &str, version: &str, kind: &str| json!({"group": group, "version": version, "kind": kind});
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": response_kind(&rt.group, &rt.version, &rt.kind),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": rt.verbs(),
    });
    add_names(&mut r, rt);
    let mut subresources = Vec::new();
    if rt.status_subresource {
        subresources.push(json!({
            "subresource": "status",
            "responseKind": response_kind(&rt.group, &rt.version, &rt.kind),
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if rt.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": response_kind("autoscaling", "v1", "Scale"),
            "verbs": SUBRESOURCE_VERBS,
        }));
    }
    if !subresources.is_empty() {
        r["subresources"] = Value::Array(subresources);
    }
    r
}

fn aggregated_group(registry: &Registry, group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|version| {
            let mut types = registry.in_group_version(group, version);
            types.sort_by(|a, b| a.plural.cmp(&b.plural));
            let resources: Vec<Value> = types.iter().map(|rt| aggregated_resource(rt)).collect();
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// An APIGroupDiscoveryList: of the legacy core group (`/api`) or of every named group
/// (`/apis`).
pub fn aggregated(registry: &Registry, core: bool, form: Aggregated) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| aggregated_group(registry, g, vs))
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{}", form.version()),
        "metadata": {},
        "items": items,
    })
}

/// `/apis` as the client asked for it: (Content-Type, document).
pub fn apis(registry: &Registry, accept: &str) -> (&'static str, Value) {
    match negotiate(accept) {
        Some(form) => (form.content_type(), aggregated(registry, false, form)),
        None => ("application/json", api_group_list(registry)),
    }
}

/// `/api` as the client asked for it: (Content-Type, document).
pub fn api(registry: &Registry, host: &str, accept: &str) -> (&'static str, Value) {
    match negotiate(accept) {
        Some(form) => (form.content_type(), aggregated(registry, true, form)),
        None => ("application/json", api_versions(host)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accept_header_selects_aggregated_v2() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(negotiate(kubectl), Some(Aggregated::V2));
        assert_eq!(
            negotiate("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            Some(Aggregated::V2Beta1)
        );
        assert_eq!(negotiate("application/json"), None);
        assert_eq!(negotiate(""), None);
        assert_eq!(
            negotiate(
                "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            ),
            None
        );
    }

    #[test]
    fn aggregated_documents_split_core_from_named_groups() {
        let registry = Registry::with_builtins();
        let core = aggregated(&registry, true, Aggregated::V2);
        assert_eq!(core["items"].as_array().map(Vec::len), Some(1));
        assert_eq!(core["items"][0]["metadata"], json!({}));
        let named = aggregated(&registry, false, Aggregated::V2);
        let items = named["items"].as_array().cloned().unwrap_or_default();
        assert!(!items.is_empty());
        assert!(items.iter().all(|i| i["metadata"]["name"].is_string()));
        let ns = &core["items"][0]["versions"][0]["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["resource"] == "namespaces").cloned())
            .unwrap_or_default();
        assert_eq!(ns["scope"], "Cluster");
        assert_eq!(ns["subresources"][0]["subresource"], "status");
    }
}
