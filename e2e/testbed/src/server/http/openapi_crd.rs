//! The OpenAPI paths and definitions kube-apiserver publishes for a custom resource version,
//! in both forms: `/openapi/v3/apis/<group>/<version>` and `/openapi/v2`. One model of the
//! operations is rendered twice, so the two documents always agree.

use serde_json::{Map, Value, json};

use crate::schema::STRUCTURAL_MEMBERS;
use crate::server::api::resource::ResourceType;
use crate::server::http::openapi_params::{self as params, Param};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// The definitions the custom resource operations refer to besides the kind's own.
pub const REFERENCED: [&str; 6] = [OBJECT_META, LIST_META, STATUS, DELETE_OPTIONS, PATCH, SCALE];

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const OBJECT_META_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_META_DOC: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Which OpenAPI document is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    V2,
    V3,
}

impl Form {
    fn reference(self, def: &str) -> String {
        match self {
            Self::V2 => format!("#/definitions/{def}"),
            Self::V3 => format!("#/components/schemas/{def}"),
        }
    }
}

/// What an operation takes as its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    /// The object itself (create, replace).
    Object,
    DeleteOptions,
    Patch,
}

struct Operation {
    method: &'static str,
    action: &'static str,
    description: String,
    operation_id: String,
    params: Vec<&'static Param>,
    body: Body,
    /// Response codes with their descriptions; all answer `schema`.
    responses: &'static [(&'static str, &'static str)],
    schema: String,
    gvk: Value,
}

enum PathParam {
    /// The `{name}` of an object, documented with its kind.
    Name,
    Shared(&'static Param),
}

struct PathItem {
    path: String,
    operations: Vec<Operation>,
    params: Vec<PathParam>,
}

/// `ToValidOperationID`: letters and underscores (and digits after the first rune) kept, the
/// rune after a dropped one upper-cased.
fn operation_id_part(s: &str, capitalize_first: bool) -> String {
    let mut out = String::new();
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// The tag of a group/version's operations, e.g. `exampleCom_v1`.
fn tag(rt: &ResourceType) -> String {
    let group = rt.group.trim_end_matches(".k8s.io");
    format!(
        "{}_{}",
        operation_id_part(group, false),
        operation_id_part(&rt.version, false)
    )
}

/// `<verb><Group><Version><rest>`, as kube-apiserver names operations.
fn operation_id(rt: &ResourceType, verb: &str, rest: &str) -> String {
    let group = rt.group.trim_end_matches(".k8s.io");
    format!(
        "{verb}{}{}{rest}",
        operation_id_part(group, true),
        operation_id_part(&rt.version, true)
    )
}

/// The definition name of a custom resource kind: the group reversed, then version and kind.
pub fn definition_name(rt: &ResourceType, kind: &str) -> String {
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{kind}", reversed.join("."), rt.version)
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

const OK: &[(&str, &str)] = &[("200", "OK")];
const CREATED: &[(&str, &str)] = &[("200", "OK"), ("201", "Created"), ("202", "Accepted")];
const REPLACED: &[(&str, &str)] = &[("200", "OK"), ("201", "Created")];
const DELETED: &[(&str, &str)] = &[("200", "OK"), ("202", "Accepted")];

fn write_params() -> Vec<&'static Param> {
    vec![
        &params::DRY_RUN,
        &params::FIELD_MANAGER,
        &params::FIELD_VALIDATION,
    ]
}

fn patch_params() -> Vec<&'static Param> {
    vec![
        &params::DRY_RUN,
        &params::FIELD_MANAGER_PATCH,
        &params::FIELD_VALIDATION,
        &params::FORCE,
    ]
}

/// get/put/patch of the object or of one of its subresources (`sub`: "", "status", "scale").
fn object_operations(rt: &ResourceType, sub: &str, scoped: &str) -> Vec<Operation> {
    let kind = &rt.kind;
    // The CRD builder marks every route with the custom resource's kind, /scale included.
    let gvk = gvk(&rt.group, &rt.version, kind);
    let (what, suffix, schema) = match sub {
        "" => (
            "the specified".to_string(),
            String::new(),
            definition_name(rt, kind),
        ),
        "scale" => (
            "scale of the specified".to_string(),
            "Scale".to_string(),
            SCALE.to_string(),
        ),
        _ => (
            format!("{sub} of the specified"),
            operation_id_part(sub, true),
            definition_name(rt, kind),
        ),
    };
    let op = |method, action, verb: &str, description: String, params, body, responses| Operation {
        method,
        action,
        description,
        operation_id: operation_id(rt, verb, &format!("{scoped}{kind}{suffix}")),
        params,
        body,
        responses,
        schema: schema.clone(),
        gvk: gvk.clone(),
    };
    let mut ops = vec![
        op(
            "get",
            "get",
            "read",
            format!("read {what} {kind}"),
            vec![&params::RESOURCE_VERSION],
            Body::None,
            OK,
        ),
        op(
            "put",
            "put",
            "replace",
            format!("replace {what} {kind}"),
            write_params(),
            Body::Object,
            REPLACED,
        ),
    ];
    if sub.is_empty() {
        ops.push(Operation {
            schema: STATUS.into(),
            ..op(
                "delete",
                "delete",
                "delete",
                format!("delete a {kind}"),
                vec![
                    &params::DRY_RUN,
                    &params::GRACE_PERIOD_SECONDS,
                    &params::IGNORE_STORE_READ_ERROR_WITH_CLUSTER_BREAKING_POTENTIAL,
                    &params::ORPHAN_DEPENDENTS,
                    &params::PROPAGATION_POLICY,
                ],
                Body::DeleteOptions,
                DELETED,
            )
        });
    }
    ops.push(op(
        "patch",
        "patch",
        "patch",
        format!("partially update {what} {kind}"),
        patch_params(),
        Body::Patch,
        OK,
    ));
    ops
}

/// Every path of one custom resource version.
fn path_items(rt: &ResourceType) -> Vec<PathItem> {
    let prefix = format!("/apis/{}/{}", rt.group, rt.version);
    let kind = &rt.kind;
    let (collection, scoped) = if rt.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural),
            "Namespaced",
        )
    } else {
        (format!("{prefix}/{}", rt.plural), "")
    };
    let mut scope_params = Vec::new();
    if rt.namespaced {
        scope_params.push(PathParam::Shared(&params::NAMESPACE));
    }
    scope_params.push(PathParam::Shared(&params::PRETTY));
    let object_params = || {
        let mut p = vec![PathParam::Name];
        if rt.namespaced {
            p.push(PathParam::Shared(&params::NAMESPACE));
        }
        p.push(PathParam::Shared(&params::PRETTY));
        p
    };
    let list_schema = definition_name(rt, &rt.list_kind);
    let object_schema = definition_name(rt, kind);
    let main_gvk = gvk(&rt.group, &rt.version, kind);
    let mut items = vec![
        PathItem {
            path: collection.clone(),
            operations: vec![
                Operation {
                    method: "get",
                    action: "list",
                    description: format!("list objects of kind {kind}"),
                    operation_id: operation_id(rt, "list", &format!("{scoped}{kind}")),
                    params: params::LIST.to_vec(),
                    body: Body::None,
                    responses: OK,
                    schema: list_schema.clone(),
                    gvk: main_gvk.clone(),
                },
                Operation {
                    method: "post",
                    action: "post",
                    description: format!("create a {kind}"),
                    operation_id: operation_id(rt, "create", &format!("{scoped}{kind}")),
                    params: write_params(),
                    body: Body::Object,
                    responses: CREATED,
                    schema: object_schema.clone(),
                    gvk: main_gvk.clone(),
                },
                Operation {
                    method: "delete",
                    action: "deletecollection",
                    description: format!("delete collection of {kind}"),
                    operation_id: operation_id(rt, "delete", &format!("Collection{scoped}{kind}")),
                    params: params::LIST.to_vec(),
                    body: Body::None,
                    responses: OK,
                    schema: STATUS.into(),
                    gvk: main_gvk.clone(),
                },
            ],
            params: scope_params,
        },
        PathItem {
            path: format!("{collection}/{{name}}"),
            operations: object_operations(rt, "", scoped),
            params: object_params(),
        },
    ];
    if rt.status_subresource {
        items.push(PathItem {
            path: format!("{collection}/{{name}}/status"),
            operations: object_operations(rt, "status", scoped),
            params: object_params(),
        });
    }
    if rt.scale.is_some() {
        items.push(PathItem {
            path: format!("{collection}/{{name}}/scale"),
            operations: object_operations(rt, "scale", scoped),
            params: object_params(),
        });
    }
    if rt.namespaced {
        // Listing across namespaces: the list parameters belong to the path, sorted by name.
        let mut shared: Vec<&'static Param> = params::LIST.to_vec();
        shared.push(&params::PRETTY);
        shared.sort_by_key(|p| p.name);
        items.push(PathItem {
            path: format!("{prefix}/{}", rt.plural),
            operations: vec![Operation {
                method: "get",
                action: "list",
                description: format!("list objects of kind {kind}"),
                operation_id: operation_id(rt, "list", &format!("{kind}ForAllNamespaces")),
                params: Vec::new(),
                body: Body::None,
                responses: OK,
                schema: list_schema,
                gvk: main_gvk,
            }],
            params: shared.into_iter().map(PathParam::Shared).collect(),
        });
    }
    items
}

fn param_v3(p: &Param) -> Value {
    let mut v = json!({
        "name": p.name,
        "in": p.location,
        "description": p.description,
        "schema": {"type": p.type_, "uniqueItems": true},
    });
    if p.location == "path" {
        v["required"] = json!(true);
    }
    v
}

fn param_v2_inline(p: &Param) -> Value {
    let mut v = json!({
        "uniqueItems": true,
        "type": p.type_,
        "description": p.description,
        "name": p.name,
        "in": p.location,
    });
    if p.location == "path" {
        v["required"] = json!(true);
    }
    v
}

fn param_v2(p: &Param) -> Value {
    match p.v2_key {
        Some(key) => json!({"$ref": format!("#/parameters/{key}")}),
        None => param_v2_inline(p),
    }
}

fn name_param(form: Form, kind: &str) -> Value {
    let p = Param {
        name: "name",
        location: "path",
        type_: "string",
        description: "",
        v2_key: None,
    };
    let mut v = match form {
        Form::V2 => param_v2_inline(&p),
        Form::V3 => param_v3(&p),
    };
    v["description"] = json!(format!("name of the {kind}"));
    v
}

/// The shared `/openapi/v2` parameters of the body of deletes and patches.
const DELETE_BODY_KEY: &str = "body-2Y1dVQaQ";
const PATCH_BODY_KEY: &str = "body-78PwaGsr";

fn render_operation(op: &Operation, rt: &ResourceType, form: Form) -> Value {
    let schema = json!({"$ref": form.reference(&op.schema)});
    let mut out = json!({
        "tags": [tag(rt)],
        "description": op.description,
        "operationId": op.operation_id,
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": op.gvk,
    });
    let mut responses = Map::new();
    for (code, description) in op.responses {
        let body = match form {
            Form::V2 => json!({"description": description, "schema": schema}),
            Form::V3 => json!({"description": description, "content": {
                "application/json": {"schema": schema}, "application/yaml": {"schema": schema}}}),
        };
        responses.insert((*code).into(), body);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    out["responses"] = Value::Object(responses);
    let mut parameters: Vec<Value> = Vec::new();
    match form {
        Form::V2 => {
            out["consumes"] = if op.body == Body::Patch {
                json!([
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/apply-patch+yaml"
                ])
            } else {
                json!(["application/json", "application/yaml"])
            };
            out["produces"] = json!(["application/json", "application/yaml"]);
            out["schemes"] = json!(["https"]);
            match op.body {
                Body::None => {}
                Body::Object => parameters.push(json!({"name": "body", "in": "body",
                    "required": true, "schema": schema})),
                Body::DeleteOptions => {
                    parameters.push(json!({"$ref": format!("#/parameters/{DELETE_BODY_KEY}")}))
                }
                Body::Patch => {
                    parameters.push(json!({"$ref": format!("#/parameters/{PATCH_BODY_KEY}")}))
                }
            }
            parameters.extend(op.params.iter().map(|p| param_v2(p)));
        }
        Form::V3 => {
            parameters.extend(op.params.iter().map(|p| param_v3(p)));
            let content = |def: &str, types: &[&str]| {
                let r = json!({"schema": {"$ref": form.reference(def)}});
                let m: Map<String, Value> =
                    types.iter().map(|t| ((*t).into(), r.clone())).collect();
                Value::Object(m)
            };
            let json_yaml = ["application/json", "application/yaml"];
            match op.body {
                Body::None => {}
                Body::Object => {
                    out["requestBody"] =
                        json!({"content": content(&op.schema, &json_yaml), "required": true})
                }
                Body::DeleteOptions => {
                    out["requestBody"] = json!({"content": content(DELETE_OPTIONS, &json_yaml)})
                }
                Body::Patch => {
                    out["requestBody"] = json!({"content": content(PATCH, &[
                        "application/apply-patch+yaml",
                        "application/json-patch+json",
                        "application/merge-patch+json",
                    ]), "required": true})
                }
            }
        }
    }
    if !parameters.is_empty() {
        out["parameters"] = Value::Array(parameters);
    }
    out
}

/// The paths of one custom resource version.
pub fn paths(rt: &ResourceType, form: Form) -> Vec<(String, Value)> {
    path_items(rt)
        .into_iter()
        .map(|item| {
            let mut v = Map::new();
            for op in &item.operations {
                v.insert(op.method.into(), render_operation(op, rt, form));
            }
            let params: Vec<Value> = item
                .params
                .iter()
                .map(|p| match (p, form) {
                    (PathParam::Name, _) => name_param(form, &rt.kind),
                    (PathParam::Shared(p), Form::V2) => param_v2(p),
                    (PathParam::Shared(p), Form::V3) => param_v3(p),
                })
                .collect();
            v.insert("parameters".into(), Value::Array(params));
            (item.path, Value::Object(v))
        })
        .collect()
}

/// The `/openapi/v2` shared parameters the custom resource paths refer to.
pub fn v2_parameters() -> Map<String, Value> {
    let mut out = Map::new();
    let mut shared: Vec<&Param> = params::LIST.to_vec();
    shared.extend([
        &params::FIELD_MANAGER,
        &params::FIELD_MANAGER_PATCH,
        &params::FORCE,
        &params::GRACE_PERIOD_SECONDS,
        &params::IGNORE_STORE_READ_ERROR_WITH_CLUSTER_BREAKING_POTENTIAL,
        &params::NAMESPACE,
        &params::ORPHAN_DEPENDENTS,
        &params::PRETTY,
        &params::PROPAGATION_POLICY,
    ]);
    for p in shared {
        if let Some(key) = p.v2_key {
            out.insert(key.into(), param_v2_inline(p));
        }
    }
    out.insert(
        DELETE_BODY_KEY.into(),
        json!({"name": "body", "in": "body", "schema": {"$ref": Form::V2.reference(DELETE_OPTIONS)}}),
    );
    out.insert(
        PATCH_BODY_KEY.into(),
        json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": Form::V2.reference(PATCH)}}),
    );
    out
}

/// A CRD schema as published: structural keys only, false extension flags dropped, and the
/// shorthands unfolded (int-or-string as `anyOf`, embedded resources with apiVersion, kind
/// and metadata).
fn published(schema: &Value) -> Value {
    let Some(m) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        if !STRUCTURAL_MEMBERS.contains(&k.as_str())
            || (v == &Value::Bool(false) && k.starts_with("x-"))
        {
            continue;
        }
        let v = match k.as_str() {
            "properties" => Value::Object(
                v.as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), published(s)))
                    .collect(),
            ),
            "items" | "additionalProperties" | "not" if v.is_object() => published(v),
            "allOf" | "oneOf" | "anyOf" => {
                Value::Array(v.as_array().into_iter().flatten().map(published).collect())
            }
            _ => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    if out.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        && !out.contains_key("anyOf")
    {
        out.insert(
            "anyOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if out.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        let props = out
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(p) = props.as_object_mut() {
            p.entry("apiVersion")
                .or_insert_with(|| json!({"type": "string"}));
            p.entry("kind").or_insert_with(|| json!({"type": "string"}));
            p.entry("metadata")
                .or_insert_with(|| json!({"type": "object"}));
        }
    }
    Value::Object(out)
}

/// OpenAPI v2 cannot say what v3 can: junctors go, nullable and preserve-unknown-fields
/// values become untyped, arrays without items lose their type (kubectl relies on this).
fn to_v2(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    for k in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(k);
    }
    if m.remove("nullable") == Some(Value::Bool(true)) {
        m.remove("type");
        m.remove("items");
        m.remove("properties");
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        m.remove("items");
        m.remove("properties");
    }
    if m.get("type") == Some(&json!("array")) && !m.contains_key("items") {
        m.remove("type");
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        let nullable: Vec<String> = props
            .iter()
            .filter(|(_, s)| s["nullable"] == Value::Bool(true))
            .map(|(k, _)| k.clone())
            .collect();
        for s in props.values_mut() {
            to_v2(s);
        }
        if let Some(Value::Array(required)) = m.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
        }
    }
    if let Some(items) = m.get_mut("items") {
        to_v2(items);
    }
    let additional_nullable = m
        .get("additionalProperties")
        .is_some_and(|a| a["nullable"] == Value::Bool(true));
    if let Some(a) = m.get_mut("additionalProperties") {
        to_v2(a);
    }
    if additional_nullable {
        m.remove("required");
    }
    if m.get("required").is_some_and(|r| r == &json!([])) {
        m.remove("required");
    }
}

fn meta_property(form: Form, description: &str, def: &str) -> Value {
    match form {
        Form::V2 => json!({"description": description, "$ref": form.reference(def)}),
        Form::V3 => json!({"description": description, "allOf": [{"$ref": form.reference(def)}]}),
    }
}

/// The kind's and its list's definitions.
pub fn definitions(rt: &ResourceType, form: Form) -> Vec<(String, Value)> {
    let mut object = rt
        .schema
        .as_ref()
        .map(published)
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if form == Form::V2 {
        to_v2(&mut object);
    }
    if !object["properties"].is_object() {
        object["properties"] = json!({});
    }
    object["properties"]["apiVersion"] = json!({"description": API_VERSION_DOC, "type": "string"});
    object["properties"]["kind"] = json!({"description": KIND_DOC, "type": "string"});
    object["properties"]["metadata"] = meta_property(form, OBJECT_META_DOC, OBJECT_META);
    object["type"] = json!("object");
    object["x-kubernetes-group-version-kind"] = json!([gvk(&rt.group, &rt.version, &rt.kind)]);
    let list = json!({
        "description": format!("{} is a list of {}", rt.list_kind, rt.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", rt.plural),
                "type": "array",
                "items": {"$ref": form.reference(&definition_name(rt, &rt.kind))},
            },
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": meta_property(form, LIST_META_DOC, LIST_META),
        },
        "x-kubernetes-group-version-kind": [gvk(&rt.group, &rt.version, &rt.list_kind)],
    });
    vec![
        (definition_name(rt, &rt.kind), object),
        (definition_name(rt, &rt.list_kind), list),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_camel_case_the_group() {
        assert_eq!(
            operation_id_part("abc1.golden.test", true),
            "Abc1GoldenTest"
        );
        assert_eq!(
            operation_id_part("abc1.golden.test", false),
            "abc1GoldenTest"
        );
        assert_eq!(operation_id_part("my-group.io", true), "MyGroupIo");
        assert_eq!(operation_id_part("v1beta1", true), "V1beta1");
    }

    fn widget(namespaced: bool) -> ResourceType {
        let crd = json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}}}]}});
        crate::server::api::resource::types_from_crd(&crd).remove(0)
    }

    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| match (k.as_str(), v) {
                ("$ref", Value::String(r)) => out.push(r.clone()),
                _ => refs(v, out),
            }),
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn paths_cover_scope_and_subresources() {
        let names = |rt: &ResourceType| -> Vec<(String, Vec<String>)> {
            paths(rt, Form::V3)
                .into_iter()
                .map(|(p, item)| {
                    let ids = ["get", "post", "put", "patch", "delete"]
                        .iter()
                        .filter_map(|m| item[*m]["operationId"].as_str().map(String::from))
                        .collect();
                    (p, ids)
                })
                .collect()
        };
        let namespaced = names(&widget(true));
        assert_eq!(namespaced.len(), 5);
        assert_eq!(
            namespaced[3],
            (
                "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale".to_string(),
                vec![
                    "readExampleComV1NamespacedWidgetScale".to_string(),
                    "replaceExampleComV1NamespacedWidgetScale".into(),
                    "patchExampleComV1NamespacedWidgetScale".into(),
                ]
            )
        );
        assert_eq!(
            namespaced[4].1,
            vec!["listExampleComV1WidgetForAllNamespaces".to_string()]
        );
        let cluster = names(&widget(false));
        assert_eq!(cluster.len(), 4);
        assert_eq!(cluster[0].0, "/apis/example.com/v1/widgets");
        assert_eq!(cluster[0].1[2], "deleteExampleComV1CollectionWidget");
    }

    #[test]
    fn v2_parameter_references_resolve() {
        let shared = v2_parameters();
        let mut found = Vec::new();
        for (_, item) in paths(&widget(true), Form::V2) {
            refs(&item, &mut found);
        }
        let params: Vec<&String> = found
            .iter()
            .filter(|r| r.starts_with("#/parameters/"))
            .collect();
        assert!(!params.is_empty());
        for r in params {
            assert!(
                shared.contains_key(r.trim_start_matches("#/parameters/")),
                "{r}"
            );
        }
    }

    #[test]
    fn v2_drops_what_it_cannot_express() {
        let mut s = published(
            &json!({"type": "object", "example": 1, "required": ["a", "b"],
            "properties": {"a": {"type": "string", "nullable": true},
                "b": {"x-kubernetes-int-or-string": true},
                "c": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {}}}}),
        );
        assert!(s.get("example").is_none());
        assert_eq!(
            s["properties"]["b"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        to_v2(&mut s);
        assert_eq!(s["required"], json!(["b"]));
        assert_eq!(s["properties"]["a"], json!({}));
        assert!(s["properties"]["b"].get("anyOf").is_none());
        assert_eq!(
            s["properties"]["c"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
    }
}
