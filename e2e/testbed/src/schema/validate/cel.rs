//! `x-kubernetes-validations` (CEL) rules evaluated as kube-apiserver evaluates them: per
//! schema node, with `oldSelf` bound to the correlated old value for transition rules, the
//! message from `messageExpression`, `message` or the rule itself, `reason` and `fieldPath`,
//! and ratcheting (a failing rule without `oldSelf` on a value that did not change is only a
//! warning).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::{Context, ExecutionError, Value as Cel};
use kube_cel::{CompilationResult, CompiledSchema, KubeCelExt};
use serde_json::Value;

use super::correlate;
use super::defaults::flag;
use super::formats;
use super::{FieldError, FieldErrorKind};

thread_local! {
    /// A context with Kubernetes' CEL library registered; each evaluation opens a scope in it.
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx
    };
}

/// What the rules said about an object.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub errors: Vec<FieldError>,
    /// Errors ratcheted away, as `field: message` warnings.
    pub warnings: Vec<String>,
}

/// Evaluates every rule of `compiled` (compiled from `schema`) against `value`.
pub(crate) fn evaluate(
    compiled: &CompiledSchema,
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
) -> Outcome {
    let mut out = Outcome::default();
    BASE.with(|base| {
        let walk = Walk { base };
        walk.node(compiled, schema, value, old, "", false, &mut out);
    });
    out
}

struct Walk<'a> {
    base: &'a Context<'static>,
}

impl Walk<'_> {
    /// `ancestor_unchanged`: the nearest ancestor with an old counterpart equals it.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        compiled: &CompiledSchema,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        ancestor_unchanged: bool,
        out: &mut Outcome,
    ) {
        if value.is_null() {
            // Rules only see non-null values; a nullable field's null is the parent's business.
            return;
        }
        let unchanged = match old {
            Some(o) => o == value,
            None => ancestor_unchanged,
        };
        self.rules(compiled, schema, value, old, path, unchanged, out);
        for (branch, branch_schema) in compiled.all_of.iter().zip(array(schema, "allOf")) {
            self.node(branch, branch_schema, value, old, path, unchanged, out);
        }
        match value {
            Value::Object(map) => {
                // Atomic maps are replaced whole: their members have no old counterpart.
                let correlatable =
                    schema.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic");
                let old = old.filter(|_| correlatable);
                let props = schema.get("properties");
                let additional = schema.get("additionalProperties").filter(|a| a.is_object());
                for (key, child) in map {
                    let (child_compiled, child_schema) =
                        match (compiled.properties.get(key), props.and_then(|p| p.get(key))) {
                            (Some(c), Some(s)) => (c, s),
                            _ => match (&compiled.additional_properties, additional) {
                                (Some(c), Some(s)) => (c.as_ref(), s),
                                _ => continue,
                            },
                        };
                    let child_path = if path.is_empty() {
                        key.clone()
                    } else if compiled.properties.contains_key(key) {
                        format!("{path}.{key}")
                    } else {
                        format!("{path}[{key}]")
                    };
                    self.node(
                        child_compiled,
                        child_schema,
                        child,
                        correlate::member(old, key),
                        &child_path,
                        unchanged,
                        out,
                    );
                }
            }
            Value::Array(items) => {
                if let (Some(item_compiled), Some(item_schema)) =
                    (&compiled.items, schema.get("items"))
                {
                    let olds = correlate::items(schema, items, old);
                    for (i, (item, old_item)) in items.iter().zip(olds).enumerate() {
                        self.node(
                            item_compiled,
                            item_schema,
                            item,
                            old_item,
                            &format!("{path}[{i}]"),
                            unchanged,
                            out,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &self,
        compiled: &CompiledSchema,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        unchanged: bool,
        out: &mut Outcome,
    ) {
        if compiled.validations.is_empty() {
            return;
        }
        let schema_type = schema_type(schema);
        let mut scope = self.base.new_inner_scope();
        scope.add_variable_from_value("self", to_cel(value, schema));
        if let Some(old) = old {
            scope.add_variable_from_value("oldSelf", to_cel(old, schema));
        }
        for result in &compiled.validations {
            let rule = match result {
                Ok(rule) => rule,
                Err(e) => {
                    out.errors.push(invalid_type(
                        path,
                        schema_type,
                        &format!("rule compile error: {e}"),
                    ));
                    continue;
                }
            };
            let optional_old_self = rule.rule.optional_old_self == Some(true);
            if rule.is_transition_rule && old.is_none() && !optional_old_self {
                // Transition rules need an old value to compare with.
                continue;
            }
            let mut optional_scope = scope.new_inner_scope();
            if old.is_none() && optional_old_self {
                optional_scope.add_variable_from_value("oldSelf", Cel::Null);
            }
            match rule.program.execute(&optional_scope) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    let error = failure(rule, &optional_scope, value, path);
                    if !rule.is_transition_rule && unchanged {
                        out.warnings.push(error.to_string());
                    } else {
                        out.errors.push(error);
                    }
                }
                Ok(_) => out.errors.push(invalid_type(
                    path,
                    schema_type,
                    &format!("rule did not evaluate to a bool: {}", rule_text(rule)),
                )),
                Err(e) => out.errors.push(invalid_type(
                    path,
                    schema_type,
                    &format!("{} evaluating rule: {}", go_error(&e), rule_text(rule)),
                )),
            }
        }
    }
}

/// The error of a rule that evaluated to false.
fn failure(rule: &CompilationResult, scope: &Context<'_>, value: &Value, path: &str) -> FieldError {
    let detail = rule
        .message_program
        .as_ref()
        .and_then(|p| match p.execute(scope) {
            Ok(Cel::String(s)) => {
                let s = s.trim();
                (!s.is_empty() && !s.contains('\n')).then(|| s.to_string())
            }
            _ => None,
        })
        .unwrap_or_else(|| match rule.rule.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => format!("failed rule: {}", rule.rule.rule.trim()),
        });
    let field = match rule.rule.field_path.as_deref().map(normalise_field_path) {
        Some(sub) if !sub.is_empty() && path.is_empty() => sub,
        Some(sub) if !sub.is_empty() => {
            if sub.starts_with('[') {
                format!("{path}{sub}")
            } else {
                format!("{path}.{sub}")
            }
        }
        _ => path.to_string(),
    };
    let (kind, message) = match rule.rule.reason.as_deref() {
        Some("FieldValueForbidden") => (FieldErrorKind::Forbidden, format!("Forbidden: {detail}")),
        Some("FieldValueRequired") => (
            FieldErrorKind::Required,
            format!("Required value: {detail}"),
        ),
        Some("FieldValueDuplicate") => (
            FieldErrorKind::Duplicate,
            format!("Duplicate value: {}", shown(value)),
        ),
        _ => {
            // Composite values are left out of the message; scalars are shown.
            let message = match value {
                Value::Object(_) | Value::Array(_) => format!("Invalid value: {detail}"),
                other => format!("Invalid value: {}: {detail}", shown(other)),
            };
            (FieldErrorKind::Invalid, message)
        }
    };
    FieldError {
        kind,
        field,
        message,
    }
}

/// `.spec.x['a.b']` → `spec.x[a.b]`, as field paths print.
fn normalise_field_path(path: &str) -> String {
    let path = path.strip_prefix('.').unwrap_or(path);
    path.replace("['", "[").replace("']", "]")
}

/// The rule as error messages name it: its message if it has one, else its expression.
fn rule_text(rule: &CompilationResult) -> String {
    match rule.rule.message.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => rule.rule.rule.trim().to_string(),
    }
}

/// An evaluation error worded as cel-go words it.
fn go_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload => "no such overload".into(),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    }
}

/// `field.Invalid(path, <schema type>, detail)`, as kube-apiserver reports rule errors.
fn invalid_type(path: &str, schema_type: &str, detail: &str) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field: path.to_string(),
        message: format!("Invalid value: {schema_type:?}: {detail}"),
    }
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn shown(value: &Value) -> String {
    match value {
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

fn array<'a>(schema: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    schema
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A JSON value as CEL sees it under `schema`: formatted strings become timestamps and
/// durations, declared field names are escaped, map keys are not.
fn to_cel(value: &Value, schema: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => string_to_cel(s, schema),
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(i, item_schema)).collect(),
            ))
        }
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let mut out = HashMap::with_capacity(map.len());
            for (key, child) in map {
                let (name, child_schema) = match (props.and_then(|p| p.get(key)), additional) {
                    (Some(s), _) => match escape(key) {
                        Some(name) => (name, s),
                        None => continue,
                    },
                    (None, Some(s)) => (key.clone(), s),
                    // Unknown members (preserved fields, object metadata) keep their names.
                    (None, None) => (key.clone(), &Value::Null),
                };
                out.insert(Key::String(Arc::new(name)), to_cel(child, child_schema));
            }
            if flag(schema, "x-kubernetes-embedded-resource") {
                for (key, empty) in [
                    ("apiVersion", Cel::String(Arc::new(String::new()))),
                    ("kind", Cel::String(Arc::new(String::new()))),
                    (
                        "metadata",
                        Cel::Map(CelMap {
                            map: Arc::new(HashMap::new()),
                        }),
                    ),
                ] {
                    out.entry(Key::String(Arc::new(key.into())))
                        .or_insert(empty);
                }
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

fn string_to_cel(s: &str, schema: &Value) -> Cel {
    if !flag(schema, "x-kubernetes-int-or-string") {
        match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => {
                if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                    return Cel::Timestamp(t);
                }
            }
            Some("duration") => {
                if let Some(d) = formats::go_duration(s)
                    .and_then(|secs| chrono::Duration::try_milliseconds((secs * 1000.0) as i64))
                {
                    return Cel::Duration(d);
                }
            }
            _ => {}
        }
    }
    Cel::String(Arc::new(s.to_string()))
}

/// CEL's reserved words: never identifiers (property names, variable names).
pub(crate) const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as a CEL identifier, escaped as kube-apiserver escapes it; `None` for
/// names CEL cannot reach.
fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.-/".contains(c));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c)) {
        return None;
    }
    Some(
        name.replace("__", "__underscores__")
            .replace('.', "__dot__")
            .replace('-', "__dash__")
            .replace('/', "__slash__"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, value: Value, old: Option<Value>) -> Outcome {
        let compiled = kube_cel::compile_schema(&schema);
        evaluate(&compiled, &schema, &value, old.as_ref())
    }

    #[test]
    fn object_rules_omit_the_value_and_scalars_show_it() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "integer"}, "c": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "c is immutable"}]}},
            "x-kubernetes-validations": [{"rule": "self.a < 3"}]}}});
        let out = run(schema.clone(), json!({"spec": {"a": 5, "c": "x"}}), None);
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert_eq!(out.errors[0].field, "spec");
        assert_eq!(
            out.errors[0].message,
            "Invalid value: failed rule: self.a < 3"
        );
        let out = run(
            schema,
            json!({"spec": {"a": 1, "c": "y"}}),
            Some(json!({"spec": {"a": 1, "c": "x"}})),
        );
        assert_eq!(out.errors[0].field, "spec.c");
        assert_eq!(
            out.errors[0].message,
            "Invalid value: \"y\": c is immutable"
        );
    }

    #[test]
    fn missing_keys_reason_and_field_path() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"r": {"type": "integer"}, "color": {"type": "string"}},
            "x-kubernetes-validations": [
                {"rule": "self.r <= 5", "message": "too many"},
                {"rule": "self.color != 'black'", "reason": "FieldValueForbidden", "fieldPath": ".color", "message": "no black"}]}}});
        let out = run(schema, json!({"spec": {"color": "black"}}), None);
        let text: Vec<String> = out.errors.iter().map(ToString::to_string).collect();
        assert!(
            text.contains(
                &"spec: Invalid value: \"object\": no such key: r evaluating rule: too many"
                    .to_string()
            ),
            "{text:?}"
        );
        assert!(
            text.contains(&"spec.color: Forbidden: no black".to_string()),
            "{text:?}"
        );
        assert_eq!(out.errors[1].kind, FieldErrorKind::Forbidden);
    }

    #[test]
    fn unchanged_values_only_warn() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}, "other": {"type": "string"}},
            "x-kubernetes-validations": []});
        let schema_with_rule = {
            let mut s = schema;
            s["properties"]["spec"]["x-kubernetes-validations"] =
                json!([{"rule": "self.a < 3", "message": "a too big"}]);
            s
        };
        let old = json!({"spec": {"a": 5}, "other": "x"});
        let out = run(
            schema_with_rule.clone(),
            json!({"spec": {"a": 5}, "other": "y"}),
            Some(old.clone()),
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        assert_eq!(
            out.warnings,
            vec!["spec: Invalid value: a too big".to_string()]
        );
        let out = run(
            schema_with_rule,
            json!({"spec": {"a": 6}, "other": "x"}),
            Some(old),
        );
        assert_eq!(out.errors.len(), 1);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(
            escape("a-b.c/d").as_deref(),
            Some("a__dash__b__dot__c__slash__d")
        );
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("a b"), None);
    }
}
