//! `ValidateCustomResourceDefinitionOpenAPISchema`: the per-node rules kube-apiserver applies
//! to a CRD schema besides structurality — unsupported keywords, list and map types, the
//! fields of `x-kubernetes-validations` rules, and compiling those rules (CEL).

use serde_json::{Map, Value};

use super::cel_check::{self, RuleCost};
use super::field_path::{
    forbidden, go_quote, go_struct, go_value, invalid, not_supported, required, type_error,
};
use super::validate::FieldError;

const TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];
const REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// What the walk needs besides the node.
pub struct Walk<'a> {
    /// The whole version schema (`self` at the root of CEL rules).
    pub root: &'a Value,
    /// Whether rules are compiled (only when the schema is structural and its defaults valid).
    pub compile_cel: bool,
    /// Costs of the compiled rules, for the schema-wide budget.
    pub costs: Vec<RuleCost>,
}

#[derive(Clone, Copy, Default)]
struct Ctx<'a> {
    /// `Some(reason)` when defaults are forbidden here.
    no_defaults: Option<&'a str>,
    inside_meta: bool,
}

/// Validates `schema` (at `path`); schema errors come first, then CEL errors.
pub fn validate_schema(schema: &Value, path: &str, walk: &mut Walk) -> Vec<FieldError> {
    let (mut schema_errors, cel_errors) =
        node(schema, path, true, Ctx::default(), Some(schema), walk);
    schema_errors.extend(cel_errors);
    schema_errors
}

type Errors = (Vec<FieldError>, Vec<FieldError>);

fn node(
    schema: &Value,
    path: &str,
    is_root: bool,
    ctx: Ctx,
    cel_node: Option<&Value>,
    walk: &mut Walk,
) -> Errors {
    let mut errs: Errors = (Vec::new(), Vec::new());
    let Some(s) = schema.as_object() else {
        return errs;
    };
    standard(s, path, ctx, &mut errs.0);
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        errs.0.push(forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(additional) = s.get("additionalProperties") {
        let has_props = s
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has_props && (additional.is_object() || additional == &Value::Bool(false)) {
            errs.0.push(forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ctx.inside_meta {
            Ctx {
                no_defaults: Some("inside additionalProperties applying to object metadata"),
                ..ctx
            }
        } else {
            ctx
        };
        if additional.is_object() {
            append(
                &mut errs,
                node(
                    additional,
                    &format!("{path}.additionalProperties"),
                    false,
                    sub,
                    cel_node.map(|_| additional),
                    walk,
                ),
            );
        }
    }
    let embedded = s.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true));
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (key, child) in props {
            let mut sub = ctx;
            if (is_root || embedded) && matches!(key.as_str(), "metadata" | "kind" | "apiVersion") {
                sub.inside_meta = true;
                if is_root {
                    sub.no_defaults = Some(match key.as_str() {
                        "metadata" => "in top-level metadata",
                        "kind" => "in top-level kind",
                        _ => "in top-level apiVersion",
                    });
                }
            }
            append(
                &mut errs,
                node(
                    child,
                    &format!("{path}.properties[{key}]"),
                    false,
                    sub,
                    cel_node.map(|_| child),
                    walk,
                ),
            );
        }
    }
    if let Some(not) = s.get("not") {
        append(
            &mut errs,
            node(not, &format!("{path}.not"), false, ctx, None, walk),
        );
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, b) in s
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            append(
                &mut errs,
                node(b, &format!("{path}.{key}[{i}]"), false, ctx, None, walk),
            );
        }
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        append(
            &mut errs,
            node(
                items,
                &format!("{path}.items"),
                false,
                ctx,
                cel_node.map(|_| items),
                walk,
            ),
        );
    }
    if s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.0.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, path, &mut errs.0);
    validations(s, path, cel_node, walk, &mut errs);
    errs
}

fn append(into: &mut Errors, from: Errors) {
    into.0.extend(from.0);
    into.1.extend(from.1);
}

/// `specStandardValidatorV3.validate`.
fn standard(s: &Map<String, Value>, path: &str, ctx: Ctx, errors: &mut Vec<FieldError>) {
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    if !ty.is_empty() && !TYPES.contains(&ty) {
        errors.push(not_supported(&format!("{path}.type"), ty, TYPES));
    }
    if s.contains_key("default")
        && let Some(reason) = ctx.no_defaults
    {
        errors.push(forbidden(
            &format!("{path}.default"),
            &format!("must not be set {reason}"),
        ));
    }
    let unsupported = [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ];
    for (key, detail) in unsupported {
        let present = match s.get(key) {
            Some(Value::String(v)) => !v.is_empty(),
            Some(Value::Object(m)) => key == "dependencies" || !m.is_empty(),
            Some(_) => true,
            None => false,
        };
        if present {
            errors.push(forbidden(&format!("{path}.{key}"), detail));
        }
    }
    if ty == "null" {
        errors.push(forbidden(
            &format!("{path}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.get("items").is_some_and(Value::is_array) {
        errors.push(forbidden(
            &format!("{path}.items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_meta && s.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        errors.push(forbidden(
            &format!("{path}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

fn list_and_map_types(s: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    let map_type = s.get("x-kubernetes-map-type");
    if map_type.is_some() && ty != "object" {
        errors.push(type_error(
            path,
            ty,
            "must be object if x-kubernetes-map-type is specified",
        ));
    }
    if let Some(mt) = map_type.and_then(Value::as_str)
        && mt != "atomic"
        && mt != "granular"
    {
        errors.push(not_supported(
            &format!("{path}.x-kubernetes-map-type"),
            mt,
            &["atomic", "granular"],
        ));
    }
    let list_type = s.get("x-kubernetes-list-type").and_then(Value::as_str);
    let items = s.get("items").and_then(Value::as_object);
    if list_type.is_some() && ty != "array" {
        errors.push(type_error(
            path,
            ty,
            "must be array if x-kubernetes-list-type is specified",
        ));
    } else if list_type == Some("set")
        && let Some(is) = items
    {
        match is.get("type").and_then(Value::as_str) {
            Some("array") => {
                if let Some(lt) = is.get("x-kubernetes-list-type").and_then(Value::as_str)
                    && lt != "atomic"
                {
                    errors.push(invalid(
                        &format!("{path}.items.x-kubernetes-list-type"),
                        &go_quote(lt),
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            }
            Some("object")
                if is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic") =>
            {
                {
                    // kube-apiserver prints the items' list type here (always null).
                    let shown = is
                        .get("x-kubernetes-list-type")
                        .map(go_value)
                        .unwrap_or_else(|| "null".into());
                    errors.push(invalid(
                        &format!("{path}.items.x-kubernetes-map-type"),
                        &shown,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type
        && !matches!(lt, "atomic" | "set" | "map")
    {
        errors.push(not_supported(
            &format!("{path}.x-kubernetes-list-type"),
            lt,
            &["atomic", "set", "map"],
        ));
    }
    let keys: Vec<&Value> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().collect())
        .unwrap_or_default();
    let keys_json = s
        .get("x-kubernetes-list-map-keys")
        .map(go_value)
        .unwrap_or_else(|| "null".into());
    if !keys.is_empty() {
        match list_type {
            None => errors.push(required(
                &format!("{path}.x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errors.push(invalid(
                &format!("{path}.x-kubernetes-list-type"),
                &go_quote(other),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errors.push(required(
                &format!("{path}.x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match items {
            None => errors.push(required(
                &format!("{path}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let item_type = is.get("type").and_then(Value::as_str).unwrap_or("");
                if item_type != "object" {
                    errors.push(invalid(
                        &format!("{path}.items.type"),
                        &go_quote(item_type),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let props = is.get("properties").and_then(Value::as_object);
                    let mut seen = Vec::new();
                    for key in keys.iter().filter_map(|k| k.as_str()) {
                        match props.and_then(|p| p.get(key)) {
                            Some(p) => {
                                let kt = p.get("type").and_then(Value::as_str).unwrap_or("");
                                if kt == "array" || kt == "object" {
                                    // kube-apiserver prints the items' type here.
                                    errors.push(invalid(
                                        &format!("{path}.items.properties[{key}].type"),
                                        &go_quote(item_type),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errors.push(invalid(
                                &format!("{path}.x-kubernetes-list-map-keys"),
                                &keys_json,
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(&key) {
                            errors.push(invalid(
                                &format!("{path}.x-kubernetes-list-map-keys"),
                                &keys_json,
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(key);
                    }
                }
            }
        }
    }
    map_list_keys_map_set(path, list_type, items, &keys, errors);
}

/// `validateMapListKeysMapSet`: list-map keys are required or defaulted, never nullable.
fn map_list_keys_map_set(
    path: &str,
    list_type: Option<&str>,
    items: Option<&Map<String, Value>>,
    keys: &[&Value],
    errors: &mut Vec<FieldError>,
) {
    let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, items) else {
        return;
    };
    if is.get("nullable") == Some(&Value::Bool(true)) {
        errors.push(forbidden(
            &format!("{path}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    let required_keys: Vec<&str> = is
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = is.get("properties").and_then(Value::as_object);
    for key in keys.iter().filter_map(|k| k.as_str()) {
        let Some(p) = props.and_then(|p| p.get(key)) else {
            continue;
        };
        if !required_keys.contains(&key) && p.get("default").is_none() {
            errors.push(required(
                &format!("{path}.items.properties[{key}].default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if p.get("nullable") == Some(&Value::Bool(true)) {
            errors.push(forbidden(
                &format!("{path}.items.properties[{key}].nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

/// The rule as kube-apiserver prints it in `Invalid value: {...}`.
pub fn rule_json(rule: &Value) -> String {
    let text = |k: &str| {
        Value::String(
            rule.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        )
    };
    go_struct(&[
        ("Rule", text("rule")),
        ("Message", text("message")),
        ("MessageExpression", text("messageExpression")),
        ("Reason", rule.get("reason").cloned().unwrap_or(Value::Null)),
        ("FieldPath", text("fieldPath")),
        (
            "OptionalOldSelf",
            rule.get("optionalOldSelf").cloned().unwrap_or(Value::Null),
        ),
    ])
}

fn has_newline(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

fn validations(
    s: &Map<String, Value>,
    path: &str,
    cel_node: Option<&Value>,
    walk: &mut Walk,
    errs: &mut Errors,
) {
    let Some(rules) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    if rules.is_empty() {
        return;
    }
    let base = format!("{path}.x-kubernetes-validations");
    let node_value = Value::Object(s.clone());
    for (i, rule) in rules.iter().enumerate() {
        let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or("");
        let (r, msg, msg_expr, fp) = (
            text("rule"),
            text("message"),
            text("messageExpression"),
            text("fieldPath"),
        );
        let at = |k: &str| format!("{base}[{i}].{k}");
        if r.trim().is_empty() {
            errs.0.push(required(&at("rule"), "rule is not specified"));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            errs.0.push(invalid(
                &at("message"),
                &go_quote(msg),
                "message must be non-empty if specified",
            ));
        } else if has_newline(msg.trim()) {
            errs.0.push(invalid(
                &at("message"),
                &go_quote(msg),
                "message must not contain line breaks",
            ));
        } else if has_newline(r.trim()) && msg.trim().is_empty() {
            errs.0.push(required(
                &at("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.0.push(required(
                &at("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            errs.0.push(not_supported(&at("reason"), reason, REASONS));
        }
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.0.push(invalid(
                &at("fieldPath"),
                &go_quote(fp),
                "fieldPath must be non-empty if specified",
            ));
        }
        if has_newline(fp) {
            errs.0.push(invalid(
                &at("fieldPath"),
                &go_quote(fp),
                "fieldPath must not contain line breaks",
            ));
        }
        if !fp.is_empty() && !cel_check::field_path_valid(&node_value, fp) {
            errs.0.push(invalid(
                &at("fieldPath"),
                &go_quote(fp),
                "must be a valid path",
            ));
        }
    }
    if !errs.0.is_empty() || !walk.compile_cel {
        return;
    }
    let Some(self_schema) = cel_node else { return };
    for (i, rule) in rules.iter().enumerate() {
        let outcome = cel_check::compile(rule, self_schema, walk.root);
        let rule_path = format!("{base}[{i}].rule");
        if outcome.cost > cel_check::PER_EXPRESSION_LIMIT {
            errs.1.push(forbidden(
                &rule_path,
                &cel_check::cost_message(
                    "estimated rule cost",
                    outcome.cost,
                    cel_check::PER_EXPRESSION_LIMIT,
                ),
            ));
        }
        walk.costs.push(RuleCost {
            path: rule_path.clone(),
            cost: outcome.cost,
        });
        if let Some(e) = outcome.rule_error {
            errs.1.push(invalid(&rule_path, &rule_json(rule), &e));
        }
        let message_path = format!("{base}[{i}].messageExpression");
        match outcome.message_expression_error {
            Some(e) => errs.1.push(invalid(&message_path, &rule_json(rule), &e)),
            None if rule.get("messageExpression").is_some() => {
                if outcome.message_cost > cel_check::PER_EXPRESSION_LIMIT {
                    errs.1.push(forbidden(
                        &message_path,
                        &cel_check::cost_message(
                            "estimated messageExpression cost",
                            outcome.message_cost,
                            cel_check::PER_EXPRESSION_LIMIT,
                        ),
                    ));
                }
                walk.costs.push(RuleCost {
                    path: message_path,
                    cost: outcome.message_cost,
                });
            }
            None => {}
        }
    }
}
