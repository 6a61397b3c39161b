//! OpenAPI v3 documents (what `kubectl explain` reads and what `kubectl apply` checks for
//! server-side field validation). Built-in schemas come from k8s-openapi; custom resources
//! use their CRD's schema with `metadata` referring to ObjectMeta.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value, json};

use super::resource::{Builtin, Registry, ResourceType};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Definitions for the built-in kinds plus everything they reference, and the definition
/// name of each built-in kind.
struct BuiltinDefs {
    defs: Map<String, Value>,
    names: BTreeMap<&'static str, String>,
}

fn def_name<T: schemars::JsonSchema>() -> String {
    T::schema_name().to_string()
}

static BUILTIN: LazyLock<BuiltinDefs> = LazyLock::new(|| {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SelfSubjectRulesReview};
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::{
        ConfigMap, Event, Namespace, Secret, Service, ServiceAccount,
    };
    use k8s_openapi::api::events::v1::Event as EventV1;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
    let mut names = BTreeMap::new();
    macro_rules! add {
        ($key:expr, $t:ty) => {{
            generator.subschema_for::<$t>();
            names.insert($key, def_name::<$t>());
        }};
    }
    add!("core/Namespace", Namespace);
    add!("core/Secret", Secret);
    add!("core/ConfigMap", ConfigMap);
    add!("core/Event", Event);
    add!("events/Event", EventV1);
    add!("Lease", Lease);
    add!("PriorityClass", PriorityClass);
    add!("PodDisruptionBudget", PodDisruptionBudget);
    add!("CustomResourceDefinition", CustomResourceDefinition);
    add!("core/ServiceAccount", ServiceAccount);
    add!("core/Service", Service);
    add!("Deployment", Deployment);
    add!("Role", Role);
    add!("ClusterRole", ClusterRole);
    add!("RoleBinding", RoleBinding);
    add!("ClusterRoleBinding", ClusterRoleBinding);
    add!("SelfSubjectAccessReview", SelfSubjectAccessReview);
    add!("SelfSubjectRulesReview", SelfSubjectRulesReview);
    add!("SelfSubjectReview", SelfSubjectReview);
    generator.subschema_for::<ObjectMeta>();
    let defs = generator.take_definitions(true);
    BuiltinDefs { defs, names }
});

fn builtin_key(b: Builtin) -> &'static str {
    match b {
        Builtin::Namespace => "core/Namespace",
        Builtin::Secret => "core/Secret",
        Builtin::ConfigMap => "core/ConfigMap",
        Builtin::Event => "core/Event",
        Builtin::EventV1 => "events/Event",
        Builtin::Lease => "Lease",
        Builtin::PriorityClass => "PriorityClass",
        Builtin::PodDisruptionBudget => "PodDisruptionBudget",
        Builtin::CustomResourceDefinition => "CustomResourceDefinition",
        Builtin::ServiceAccount => "core/ServiceAccount",
        Builtin::Service => "core/Service",
        Builtin::Deployment => "Deployment",
        Builtin::Role => "Role",
        Builtin::ClusterRole => "ClusterRole",
        Builtin::RoleBinding => "RoleBinding",
        Builtin::ClusterRoleBinding => "ClusterRoleBinding",
        Builtin::SelfSubjectAccessReview => "SelfSubjectAccessReview",
        Builtin::SelfSubjectRulesReview => "SelfSubjectRulesReview",
        Builtin::SelfSubjectReview => "SelfSubjectReview",
    }
}

/// The definition name of a resource's kind.
fn schema_name(rt: &ResourceType) -> String {
    if let Some(b) = rt.builtin
        && let Some(n) = BUILTIN.names.get(builtin_key(b))
    {
        return n.clone();
    }
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), rt.version, rt.kind)
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

fn custom_schema(rt: &ResourceType) -> Value {
    let mut s = rt
        .schema
        .clone()
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if !s.is_object() {
        s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    }
    if !s["properties"].is_object() {
        s["properties"] = json!({});
    }
    s["properties"]["apiVersion"] = json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values."});
    s["properties"]["kind"] = json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase."});
    s["properties"]["metadata"] = json!({"allOf": [{"$ref": format!("#/components/schemas/{OBJECT_META}")}], "description": "Standard object's metadata."});
    s["type"] = json!("object");
    s
}

fn operation(rt: &ResourceType, action: &str, def: &str, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params.iter().map(|p| json!({"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": true}})).collect();
    let mut op = json!({
        "operationId": format!("{action}{}", rt.kind),
        "parameters": parameters,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{def}")}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(rt),
    });
    if action == "patch" {
        let body = json!({"schema": {"type": "object"}});
        let mut content = json!({
            "application/apply-patch+yaml": body, "application/json-patch+json": body,
            "application/merge-patch+json": body});
        // Custom resources do not take strategic merge patches; kubectl looks here to decide.
        if rt.builtin.is_some() {
            content["application/strategic-merge-patch+json"] = body;
        }
        op["requestBody"] = json!({"content": content});
    }
    op
}

fn paths_for(rt: &ResourceType, def: &str) -> Vec<(String, Value)> {
    let prefix = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let base = if rt.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural)
    } else {
        format!("{prefix}/{}", rt.plural)
    };
    let write = ["dryRun", "fieldManager", "fieldValidation"];
    if rt.builtin.is_some_and(Builtin::is_review) {
        return vec![(base, json!({"post": operation(rt, "post", def, &write)}))];
    }
    let patch = ["dryRun", "fieldManager", "fieldValidation", "force"];
    let mut out = vec![
        (
            base.clone(),
            json!({"get": operation(rt, "list", def, &["labelSelector", "fieldSelector", "limit", "continue", "watch"]),
                   "post": operation(rt, "post", def, &write)}),
        ),
        (
            format!("{base}/{{name}}"),
            json!({"get": operation(rt, "get", def, &[]), "put": operation(rt, "put", def, &write),
                   "patch": operation(rt, "patch", def, &patch), "delete": operation(rt, "delete", def, &["dryRun"])}),
        ),
    ];
    if rt.status_subresource {
        out.push((
            format!("{base}/{{name}}/status"),
            json!({"get": operation(rt, "get", def, &[]), "put": operation(rt, "put", def, &write),
                   "patch": operation(rt, "patch", def, &patch)}),
        ));
    }
    out
}

/// The OpenAPI v3 document of one group/version.
pub fn group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types = registry.in_group_version(group, version);
    if types.is_empty() {
        return None;
    }
    match cached(&types, group, version) {
        Some((doc, _)) => Some(doc.clone()),
        None => Some(build(&types)),
    }
}

/// The document and hash of a group/version only built-in kinds serve: those never change,
/// so they are built once (kubectl asks for the index, with every hash, on each apply).
fn cached(
    types: &[Arc<ResourceType>],
    group: &str,
    version: &str,
) -> Option<&'static (Value, String)> {
    static DOCS: LazyLock<BTreeMap<(String, String), (Value, String)>> = LazyLock::new(|| {
        let registry = Registry::with_builtins();
        let mut docs = BTreeMap::new();
        for (group, versions) in registry.groups() {
            for version in versions {
                let doc = build(&registry.in_group_version(&group, &version));
                let hash = hash_of(&doc);
                docs.insert((group.clone(), version), (doc, hash));
            }
        }
        docs
    });
    if !types.iter().all(|t| t.builtin.is_some()) {
        return None;
    }
    DOCS.get(&(group.to_string(), version.to_string()))
}

fn hash_of(doc: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

fn build(types: &[Arc<ResourceType>]) -> Value {
    let mut schemas = Map::new();
    // The definitions the served kinds reference (ObjectMeta for custom resources), and
    // what those reference in turn; nothing else, so each document stays small.
    let roots = types.iter().map(|rt| match rt.builtin {
        Some(_) => schema_name(rt),
        None => OBJECT_META.to_string(),
    });
    for name in referenced(roots) {
        if let Some(def) = BUILTIN.defs.get(&name) {
            schemas.insert(name, def.clone());
        }
    }
    let mut paths = Map::new();
    for rt in types {
        let name = schema_name(rt);
        let mut schema = match rt.builtin {
            Some(_) => BUILTIN
                .defs
                .get(&name)
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"})),
            None => custom_schema(rt),
        };
        schema["x-kubernetes-group-version-kind"] = json!([gvk(rt)]);
        schemas.insert(name.clone(), schema);
        for (p, item) in paths_for(rt, &name) {
            paths.insert(p, item);
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", super::discovery::KUBE_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// Definition names reachable from `roots` through `$ref`s (the roots included).
fn referenced(roots: impl Iterator<Item = String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut queue: Vec<String> = roots.collect();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(def) = BUILTIN.defs.get(&name) {
            collect_refs(def, &mut queue);
        }
    }
    seen
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix("#/components/schemas/") {
                            out.push(name.to_string());
                        }
                    }
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// `/openapi/v3`: one entry per group/version with a content hash (kubectl caches by it).
pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            let types = registry.in_group_version(&group, &version);
            if types.is_empty() {
                continue;
            }
            let hash = match cached(&types, &group, &version) {
                Some((_, hash)) => hash.clone(),
                None => hash_of(&build(&types)),
            };
            let key = if group.is_empty() {
                format!("api/{version}")
            } else {
                format!("apis/{group}/{version}")
            };
            paths.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_hold_what_their_kinds_reference_and_nothing_else() {
        let registry = Registry::with_builtins();
        let names = |g: &str, v: &str| -> Vec<String> {
            let doc = group_version(&registry, g, v).unwrap();
            doc["components"]["schemas"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        let apps = names("apps", "v1");
        assert!(
            apps.iter().any(|n| n.ends_with("core.v1.PodSpec")),
            "{apps:?}"
        );
        assert!(apps.iter().any(|n| n == OBJECT_META));
        let rbac = names("rbac.authorization.k8s.io", "v1");
        assert!(
            !rbac.iter().any(|n| n.ends_with("core.v1.PodSpec")),
            "{rbac:?}"
        );
        // Cached documents are the ones a fresh build gives.
        let types = registry.in_group_version("apps", "v1");
        assert_eq!(
            cached(&types, "apps", "v1").map(|(d, _)| d.clone()),
            Some(build(&types))
        );
    }
}
