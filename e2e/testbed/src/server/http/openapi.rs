//! OpenAPI v3 documents (what `kubectl explain` reads and what `kubectl apply` checks for
//! server-side field validation). Built-in schemas come from k8s-openapi; custom resources
//! use their CRD's schema with `metadata` referring to ObjectMeta.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value, json};

use crate::server::api::registry::Registry;
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::http::openapi_crd::{self, Form};

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
    use k8s_openapi::api::autoscaling::v1::Scale;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::{
        ConfigMap, Event, Namespace, Secret, Service, ServiceAccount,
    };
    use k8s_openapi::api::events::v1::Event as EventV1;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        DeleteOptions, ListMeta, ObjectMeta, Patch, Status,
    };

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
    {
        use k8s_openapi::api::admissionregistration::v1 as ar;
        add!("ValidatingAdmissionPolicy", ar::ValidatingAdmissionPolicy);
        add!(
            "ValidatingAdmissionPolicyBinding",
            ar::ValidatingAdmissionPolicyBinding
        );
        add!("MutatingAdmissionPolicy", ar::MutatingAdmissionPolicy);
        add!(
            "MutatingAdmissionPolicyBinding",
            ar::MutatingAdmissionPolicyBinding
        );
    }
    add!("Job", k8s_openapi::api::batch::v1::Job);
    add!("core/Pod", k8s_openapi::api::core::v1::Pod);
    // What custom resource operations refer to (openapi_crd::REFERENCED).
    generator.subschema_for::<ObjectMeta>();
    generator.subschema_for::<ListMeta>();
    generator.subschema_for::<Status>();
    generator.subschema_for::<DeleteOptions>();
    generator.subschema_for::<Patch>();
    generator.subschema_for::<Scale>();
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
        Builtin::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
        Builtin::ValidatingAdmissionPolicyBinding => "ValidatingAdmissionPolicyBinding",
        Builtin::MutatingAdmissionPolicy => "MutatingAdmissionPolicy",
        Builtin::MutatingAdmissionPolicyBinding => "MutatingAdmissionPolicyBinding",
        Builtin::Job => "Job",
        Builtin::Pod => "core/Pod",
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
        // Built-in kinds take strategic merge patches (custom resources, published by
        // openapi_crd, do not); kubectl looks here to decide.
        let content = json!({
            "application/apply-patch+yaml": body, "application/json-patch+json": body,
            "application/merge-patch+json": body, "application/strategic-merge-patch+json": body});
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
    // The definitions the served kinds reference (ObjectMeta and the like for custom
    // resources), and
    // what those reference in turn; nothing else, so each document stays small.
    let roots = types.iter().flat_map(|rt| match rt.builtin {
        Some(_) => vec![schema_name(rt)],
        None => openapi_crd::REFERENCED.map(String::from).to_vec(),
    });
    for name in referenced(roots) {
        if let Some(def) = BUILTIN.defs.get(&name) {
            schemas.insert(name, def.clone());
        }
    }
    let mut paths = Map::new();
    for rt in types {
        if rt.builtin.is_none() {
            // Custom resources are published as kube-apiserver's CRD builder does.
            paths.extend(openapi_crd::paths(rt, Form::V3));
            schemas.extend(openapi_crd::definitions(rt, Form::V3));
            continue;
        }
        let name = schema_name(rt);
        let mut schema = BUILTIN
            .defs
            .get(&name)
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        schema["x-kubernetes-group-version-kind"] = json!([gvk(rt)]);
        schemas.insert(name.clone(), schema);
        for (p, item) in paths_for(rt, &name) {
            paths.insert(p, item);
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::server::http::discovery::KUBE_MINOR)},
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

/// A definition of the v3 components as OpenAPI v2 writes it: references point into
/// `definitions`, and a lone `allOf` reference is the reference itself.
fn v3_to_v2(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => {
                        out.insert(
                            k.clone(),
                            json!(r.replace("#/components/schemas/", "#/definitions/")),
                        );
                    }
                    ("allOf", Value::Array(a)) if a.len() == 1 && a[0].get("$ref").is_some() => {
                        out.insert("$ref".into(), v3_to_v2(&a[0])["$ref"].clone());
                    }
                    _ => {
                        out.insert(k.clone(), v3_to_v2(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(v3_to_v2).collect()),
        other => other.clone(),
    }
}

/// `/openapi/v2`: the custom resources' paths and definitions, with the shared definitions
/// and parameters they refer to (built-in kinds are published in v3 only).
pub fn v2(registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    let custom: Vec<&Arc<ResourceType>> =
        registry.all().filter(|rt| rt.builtin.is_none()).collect();
    if !custom.is_empty() {
        for name in referenced(openapi_crd::REFERENCED.iter().map(|s| s.to_string())) {
            if let Some(def) = BUILTIN.defs.get(&name) {
                definitions.insert(name, v3_to_v2(def));
            }
        }
    }
    for rt in custom {
        paths.extend(openapi_crd::paths(rt, Form::V2));
        definitions.extend(openapi_crd::definitions(rt, Form::V2));
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::server::http::discovery::KUBE_MINOR)},
        "paths": paths,
        "definitions": definitions,
        "parameters": openapi_crd::v2_parameters(),
    })
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
        assert!(
            apps.iter()
                .any(|n| n == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        );
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
