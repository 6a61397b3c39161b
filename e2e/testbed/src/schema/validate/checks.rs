//! OpenAPI value validation of custom objects as kube-apiserver's kube-openapi validator does
//! it, worded as its 422 causes are, with validation ratcheting: on updates, a value equal to
//! its old counterpart is not validated again (so a tightened schema does not block updates
//! that leave the offending field alone).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use regex::Regex;
use serde_json::{Map, Value};

use super::correlate;
use super::defaults::{OBJECT_META_FIELDS, flag};
use super::formats;
use super::{FieldError, FieldErrorKind};

/// Validates `value` at `path` ("" at the root). `old` is its counterpart in the stored
/// object on updates.
pub(crate) fn validate_node(
    value: &Value,
    old: Option<&Value>,
    schema: &Value,
    path: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = schema.as_object() else { return };
    if old == Some(value) {
        return;
    }
    let name = path;

    if value.is_null() {
        if !flag(schema, "nullable") {
            let ty = declared_types(s).join(",");
            push(
                errors,
                FieldErrorKind::TypeInvalid,
                path,
                format!("Invalid value: \"null\": {name} in body must be of type {ty}: \"null\""),
            );
        }
        return;
    }

    let types = declared_types(s);
    let type_ok = types.is_empty() || types.iter().any(|t| type_matches(t, value));
    if !type_ok {
        let actual = type_name(value);
        push(
            errors,
            FieldErrorKind::TypeInvalid,
            path,
            format!(
                "Invalid value: \"{actual}\": {name} in body must be of type {}: \"{actual}\"",
                types.join(",")
            ),
        );
    }

    check_junctors(value, s, path, errors);
    if !type_ok {
        return;
    }

    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(quoted).collect();
        push(
            errors,
            FieldErrorKind::NotSupported,
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            ),
        );
    }
    if let Some(n) = value.as_f64() {
        check_number(n, value, s, path, errors);
    }
    if let Some(text) = value.as_str() {
        check_string(text, s, path, errors);
    }
    match value {
        Value::Object(map) => check_object(map, old, s, path, is_root, errors),
        Value::Array(items) => check_array(items, old, schema, s, path, errors),
        _ => {}
    }
}

/// The types a schema allows: `x-kubernetes-int-or-string` is `integer,string`.
fn declared_types(s: &Map<String, Value>) -> Vec<&str> {
    if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return vec!["integer", "string"];
    }
    s.get("type").and_then(Value::as_str).into_iter().collect()
}

/// anyOf / oneOf / allOf / not: a failure adds kube-openapi's composite error (reported
/// without a field) and the errors of the branch that came closest.
fn check_junctors(value: &Value, s: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let branch_errors = |branch: &Value| {
        let mut found = Vec::new();
        validate_node(value, None, branch, path, false, &mut found);
        found
    };
    for (logic, wording) in [
        ("anyOf", "must validate at least one schema (anyOf)"),
        ("oneOf", "must validate one and only one schema (oneOf)"),
        ("allOf", "must validate all the schemas (allOf)"),
    ] {
        let Some(branches) = s.get(logic).and_then(Value::as_array) else {
            continue;
        };
        let results: Vec<Vec<FieldError>> = branches.iter().map(branch_errors).collect();
        let passing = results.iter().filter(|r| r.is_empty()).count();
        let ok = match logic {
            "anyOf" => passing > 0,
            "oneOf" => passing == 1,
            _ => passing == results.len(),
        };
        if ok {
            continue;
        }
        composite(errors, format!("\"{path}\" {wording}"));
        match logic {
            "allOf" => errors.extend(results.into_iter().flatten()),
            _ if passing == 0 => {
                if let Some(first) = results.into_iter().next() {
                    errors.extend(first);
                }
            }
            _ => {}
        }
    }
    if let Some(not) = s.get("not")
        && branch_errors(not).is_empty()
    {
        composite(
            errors,
            format!("\"{path}\" must not validate the schema (not)"),
        );
    }
}

fn check_number(
    n: f64,
    value: &Value,
    s: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !formats::number_ok(format, n)
    {
        let ty = s.get("type").and_then(Value::as_str).unwrap_or("number");
        composite(
            errors,
            format!("Checked value must be of type {ty} with format {format} in {path}"),
        );
    }
    for (key, exclusive_key, below) in [
        ("minimum", "exclusiveMinimum", true),
        ("maximum", "exclusiveMaximum", false),
    ] {
        let Some(limit) = s.get(key).and_then(Value::as_f64) else {
            continue;
        };
        let exclusive = s.get(exclusive_key) == Some(&Value::Bool(true));
        let violated = if below {
            n < limit || (exclusive && n == limit)
        } else {
            n > limit || (exclusive && n == limit)
        };
        if violated {
            let op = match (below, exclusive) {
                (true, true) => "greater than",
                (true, false) => "greater than or equal to",
                (false, true) => "less than",
                (false, false) => "less than or equal to",
            };
            push(
                errors,
                FieldErrorKind::Invalid,
                path,
                format!(
                    "Invalid value: {value}: {path} in body should be {op} {}",
                    bound(&s[key])
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
            path,
            format!(
                "Invalid value: {value}: {path} in body should be a multiple of {}",
                bound(&s["multipleOf"])
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

fn check_string(text: &str, s: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let chars = text.chars().count() as u64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && chars > max
    {
        push(
            errors,
            FieldErrorKind::TooLong,
            path,
            format!("Too long: may not be more than {max} bytes"),
        );
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && chars < min
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            path,
            format!("Invalid value: {text:?}: {path} in body should be at least {min} chars long"),
        );
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && !pattern_matches(pattern, text)
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            path,
            format!("Invalid value: {text:?}: {path} in body should match '{pattern}'"),
        );
    }
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !formats::string_ok(format, text)
    {
        push(
            errors,
            FieldErrorKind::TypeInvalid,
            path,
            format!("Invalid value: {text:?}: {path} in body must be of type {format}: {text:?}"),
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

fn check_object(
    map: &Map<String, Value>,
    old: Option<&Value>,
    s: &Map<String, Value>,
    path: &str,
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
    check_size(
        s,
        map.len(),
        ("maxProperties", "minProperties", "properties"),
        path,
        errors,
    );
    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    for (key, child) in map {
        if is_root && OBJECT_META_FIELDS.contains(&key.as_str()) {
            continue;
        }
        let old_child = correlate::member(old, key);
        if let Some(child_schema) = props.and_then(|p| p.get(key)) {
            validate_node(
                child,
                old_child,
                child_schema,
                &join(path, key),
                false,
                errors,
            );
        } else if let Some(child_schema) = additional {
            let child_path = format!("{path}.{key}");
            validate_node(
                child,
                old_child,
                child_schema,
                child_path.trim_start_matches('.'),
                false,
                errors,
            );
        }
    }
}

fn check_array(
    items: &[Value],
    old: Option<&Value>,
    schema: &Value,
    s: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    check_size(
        s,
        items.len(),
        ("maxItems", "minItems", "items"),
        path,
        errors,
    );
    if let Some(item_schema) = s.get("items") {
        let olds = correlate::items(schema, items, old);
        for (i, (item, old_item)) in items.iter().zip(olds).enumerate() {
            validate_node(
                item,
                old_item,
                item_schema,
                &format!("{path}[{i}]"),
                false,
                errors,
            );
        }
    }
    check_list_type(items, s, path, errors);
}

/// `x-kubernetes-list-type` set and map invariants: no duplicate items or keys.
fn check_list_type(
    items: &[Value],
    s: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    push(
                        errors,
                        FieldErrorKind::Duplicate,
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {}", shown(item)),
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

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as Go's `%#v`-like rendering in field errors: strings quoted, numbers bare.
fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

/// An allowed value as `field.NotSupported` lists it: always quoted.
fn quoted(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => format!("{:?}", other.to_string()),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON numbers with no fractional part are integers (`1.0` included), as Go decodes them.
fn is_integer(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => matches!(value, Value::Number(n) if is_integer(n)),
        "number" => value.is_number(),
        _ => true,
    }
}

/// The bounds on an object's or array's size: the keywords for the maximum and minimum and
/// what the minimum's message counts (kube-openapi says "items" for both maxima).
fn check_size(
    s: &Map<String, Value>,
    count: usize,
    (max_key, min_key, noun): (&str, &str, &str),
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let count = count as u64;
    if let Some(max) = s.get(max_key).and_then(Value::as_u64)
        && count > max
    {
        push(
            errors,
            FieldErrorKind::TooMany,
            path,
            format!("Too many: {count}: must have at most {max} items"),
        );
    }
    if let Some(min) = s.get(min_key).and_then(Value::as_u64)
        && count < min
    {
        push(
            errors,
            FieldErrorKind::Invalid,
            path,
            format!("Invalid value: {count}: {path} in body should have at least {min} {noun}"),
        );
    }
}

fn push(errors: &mut Vec<FieldError>, kind: FieldErrorKind, field: &str, message: String) {
    errors.push(FieldError {
        kind,
        field: field.to_string(),
        message,
    });
}

/// kube-openapi's composite errors carry no field; kube-apiserver reports them at `<nil>`
/// with the value `""`.
fn composite(errors: &mut Vec<FieldError>, message: String) {
    push(
        errors,
        FieldErrorKind::Invalid,
        "",
        format!("Invalid value: \"\": {message}"),
    );
}
