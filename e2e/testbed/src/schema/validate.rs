//! Pruning, defaulting and validation of custom objects against a structural schema, with
//! errors worded as kube-apiserver words them: OpenAPI value validation first, then the CEL
//! rules, which do not run when the object already has a blocking error.

mod cel;
mod checks;
mod correlate;
mod defaults;
mod formats;

use std::fmt;

use serde_json::Value;

pub(crate) use cel::RESERVED as CEL_RESERVED_WORDS;
pub(crate) use defaults::prune_node;

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

    /// Errors after which kube-apiserver does not evaluate CEL rules.
    fn blocks_rules(self) -> bool {
        matches!(
            self,
            FieldErrorKind::NotSupported
                | FieldErrorKind::Required
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany
                | FieldErrorKind::TypeInvalid
        )
    }
}

/// One validation failure at a field path such as `spec.podSets[0].count` (`""` for errors
/// without a field, which kube-apiserver prints as `<nil>`). `message` is the text the API
/// server prints after `<field>: `.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = if self.field.is_empty() {
            "<nil>"
        } else {
            &self.field
        };
        write!(f, "{field}: {}", self.message)
    }
}

/// The result of validating an object: errors (a 422) and warnings (ratcheted rule failures).
#[derive(Debug, Default)]
pub struct Validation {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
}

/// The cause kube-apiserver adds when CEL rules were skipped because of blocking errors.
const RULES_NOT_CHECKED: &str = "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// A CRD version's schema, ready to prune, default and validate objects. Build one per served
/// version and reuse it: CEL rules are compiled once.
pub struct SchemaValidator {
    schema: Value,
    /// Compiled CEL rules; `None` when the schema has none (evaluating would only cost time).
    cel: Option<kube_cel::CompiledSchema>,
}

impl SchemaValidator {
    /// Compiles the schema (including its CEL rules).
    pub fn new(schema: &Value) -> Self {
        Self {
            schema: schema.clone(),
            cel: has_rules(schema).then(|| kube_cel::compile_schema(schema)),
        }
    }

    /// A validator of plain values (no root object handling, no CEL), used for defaults.
    pub(crate) fn value_only(schema: &Value) -> Self {
        Self {
            schema: schema.clone(),
            cel: None,
        }
    }

    /// Removes fields the schema does not know, and nulls in non-nullable fields.
    pub fn prune(&self, object: &mut Value) {
        prune_node(object, &self.schema, true);
    }

    /// Fills schema defaults for absent fields.
    pub fn apply_defaults(&self, object: &mut Value) {
        defaults::default_node(object, &self.schema);
    }

    /// Validates an object (already pruned and defaulted); `old` is the stored object on
    /// updates, for transition rules and ratcheting.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.validate_with_warnings(object, old).errors
    }

    /// [`validate`](Self::validate), also returning the warnings of ratcheted rules.
    pub fn validate_with_warnings(&self, object: &Value, old: Option<&Value>) -> Validation {
        let mut errors = Vec::new();
        checks::validate_node(object, old, &self.schema, "", true, &mut errors);
        let Some(cel) = &self.cel else {
            return Validation {
                errors,
                warnings: Vec::new(),
            };
        };
        if errors.iter().any(|e| e.kind.blocks_rules()) {
            errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: String::new(),
                message: RULES_NOT_CHECKED.into(),
            });
            return Validation {
                errors,
                warnings: Vec::new(),
            };
        }
        let outcome = cel::evaluate(cel, &self.schema, object, old);
        errors.extend(outcome.errors);
        Validation {
            errors,
            warnings: outcome.warnings,
        }
    }

    pub(crate) fn validate_value(&self, value: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        checks::validate_node(value, None, &self.schema, "", false, &mut errors);
        errors
    }
}

/// Whether any node of the schema has `x-kubernetes-validations` rules.
fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            map.get("x-kubernetes-validations")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty())
                || map.values().any(has_rules)
        }
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
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
        SchemaValidator::new(&schema()).apply_defaults(&mut object);
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
                "spec.q: Invalid value: \"number\": spec.q in body must be of type integer,string: \"number\""
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
    fn blocking_errors_skip_the_rules_and_say_so() {
        let (_, errors) = run(json!({"spec": {"name": "ok", "count": 12, "mode": "C"}}));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors
                .iter()
                .all(|e| !e.message.contains("count must stay below 10"))
        );
        assert_eq!(errors[1].to_string(), format!("<nil>: {RULES_NOT_CHECKED}"));
    }

    #[test]
    fn unchanged_invalid_values_are_ratcheted() {
        let v = SchemaValidator::new(&schema());
        let old = json!({"spec": {"name": "TOOLONG", "count": 1}});
        let new = json!({"spec": {"name": "TOOLONG", "count": 2}});
        assert!(v.validate(&new, Some(&old)).is_empty());
        let changed = json!({"spec": {"name": "TOOLONGER", "count": 2}});
        assert!(!v.validate(&changed, Some(&old)).is_empty());
        assert!(!v.validate(&new, None).is_empty());
    }

    #[test]
    fn int32_overflow_is_a_composite_error() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "format": "int32"}}}}});
        let errors = SchemaValidator::new(&schema)
            .validate(&json!({"spec": {"replicas": 3_000_000_000_i64}}), None);
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.replicas"
        );
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
