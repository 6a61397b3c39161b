//! The structural-schema invariants (`ValidateStructural` in apiextensions-apiserver): every
//! node has a type (except under int-or-string / preserve-unknown-fields), value validations
//! under anyOf/allOf/oneOf/not carry no structure, and the root `metadata` may only constrain
//! `name` and `generateName`.

use serde_json::{Map, Value};

use super::field_path::{forbidden, go_quote, invalid, required, sort_by_text, type_error};
use super::validate::FieldError;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Keywords kube-apiserver cannot turn into a structural schema at all; their own
/// "is not supported" errors are reported instead (see `schema_rules`).
const UNCONVERTIBLE: &[&str] = &[
    "$ref",
    "id",
    "definitions",
    "dependencies",
    "patternProperties",
    "additionalItems",
];

/// Whether kube-apiserver can build a structural schema from `schema` at all.
pub fn convertible(schema: &Value) -> bool {
    let Some(node) = schema.as_object() else {
        return false;
    };
    if UNCONVERTIBLE.iter().any(|k| node.contains_key(*k))
        || node.get("items").is_some_and(Value::is_array)
    {
        return false;
    }
    let children = node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .chain(node.get("items"))
        .chain(node.get("additionalProperties").filter(|a| a.is_object()))
        .chain(node.get("not"));
    let logic = ["allOf", "anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| node.get(k).and_then(Value::as_array))
        .flatten();
    children.chain(logic).all(convertible)
}

/// `ValidateStructural`: the invariants of a structural schema, sorted by message as the
/// API server sorts them. `path` is the schema's field path, e.g.
/// `spec.validation.openAPIV3Schema`.
pub fn validate_structural(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Some(root) = schema.as_object() {
        invariants(root, Level::Root, path, &mut errors);
        completeness(root, path, &mut errors);
    }
    sort_by_text(&mut errors);
    errors
}

fn flag(node: &Map<String, Value>, key: &str) -> bool {
    node.get(key) == Some(&Value::Bool(true))
}

fn type_of(node: &Map<String, Value>) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or("")
}

fn invariants(node: &Map<String, Value>, level: Level, path: &str, errors: &mut Vec<FieldError>) {
    let ty = type_of(node);
    if ty == "array" && !node.contains_key("items") {
        errors.push(required(&format!("{path}.items"), "must be specified"));
    }
    if let Some(items) = node.get("items").and_then(Value::as_object) {
        invariants(items, Level::Item, &format!("{path}.items"), errors);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            if let Some(child) = child.as_object() {
                invariants(
                    child,
                    Level::Field,
                    &format!("{path}.properties[{key}]"),
                    errors,
                );
            }
        }
    }
    if let Some(additional) = node.get("additionalProperties") {
        if level == Level::Root {
            errors.push(forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(additional) = additional.as_object() {
            invariants(
                additional,
                Level::Field,
                &format!("{path}.additionalProperties"),
                errors,
            );
        }
    }

    let int_or_string = flag(node, "x-kubernetes-int-or-string");
    let preserve = flag(node, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(node, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errors.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errors.push(invalid(
            &format!("{path}.x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    value_validation(
        node,
        is_int_or_string_any_of(node.get("anyOf")),
        is_int_or_string_all_of(node),
        level,
        path,
        errors,
    );

    if embedded && ty != "object" {
        errors.push(type_error(
            path,
            ty,
            "must be object if x-kubernetes-embedded-resource is true",
        ));
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(required(&format!("{path}.type"), detail));
    }
    if embedded && node.contains_key("additionalProperties") {
        errors.push(forbidden(
            &format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        errors.push(invalid(
            &format!("{path}.type"),
            &go_quote(ty),
            "must be object at the root",
        ));
    }

    let check_metadata = level == Level::Root || embedded;
    let props = node.get("properties").and_then(Value::as_object);
    for name in ["kind", "apiVersion"] {
        if let Some(p) = props.and_then(|p| p.get(name)).and_then(Value::as_object)
            && check_metadata
            && type_of(p) != "string"
        {
            errors.push(invalid(
                &format!("{path}.properties[{name}].type"),
                &go_quote(type_of(p)),
                "must be string",
            ));
        }
    }
    if let Some(meta) = props
        .and_then(|p| p.get("metadata"))
        .and_then(Value::as_object)
    {
        metadata_invariants(
            meta,
            check_metadata,
            level,
            &format!("{path}.properties[metadata]"),
            errors,
        );
    }
    if embedded && !preserve && props.is_none_or(Map::is_empty) {
        errors.push(required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Schema members a structural schema keeps; anything else (example, externalDocs, id,
/// `$schema`) is dropped when kube-apiserver converts a schema, so it never counts against
/// `metadata` and is not published in OpenAPI.
pub const STRUCTURAL_MEMBERS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "format",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "items",
];

/// Whether a member holds its Go zero value after conversion (false, "", absent).
fn is_zero(key: &str, value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::String(s) => {
            s.is_empty() && !matches!(key, "x-kubernetes-list-type" | "x-kubernetes-map-type")
        }
        Value::Null => true,
        Value::Object(m) => m.is_empty() && key == "properties",
        _ => false,
    }
}

fn metadata_invariants(
    meta: &Map<String, Value>,
    check_metadata: bool,
    level: Level,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if check_metadata && type_of(meta) != "object" {
        errors.push(invalid(
            &format!("{path}.type"),
            &go_quote(type_of(meta)),
            "must be object",
        ));
    }
    if level != Level::Root {
        return;
    }
    // Only `type` and constraints on exactly name and/or generateName are allowed: the
    // server strips those and requires nothing to remain.
    let names_only = meta
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            !p.is_empty()
                && p.keys()
                    .all(|k| k.as_str() == "name" || k.as_str() == "generateName")
        });
    let remaining = meta.iter().any(|(k, v)| {
        STRUCTURAL_MEMBERS.contains(&k.as_str())
            && !matches!(k.as_str(), "type" | "default")
            && (k != "properties" || !names_only)
            && !is_zero(k, v)
    });
    if remaining {
        errors.push(forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some(branches) = any_of.and_then(Value::as_array) else {
        return false;
    };
    let only_type = |b: &Value, t: &str| {
        b.as_object()
            .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some(t))
    };
    branches.len() == 2 && only_type(&branches[0], "integer") && only_type(&branches[1], "string")
}

fn is_int_or_string_all_of(node: &Map<String, Value>) -> bool {
    node.get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")))
}

/// `validateValueValidation`: the junctors of a node.
fn value_validation(
    node: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    level: Level,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, branch) in branches(node, "anyOf") {
            nested(branch, false, level, &format!("{path}.anyOf[{i}]"), errors);
        }
    }
    for (i, branch) in branches(node, "allOf") {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(branch, skip, level, &format!("{path}.allOf[{i}]"), errors);
    }
    for (i, branch) in branches(node, "oneOf") {
        nested(branch, false, level, &format!("{path}.oneOf[{i}]"), errors);
    }
    if let Some(not) = node.get("not").and_then(Value::as_object) {
        nested(not, false, level, &format!("{path}.not"), errors);
    }
    if let Some(pattern) = node.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(pattern)
    {
        errors.push(invalid(
            &format!("{path}.pattern"),
            &go_quote(pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn branches<'a>(
    node: &'a Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = (usize, &'a Map<String, Value>)> {
    node.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, b)| b.as_object().map(|b| (i, b)))
}

/// `validateNestedValueValidation`: what may not appear under a junctor.
fn nested(
    v: &Map<String, Value>,
    skip_any_of: bool,
    level: Level,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    value_validation(v, skip_any_of, false, level, path, errors);
    if let Some(items) = v.get("items").and_then(Value::as_object) {
        nested(items, false, level, &format!("{path}.items"), errors);
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            if let Some(p) = p.as_object() {
                nested(
                    p,
                    false,
                    Level::Field,
                    &format!("{path}.properties[{k}]"),
                    errors,
                );
            }
        }
    }
    let present = |k: &str| v.get(k).is_some_and(|x| !is_zero(k, x));
    if present("type") {
        errors.push(forbidden(
            &format!("{path}.type"),
            "must be empty to be structural",
        ));
    }
    if v.contains_key("additionalProperties") {
        errors.push(forbidden(
            &format!("{path}.additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    let rules: [(&str, &str); 11] = [
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (key, detail) in rules {
        let hit = match key {
            "x-kubernetes-list-map-keys" | "x-kubernetes-validations" => v
                .get(key)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            "x-kubernetes-list-type" | "x-kubernetes-map-type" | "default" => {
                v.get(key).is_some_and(|x| !x.is_null())
            }
            _ => present(key),
        };
        if hit {
            errors.push(forbidden(&format!("{path}.{key}"), detail));
        }
    }
    if v.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key("metadata"))
    {
        errors.push(forbidden(
            &format!("{path}.properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: properties and items named under the root's junctors
/// must also be specified structurally.
fn completeness(root: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    junctor_completeness(root, Some(root), path, path, errors);
}

fn junctor_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errors: &mut Vec<FieldError>,
) {
    for (key, list) in [
        ("allOf", true),
        ("anyOf", true),
        ("oneOf", true),
        ("not", false),
    ] {
        if list {
            for (i, b) in branches(v, key) {
                nested_completeness(b, s, s_path, &format!("{v_path}.{key}[{i}]"), errors);
            }
        } else if let Some(b) = v.get(key).and_then(Value::as_object) {
            nested_completeness(b, s, s_path, &format!("{v_path}.{key}"), errors);
        }
    }
}

fn nested_completeness(
    v: &Map<String, Value>,
    s: Option<&Map<String, Value>>,
    s_path: &str,
    v_path: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errors.push(required(
            s_path,
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    junctor_completeness(v, Some(s), s_path, v_path, errors);
    if let Some(items) = v.get("items").and_then(Value::as_object) {
        nested_completeness(
            items,
            s.get("items").and_then(Value::as_object),
            &format!("{s_path}.items"),
            &format!("{v_path}.items"),
            errors,
        );
    }
    if let Some(props) = v.get("properties").and_then(Value::as_object) {
        let s_props = s.get("properties").and_then(Value::as_object);
        for (k, p) in props {
            let Some(p) = p.as_object() else { continue };
            let sp = format!("{s_path}.properties[{k}]");
            let vp = format!("{v_path}.properties[{k}]");
            match s_props.and_then(|sp| sp.get(k)).and_then(Value::as_object) {
                Some(sf) => nested_completeness(p, Some(sf), &sp, &vp, errors),
                None => errors.push(required(&sp, &format!("because it is defined in {vp}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: &str = "spec.validation.openAPIV3Schema";

    fn errors(schema: Value) -> Vec<String> {
        validate_structural(&schema, P)
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    fn obj(props: Value) -> Value {
        json!({"type": "object", "properties": props})
    }

    const META: &str = "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified";

    #[test]
    fn root_metadata_allows_only_type_and_name_constraints() {
        assert!(errors(obj(json!({"metadata": {"type": "object"}}))).is_empty());
        assert!(
            errors(obj(
                json!({"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}})
            ))
            .is_empty()
        );
        assert_eq!(
            errors(obj(
                json!({"metadata": {"type": "object", "description": "Standard object metadata."}})
            )),
            [META]
        );
        assert_eq!(
            errors(obj(
                json!({"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}})
            )),
            [META]
        );
    }

    #[test]
    fn missing_types_are_reported_per_level() {
        assert_eq!(
            errors(json!({"properties": {"spec": {"type": "object"}}})),
            [format!(
                "{P}.type: Required value: must not be empty at the root"
            )]
        );
        assert_eq!(
            errors(obj(
                json!({"v": {"anyOf": [{"type": "integer"}, {"type": "string"}]}})
            )),
            [format!(
                "{P}.properties[v].type: Required value: must not be empty for specified object fields"
            )]
        );
        assert!(
            errors(obj(
                json!({"q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}})
            ))
            .is_empty()
        );
        assert!(
            errors(obj(
                json!({"raw": {"x-kubernetes-preserve-unknown-fields": true}})
            ))
            .is_empty()
        );
    }

    #[test]
    fn junctors_may_not_carry_types_or_arrays_need_items() {
        assert_eq!(
            errors(obj(
                json!({"v": {"type": "integer", "anyOf": [{"type": "integer"}]}})
            )),
            [format!(
                "{P}.properties[v].anyOf[0].type: Forbidden: must be empty to be structural"
            )]
        );
        assert_eq!(
            errors(obj(json!({"list": {"type": "array"}}))),
            [format!(
                "{P}.properties[list].items: Required value: must be specified"
            )]
        );
    }
}
