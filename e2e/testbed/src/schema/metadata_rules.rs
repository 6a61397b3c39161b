//! The schema a CRD gives `metadata.name` and `metadata.generateName` (the only metadata a
//! CRD may constrain) applied to a custom object, as kube-apiserver's `objectmeta.Validate`
//! does.

use serde_json::Value;

use super::validate::{FieldError, SchemaValidator};

/// Errors of the object's name and generateName against `properties.metadata.properties`.
pub fn validate_metadata_names(object: &Value, schema: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let props = &schema["properties"]["metadata"]["properties"];
    for key in ["name", "generateName"] {
        let (Some(node), Some(value)) = (props.get(key), object["metadata"].get(key)) else {
            continue;
        };
        if value.as_str().is_none_or(str::is_empty) {
            continue;
        }
        let field = format!("metadata.{key}");
        for mut e in SchemaValidator::value_only(node).validate_value(value) {
            if e.field == "<root>" || e.field.is_empty() {
                e.message = e.message.replace("<root>", &field);
                e.field = field.clone();
            }
            errors.push(e);
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_name_longer_than_the_schema_allows_is_rejected() {
        let schema = json!({"type": "object", "properties": {"metadata": {"type": "object",
            "properties": {"name": {"type": "string", "maxLength": 5}}}}});
        assert!(
            validate_metadata_names(&json!({"metadata": {"name": "short"}}), &schema).is_empty()
        );
        let errors =
            validate_metadata_names(&json!({"metadata": {"name": "much-too-long"}}), &schema);
        assert_eq!(
            errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            ["metadata.name: Too long: may not be more than 5 bytes"]
        );
    }
}
