//! Pruning, defaulting and validation of custom objects against a structural schema, with
//! errors worded as kube-apiserver words them.

use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::{Map, Value};

/// Kinds of field errors, named as the API server names them in 422 responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    NotSupported,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
    TypeInvalid,
}

impl FieldErrorKind {
    /// The `reason` of a `StatusCause`.
    pub fn cause_reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

/// One validation failure at a field path such as `spec.podSets[0].count`. `message` is the
/// text the API server prints after `<field>: `.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A CRD version's schema, ready to prune, default and validate objects. Build one per served
/// version and reuse it: CEL rules are compiled once.
pub struct SchemaValidator {
    schema: Value,
    /// Compiled CEL rules; `None` when the schema has none (evaluating would only cost time).
    cel: Option<kube_cel::CompiledSchema>,
    /// Whether any rule reads `oldSelf`; otherwise the old object is not converted.
    transition_rules: bool,
}

impl SchemaValidator {
    /// Compiles the schema (including its CEL rules).
    pub fn new(schema: &Value) -> Self {
        let rules = rule_texts(schema);
        Self {
            schema: schema.clone(),
            cel: (!rules.is_empty()).then(|| kube_cel::compile_schema(schema)),
            transition_rules: rules.iter().any(|r| r.contains("oldSelf")),
        }
    }

    /// A validator of plain values (no root object handling, no CEL), used for defaults.
    pub(crate) fn value_only(schema: &Value) -> Self {
        Self {
            schema: schema.clone(),
            cel: None,
            transition_rules: false,
        }
    }

    /// Removes fields the schema does not know, and nulls in non-nullable fields.
    pub fn prune(&self, object: &mut Value) {
        prune_node(object, &self.schema, true);
    }

    /// Fills schema defaults for absent fields.
    pub fn apply_defaults(&self, object: &mut Value) {
        default_node(object, &self.schema);
    }

    /// Validates an object (already pruned and defaulted); `old` is the stored object on
    /// updates, for transition rules using `oldSelf`.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        validate_node(object, &self.schema, "", true, &mut errors);
        if errors.is_empty()
            && let Some(cel) = &self.cel
        {
            errors.extend(cel_errors(
                cel,
                object,
                old.filter(|_| self.transition_rules),
            ));
        }
        errors
    }

    pub(crate) fn validate_value(&self, value: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        validate_node(value, &self.schema, "", false, &mut errors);
        errors
    }
}

/// Removes fields the schema does not know (unless preserved), in place.
pub fn prune(object: &mut Value, schema: &Value) {
    prune_node(object, schema, true);
}

/// Fills schema defaults for absent fields, in place.
pub fn apply_defaults(object: &mut Value, schema: &Value) {
    default_node(object, schema);
}

/// Validates an object (after pruning and defaulting) against the schema, including CEL rules.
/// Compiles the schema on every call: keep a [`SchemaValidator`] where speed matters.
pub fn validate(object: &Value, old: Option<&Value>, schema: &Value) -> Vec<FieldError> {
    SchemaValidator::new(schema).validate(object, old)
}

const OBJECT_META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

pub(crate) fn prune_node(value: &mut Value, schema: &Value, keep_object_meta: bool) {
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    let embedded = schema.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let keep_meta = keep_object_meta || embedded;
            map.retain(|key, child| {
                if keep_meta && OBJECT_META_FIELDS.contains(&key.as_str()) {
                    return true;
                }
                let child_schema = props.and_then(|p| p.get(key)).or(additional);
                match child_schema {
                    Some(cs) => {
                        !(child.is_null() && cs.get("nullable") != Some(&Value::Bool(true)))
                    }
                    None => preserve,
                }
            });
            for (key, child) in map.iter_mut() {
                if keep_meta
                    && OBJECT_META_FIELDS.contains(&key.as_str())
                    && props.and_then(|p| p.get(key)).is_none()
                {
                    continue;
                }
                if keep_meta && key == "metadata" {
                    continue;
                }
                if let Some(cs) = props.and_then(|p| p.get(key)).or(additional) {
                    prune_node(child, cs, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    prune_node(item, item_schema, false);
                }
            }
        }
        _ => {}
    }
}

fn default_node(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, prop) in props {
                    if !map.contains_key(key)
                        && let Some(default) = prop.get("default")
                    {
                        map.insert(key.clone(), default.clone());
                    }
                    if let Some(child) = map.get_mut(key) {
                        default_node(child, prop);
                    }
                }
            }
            if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for child in map.values_mut() {
                    default_node(child, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    default_node(item, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => true,
    }
}

fn push(errors: &mut Vec<FieldError>, kind: FieldErrorKind, field: &str, message: String) {
    errors.push(FieldError {
        kind,
        field: field.to_string(),
        message,
    });
}

fn validate_node(
    value: &Value,
    schema: &Value,
    path: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = schema.as_object() else { return };
    let field = if path.is_empty() { "<root>" } else { path };

    if value.is_null() {
        if s.get("nullable") != Some(&Value::Bool(true)) {
            push(
                errors,
                FieldErrorKind::TypeInvalid,
                field,
                format!(
                    "Invalid value: \"null\": {field} in body must be of type {}: \"null\"",
                    s.get("type").and_then(Value::as_str).unwrap_or("object")
                ),
            );
        }
        return;
    }
    if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        if !(value.is_string() || value.is_i64() || value.is_u64()) {
            push(
                errors,
                FieldErrorKind::TypeInvalid,
                field,
                format!(
                    "Invalid value: \"{}\": {field} in body must be of type integer or string: \"{}\"",
                    type_name(value),
                    type_name(value)
                ),
            );
            return;
        }
    } else if let Some(ty) = s.get("type").and_then(Value::as_str)
        && !type_matches(ty, value)
    {
        push(
            errors,
            FieldErrorKind::TypeInvalid,
            field,
            format!(
                "Invalid value: \"{}\": {field} in body must be of type {ty}: \"{}\"",
                type_name(value),
                type_name(value)
            ),
        );
        return;
    }

    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(|v| v.to_string()).collect();
        push(
            errors,
            FieldErrorKind::NotSupported,
            field,
            format!(
                "Unsupported value: {value}: supported values: {}",
                list.join(", ")
            ),
        );
    }
    if let Some(n) = value.as_f64() {
        validate_number(n, value, s, field, errors);
    }
    if let Some(text) = value.as_str() {
        validate_string(text, s, field, errors);
    }
    for logic in ["anyOf", "allOf", "oneOf"] {
        if let Some(branches) = s.get(logic).and_then(Value::as_array) {
            let passing = branches.iter().filter(|b| branch_ok(value, b)).count();
            let ok = match logic {
                "anyOf" => passing > 0,
                "allOf" => passing == branches.len(),
                _ => passing == 1,
            };
            if !ok {
                push(
                    errors,
                    FieldErrorKind::Invalid,
                    field,
                    format!(
                        "Invalid value: {}: {field} in body must match {logic} schemas",
                        shown(value)
                    ),
                );
            }
        }
    }
    if let Some(not) = s.get("not")
        && branch_ok(value, not)
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!(
                "Invalid value: {}: {field} in body must not match the schema in not",
                shown(value)
            ),
        );
    }

    match value {
        Value::Object(map) => validate_object(map, s, path, field, is_root, errors),
        Value::Array(items) => validate_array(items, s, path, field, errors),
        _ => {}
    }
}

fn branch_ok(value: &Value, branch: &Value) -> bool {
    let mut errors = Vec::new();
    validate_node(value, branch, "x", false, &mut errors);
    errors.is_empty()
}

fn validate_number(
    n: f64,
    value: &Value,
    s: &Map<String, Value>,
    field: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        let exclusive = s.get("exclusiveMinimum") == Some(&Value::Bool(true));
        if n < min || (exclusive && n == min) {
            let op = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            push(
                errors,
                FieldErrorKind::Invalid,
                field,
                format!(
                    "Invalid value: {value}: {field} in body should be {op} {}",
                    bound(&s["minimum"])
                ),
            );
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        let exclusive = s.get("exclusiveMaximum") == Some(&Value::Bool(true));
        if n > max || (exclusive && n == max) {
            let op = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            push(
                errors,
                FieldErrorKind::Invalid,
                field,
                format!(
                    "Invalid value: {value}: {field} in body should be {op} {}",
                    bound(&s["maximum"])
                ),
            );
        }
    }
    if let Some(m) = s.get("multipleOf").and_then(Value::as_f64)
        && m > 0.0
        && (n / m).fract() != 0.0
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!(
                "Invalid value: {value}: {field} in body should be a multiple of {}",
                s["multipleOf"]
            ),
        );
    }
}

/// A bound as kube-apiserver prints it: `0`, not `0.0`.
fn bound(value: &Value) -> String {
    match value.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => format!("{}", n as i64),
        _ => value.to_string(),
    }
}

fn validate_string(text: &str, s: &Map<String, Value>, field: &str, errors: &mut Vec<FieldError>) {
    let chars = text.chars().count() as u64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && chars > max
    {
        push(
            errors,
            FieldErrorKind::TooLong,
            field,
            format!("Too long: may not be more than {max} bytes"),
        );
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && chars < min
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!(
                "Invalid value: {:?}: {field} in body should be at least {min} chars long",
                text
            ),
        );
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && !pattern_matches(pattern, text)
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!("Invalid value: {text:?}: {field} in body should match '{pattern}'"),
        );
    }
    if s.get("format").and_then(Value::as_str) == Some("date-time")
        && chrono::DateTime::parse_from_rfc3339(text).is_err()
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!("Invalid value: {text:?}: {field} in body must be of type date-time: {text:?}"),
        );
    }
}

/// Compiled patterns, shared by every validator (the same few dozen patterns recur).
static PATTERNS: LazyLock<Mutex<HashMap<String, Option<Regex>>>> = LazyLock::new(Default::default);

fn pattern_matches(pattern: &str, text: &str) -> bool {
    let mut cache = match PATTERNS.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    };
    let regex = cache
        .entry(pattern.to_string())
        .or_insert_with(|| Regex::new(pattern).ok());
    // A pattern the engine cannot compile is not held against the object.
    regex.as_ref().is_none_or(|r| r.is_match(text))
}

fn validate_object(
    map: &Map<String, Value>,
    s: &Map<String, Value>,
    path: &str,
    field: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !map.contains_key(key) {
                push(
                    errors,
                    FieldErrorKind::Required,
                    &join(path, key),
                    "Required value".into(),
                );
            }
        }
    }
    let count = map.len() as u64;
    if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
        && count > max
    {
        push(
            errors,
            FieldErrorKind::TooMany,
            field,
            format!("Too many: {count}: must have at most {max} items"),
        );
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
        && count < min
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!(
                "Invalid value: {count}: {field} in body should have at least {min} properties"
            ),
        );
    }
    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    for (key, child) in map {
        if is_root && OBJECT_META_FIELDS.contains(&key.as_str()) {
            continue;
        }
        if let Some(child_schema) = props.and_then(|p| p.get(key)) {
            validate_node(child, child_schema, &join(path, key), false, errors);
        } else if let Some(child_schema) = additional {
            validate_node(
                child,
                child_schema,
                &format!("{path}[{key}]"),
                false,
                errors,
            );
        }
    }
}

fn validate_array(
    items: &[Value],
    s: &Map<String, Value>,
    path: &str,
    field: &str,
    errors: &mut Vec<FieldError>,
) {
    let count = items.len() as u64;
    if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
        && count > max
    {
        push(
            errors,
            FieldErrorKind::TooMany,
            field,
            format!("Too many: {count}: must have at most {max} items"),
        );
    }
    if let Some(min) = s.get("minItems").and_then(Value::as_u64)
        && count < min
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            field,
            format!("Invalid value: {count}: {field} in body should have at least {min} items"),
        );
    }
    if let Some(item_schema) = s.get("items") {
        for (i, item) in items.iter().enumerate() {
            validate_node(item, item_schema, &format!("{path}[{i}]"), false, errors);
        }
    }
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    push(
                        errors,
                        FieldErrorKind::Duplicate,
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {item}"),
                    );
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let key_of = |item: &Value| -> Map<String, Value> {
                keys.iter()
                    .filter_map(|k| item.get(*k).map(|v| ((*k).to_string(), v.clone())))
                    .collect()
            };
            for (i, item) in items.iter().enumerate() {
                let key = key_of(item);
                if items[..i].iter().any(|other| key_of(other) == key) {
                    push(
                        errors,
                        FieldErrorKind::Duplicate,
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {}", Value::Object(key)),
                    );
                }
            }
        }
        _ => {}
    }
}

thread_local! {
    static CEL: kube_cel::Validator = kube_cel::Validator::new();
}

/// Every `x-kubernetes-validations` rule in the schema.
fn rule_texts(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(rules)) = map.get("x-kubernetes-validations") {
                out.extend(
                    rules
                        .iter()
                        .filter_map(|r| r.get("rule")?.as_str().map(str::to_string)),
                );
            }
            for child in map.values() {
                out.extend(rule_texts(child));
            }
        }
        Value::Array(items) => items.iter().for_each(|i| out.extend(rule_texts(i))),
        _ => {}
    }
    out
}

fn cel_errors(
    cel: &kube_cel::CompiledSchema,
    object: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let result = CEL.with(|validator| validator.validate_compiled(cel, object, old));
    match result {
        Ok(()) => Vec::new(),
        Err(failures) => failures
            .into_vec()
            .into_iter()
            .map(|f| {
                let field = if f.field_path.is_empty() {
                    "<root>".to_string()
                } else {
                    f.field_path.clone()
                };
                FieldError {
                    kind: FieldErrorKind::Invalid,
                    message: format!("Invalid value: \"object\": {}", f.message),
                    field,
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                        "count": {"type": "integer", "minimum": 0, "default": 1},
                        "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
                        "q": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "when": {"type": "string", "format": "date-time"},
                        "items": {"type": "array", "maxItems": 2, "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                    "x-kubernetes-validations": [{"rule": "self.count < 10", "message": "count must stay below 10"}],
                },
            },
        })
    }

    fn run(mut object: Value) -> (Value, Vec<FieldError>) {
        let v = SchemaValidator::new(&schema());
        v.prune(&mut object);
        v.apply_defaults(&mut object);
        let errors = v.validate(&object, None);
        (object, errors)
    }

    #[test]
    fn prunes_unknown_fields_and_keeps_object_meta_and_preserved_ones() {
        let (object, errors) = run(json!({
            "apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n", "labels": {"a": "b"}},
            "spec": {"name": "abc", "bogus": 1, "free": {"anything": {"goes": true}}},
            "extra": true,
        }));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(object["metadata"]["labels"]["a"], "b");
        assert!(object.get("extra").is_none());
        assert!(object["spec"].get("bogus").is_none());
        assert_eq!(object["spec"]["free"]["anything"]["goes"], true);
    }

    #[test]
    fn defaults_fill_absent_fields_including_a_defaulted_parent() {
        let mut object = json!({"apiVersion": "x/v1"});
        apply_defaults(&mut object, &schema());
        assert_eq!(object["spec"], json!({"count": 1, "mode": "A"}));
    }

    #[test]
    fn errors_are_shaped_like_the_api_servers() {
        let (_, errors) = run(
            json!({"spec": {"name": "TOOLONGNAME", "count": -1, "mode": "C", "q": 1.5,
                                               "when": "yesterday", "items": [{"name": "a"}, {"name": "a"}, {"name": "b"}]}}),
        );
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let has = |needle: &str| text.iter().any(|t| t.contains(needle));
        assert!(
            has("spec.name: Too long: may not be more than 5 bytes"),
            "{text:?}"
        );
        assert!(
            has(
                "spec.name: Invalid value: \"TOOLONGNAME\": spec.name in body should match '^[a-z]+$'"
            ),
            "{text:?}"
        );
        assert!(
            has(
                "spec.count: Invalid value: -1: spec.count in body should be greater than or equal to 0"
            ),
            "{text:?}"
        );
        assert!(
            has("spec.mode: Unsupported value: \"C\": supported values: \"A\", \"B\""),
            "{text:?}"
        );
        assert!(
            has(
                "spec.q: Invalid value: \"number\": spec.q in body must be of type integer or string: \"number\""
            ),
            "{text:?}"
        );
        assert!(has("spec.when: Invalid value: \"yesterday\""), "{text:?}");
        assert!(
            has("spec.items: Too many: 3: must have at most 2 items"),
            "{text:?}"
        );
        assert!(
            has("spec.items[1]: Duplicate value: {\"name\":\"a\"}"),
            "{text:?}"
        );
        assert_eq!(
            errors
                .iter()
                .find(|e| e.field == "spec.mode")
                .map(|e| e.kind),
            Some(FieldErrorKind::NotSupported)
        );
    }

    #[test]
    fn required_and_type_errors() {
        let (_, errors) = run(json!({"spec": {"count": "three"}}));
        assert!(
            errors
                .iter()
                .any(|e| e.field == "spec.name" && e.kind == FieldErrorKind::Required),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.field == "spec.count" && e.kind == FieldErrorKind::TypeInvalid),
            "{errors:?}"
        );
    }

    #[test]
    fn cel_rules_run_after_schema_checks_pass() {
        let (_, errors) = run(json!({"spec": {"name": "ok", "count": 12}}));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].message.contains("count must stay below 10"),
            "{errors:?}"
        );
        let (_, errors) = run(json!({"spec": {"name": "ok", "count": 3, "q": "5Gi"}}));
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn transition_rules_see_the_old_object() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "queue": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]}}}}});
        let v = SchemaValidator::new(&schema);
        let old = json!({"spec": {"queue": "a"}});
        assert!(
            v.validate(&json!({"spec": {"queue": "a"}}), Some(&old))
                .is_empty()
        );
        let errors = v.validate(&json!({"spec": {"queue": "b"}}), Some(&old));
        assert!(
            errors
                .iter()
                .any(|e| e.message.contains("field is immutable")),
            "{errors:?}"
        );
        assert!(
            v.validate(&json!({"spec": {"queue": "b"}}), None)
                .is_empty()
        );
    }

    #[test]
    fn nulls_in_non_nullable_fields_are_pruned() {
        let (object, errors) = run(json!({"spec": {"name": "ok", "when": null}}));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(object["spec"].get("when").is_none());
    }
}
