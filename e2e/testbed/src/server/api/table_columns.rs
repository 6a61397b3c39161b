//! Table column definitions as kube-apiserver declares them: the Name column, custom resource
//! printer columns (with the default description apiextensions gives), and the built-in
//! printers' columns, whose descriptions are the API fields' documentation.

use serde_json::{Value, json};

use crate::server::api::resource::{Builtin, CREATION_TIMESTAMP_DOC, Column, ResourceType};

/// `ObjectMeta.name`'s documentation (the Name column of every Table).
pub const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

const CONFIGMAP_DATA_DOC: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";

/// The Name column.
pub fn name_column(priority: i64) -> Value {
    json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": priority})
}

/// A built-in printer's declaration of a column: its type and description. The printers
/// declare Age (and counts such as a ConfigMap's Data) as strings, whatever the cell holds.
fn builtin_declaration(builtin: Builtin, col: &Column) -> (String, String) {
    let path = col.json_path.as_str();
    if path == ".metadata.creationTimestamp" {
        return ("string".into(), CREATION_TIMESTAMP_DOC.into());
    }
    // The default table convertor's second column.
    if path == "#time(.metadata.creationTimestamp)" {
        return ("date".into(), CREATION_TIMESTAMP_DOC.into());
    }
    match (builtin, col.name.as_str()) {
        (Builtin::ConfigMap, "Data") => ("string".into(), CONFIGMAP_DATA_DOC.into()),
        // Counts are printed as numbers but declared as strings.
        _ if path.starts_with("#count(") || path.starts_with("#int(") => {
            ("string".into(), col.description.clone())
        }
        _ => (col.type_.clone(), col.description.clone()),
    }
}

/// The definition of one printer column of `rt`.
pub fn definition(rt: &ResourceType, col: &Column) -> Value {
    let (type_, description) = match rt.builtin {
        Some(b) if rt.crd_name.is_none() => builtin_declaration(b, col),
        _ if col.description.is_empty() => (
            col.type_.clone(),
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                col.json_path
            ),
        ),
        _ => (col.type_.clone(), col.description.clone()),
    };
    json!({"name": col.name, "type": type_, "format": col.format, "description": description, "priority": col.priority})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, type_: &str, path: &str, description: &str) -> Column {
        Column {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: description.into(),
            priority: 0,
            json_path: path.into(),
        }
    }

    #[test]
    fn custom_resource_columns_default_their_description() {
        let crd = json!({"metadata": {"name": "widgets.g"}, "spec": {"group": "g",
            "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let rt = crate::server::api::resource::types_from_crd(&crd).remove(0);
        let d = definition(&rt, &column("Replicas", "integer", ".spec.replicas", ""));
        assert_eq!(
            d["description"],
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        let d = definition(&rt, &column("Color", "string", ".spec.color", "The colour"));
        assert_eq!(d["description"], "The colour");
    }

    #[test]
    fn builtin_columns_are_declared_as_the_printers_declare_them() {
        let cm = crate::server::api::builtin_types::builtin_types()
            .into_iter()
            .find(|r| r.builtin == Some(Builtin::ConfigMap))
            .expect("configmaps are built in");
        let defs: Vec<Value> = cm.columns.iter().map(|c| definition(&cm, c)).collect();
        assert_eq!(defs[0]["name"], "Data");
        assert_eq!(defs[0]["type"], "string");
        assert_eq!(defs[1]["type"], "string");
        assert_eq!(defs[1]["description"], CREATION_TIMESTAMP_DOC);
    }
}
