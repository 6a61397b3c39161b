//! `meta.k8s.io/v1` Table responses (what `kubectl get` prints), from printer columns.

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use crate::server::api::meta;
use crate::server::api::resource::ResourceType;
use crate::server::api::table_columns;
use crate::server::http::json_path::{cell_text, json_path};
use crate::server::http::route::Params;

/// How objects are rendered, from the Accept header's first media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    Full,
    Table,
    /// `as=PartialObjectMetadata` / `as=PartialObjectMetadataList` (metadata-only clients).
    Metadata,
}

pub fn render_mode(headers: &HeaderMap) -> Render {
    let first = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .and_then(|a| a.split(',').next().map(str::to_string))
        .unwrap_or_default();
    if first.contains("as=Table") {
        Render::Table
    } else if first.contains("as=PartialObjectMetadata") {
        Render::Metadata
    } else {
        Render::Full
    }
}

/// The Table version the client asked for: the first `as=Table` media type of its Accept
/// header decides between `meta.k8s.io/v1` and `meta.k8s.io/v1beta1`.
pub fn api_version(headers: &HeaderMap) -> &'static str {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let beta = accept
        .split(',')
        .find(|m| m.contains("as=Table"))
        .is_some_and(|m| m.split(';').any(|p| p.trim() == "v=v1beta1"));
    if beta {
        "meta.k8s.io/v1beta1"
    } else {
        "meta.k8s.io/v1"
    }
}

/// A Table of one object (`kubectl get <name>`).
pub fn object_table(rt: &ResourceType, obj: &Value, params: &Params, headers: &HeaderMap) -> Value {
    table(
        rt,
        std::slice::from_ref(obj),
        params,
        None,
        api_version(headers),
    )
}

/// The `PartialObjectMetadata` form of an object.
pub fn partial(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
}

/// One cell, typed as the column says.
fn cell(obj: &Value, col: &crate::server::api::resource::Column) -> Value {
    let path = col.json_path.as_str();
    if let Some(p) = path
        .strip_prefix("#count(")
        .and_then(|p| p.strip_suffix(')'))
    {
        let n = json_path(obj, p).first().map_or(0, |v| match v {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        });
        return json!(n);
    }
    if let Some(v) = crate::server::http::table_cells::cell(obj, path) {
        return v;
    }
    if let Some(p) = path
        .strip_prefix("#bool(")
        .and_then(|p| p.strip_suffix(')'))
    {
        return json!(
            json_path(obj, p)
                .first()
                .and_then(Value::as_bool)
                .unwrap_or(false)
        );
    }
    if let Some(p) = path.strip_prefix("#int(").and_then(|p| p.strip_suffix(')')) {
        return json!(
            json_path(obj, p)
                .first()
                .and_then(Value::as_i64)
                .unwrap_or(0)
        );
    }
    if let Some(p) = path.strip_prefix("#or(").and_then(|p| p.strip_suffix(')')) {
        return json!(
            json_path(obj, p)
                .first()
                .map(cell_text)
                .unwrap_or_else(|| "N/A".into())
        );
    }
    if let Some(p) = path
        .strip_prefix("#time(")
        .and_then(|p| p.strip_suffix(')'))
    {
        return json!(json_path(obj, p).first().map(cell_text).unwrap_or_default());
    }
    if path == "#eventage()" {
        // kube's printer: a series' last observation, else the last (or first) time.
        let t = obj["series"]["lastObservedTime"]
            .as_str()
            .or_else(|| obj["lastTimestamp"].as_str())
            .or_else(|| obj["firstTimestamp"].as_str())
            .or_else(|| obj["eventTime"].as_str())
            .or_else(|| obj["metadata"]["creationTimestamp"].as_str())
            .unwrap_or("");
        return json!(meta::human_age(t));
    }
    if path == "#eventobject()" {
        let io = &obj["involvedObject"];
        return json!(format!(
            "{}/{}",
            io["kind"].as_str().unwrap_or("").to_lowercase(),
            io["name"].as_str().unwrap_or("")
        ));
    }
    let values = json_path(obj, path);
    if values.is_empty() {
        return Value::Null;
    }
    if col.type_ == "date" {
        return json!(meta::human_age(&cell_text(&values[0])));
    }
    if values.len() == 1 {
        return match (&values[0], col.type_.as_str()) {
            (Value::Number(_), "integer" | "number") | (Value::Bool(_), "boolean") => {
                values[0].clone()
            }
            (v, _) => json!(cell_text(v)),
        };
    }
    json!(values.iter().map(cell_text).collect::<Vec<_>>().join(","))
}

/// A Table of `objs` (already in the served form). Core events are rendered from the core form.
/// `api_version` is `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`; the rows' metadata objects
/// are of the same version.
pub fn table(
    rt: &ResourceType,
    objs: &[Value],
    params: &Params,
    list_meta: Option<&Value>,
    api_version: &str,
) -> Value {
    let event_v1 = rt.builtin == Some(crate::server::api::resource::Builtin::EventV1);
    // Events print their name only in wide output, last (as kube-apiserver's event table).
    let is_event = matches!(
        rt.builtin,
        Some(
            crate::server::api::resource::Builtin::Event
                | crate::server::api::resource::Builtin::EventV1
        )
    );
    let name_def = table_columns::name_column(if is_event { 1 } else { 0 });
    let mut defs = if is_event {
        Vec::new()
    } else {
        vec![name_def.clone()]
    };
    for c in &rt.columns {
        defs.push(table_columns::definition(rt, c));
    }
    if is_event {
        defs.push(name_def);
    }
    let include = params
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    let rows: Vec<Value> = objs
        .iter()
        .map(|obj| {
            let core = if event_v1 { crate::server::kinds::events::to_core(obj.clone()) } else { obj.clone() };
            let mut cells = if is_event { Vec::new() } else { vec![json!(meta::name_of(obj))] };
            cells.extend(rt.columns.iter().map(|c| cell(&core, c)));
            if is_event {
                cells.push(json!(meta::name_of(obj)));
            }
            let object = match include {
                "None" => Value::Null,
                "Object" => obj.clone(),
                _ => json!({"kind": "PartialObjectMetadata", "apiVersion": api_version, "metadata": obj["metadata"]}),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut metadata = list_meta.cloned().unwrap_or_else(|| json!({}));
    if metadata.get("resourceVersion").is_none()
        && let Some(rv) = objs
            .first()
            .and_then(|o| o["metadata"]["resourceVersion"].as_str())
    {
        metadata["resourceVersion"] = json!(rv);
    }
    json!({"kind": "Table", "apiVersion": api_version, "metadata": metadata, "columnDefinitions": defs, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths() {
        let obj =
            json!({"spec": {"a": 1, "l": [{"type": "X", "s": "T"}, {"type": "Y", "s": "F"}]}});
        assert_eq!(json_path(&obj, ".spec.a"), vec![json!(1)]);
        assert_eq!(json_path(&obj, ".spec.l[1].s"), vec![json!("F")]);
        assert_eq!(
            json_path(&obj, ".spec.l[*].type"),
            vec![json!("X"), json!("Y")]
        );
        assert_eq!(
            json_path(&obj, r#".spec.l[?(@.type=="Y")].s"#),
            vec![json!("F")]
        );
        assert!(json_path(&obj, ".spec.missing").is_empty());
    }
}
