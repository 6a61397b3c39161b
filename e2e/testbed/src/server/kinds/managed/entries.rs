//! `metadata.managedFields` entries: decoding, identity, order and encoding.

use serde_json::{Value, json};

use super::fieldpath::{FieldSet, from_fields_v1, to_fields_v1};
use crate::server::api::meta;

/// One managedFields entry. An empty `time` means the entry carries none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl Entry {
    pub fn new(manager: &str, operation: &str, api_version: &str, sub: Option<&str>) -> Self {
        Self {
            manager: manager.into(),
            operation: operation.into(),
            api_version: api_version.into(),
            time: String::new(),
            subresource: sub.map(String::from),
            fields: FieldSet::new(),
        }
    }

    /// Whether `self` and `other` are the same manager: appliers are one entry whatever
    /// apiVersion they applied with, updaters one per apiVersion.
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == "Apply" || self.api_version == other.api_version)
    }

    /// The manager as conflict messages name it: `"alice"`, `"golden" using v1`.
    pub fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// The entries of an object, leniently (what the server stored itself).
pub fn entries(obj: &Value) -> Vec<Entry> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| entry_from(e, e["operation"].as_str().unwrap_or("Update")))
        .collect()
}

/// One `managedFields` item as an entry; absent strings read as empty.
fn entry_from(e: &Value, operation: &str) -> Entry {
    Entry {
        manager: e["manager"].as_str().unwrap_or("").into(),
        operation: operation.into(),
        api_version: e["apiVersion"].as_str().unwrap_or("").into(),
        time: e["time"].as_str().unwrap_or("").into(),
        subresource: e["subresource"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(String::from),
        fields: from_fields_v1(&e["fieldsV1"]),
    }
}

/// The entries a client sent, if they are valid (kube-apiserver ignores invalid ones).
pub fn decode_strict(list: &Value) -> Option<Vec<Entry>> {
    let arr = list.as_array()?;
    let mut out = Vec::new();
    for e in arr {
        let op = e["operation"].as_str()?;
        if op != "Apply" && op != "Update" {
            return None;
        }
        if e["apiVersion"].as_str().is_none_or(str::is_empty) || e["fieldsType"] != "FieldsV1" {
            return None;
        }
        out.push(entry_from(e, op));
    }
    Some(out)
}

/// A request's `managedFields: [{}]`: the client asks to drop every entry.
pub fn is_reset(list: &Value) -> bool {
    matches!(list.as_array().map(Vec::as_slice), Some([one]) if one.as_object().is_some_and(|m| m.is_empty()))
}

/// kube-apiserver's order: operation, time in seconds (none first), manager, apiVersion,
/// subresource.
pub fn sort(list: &mut [Entry]) {
    fn seconds(t: &str) -> &str {
        t.get(..19).unwrap_or(t)
    }
    list.sort_by(|a, b| {
        (
            &a.operation,
            seconds(&a.time),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                seconds(&b.time),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
}

/// Writes the entries (in kube-apiserver's order; empty ones dropped) into the object.
pub fn set_entries(obj: &mut Value, mut list: Vec<Entry>) {
    list.retain(|e| !e.fields.is_empty());
    sort(&mut list);
    let arr: Vec<Value> = list
        .into_iter()
        .map(|e| {
            let mut m = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if !e.time.is_empty() {
                m["time"] = Value::String(e.time);
            }
            if let Some(s) = e.subresource {
                m["subresource"] = Value::String(s);
            }
            m
        })
        .collect();
    let md = meta::metadata_mut(obj);
    if arr.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert("managedFields".into(), Value::Array(arr));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_sort_appliers_first_then_untimed_then_by_manager() {
        let mut a = Entry::new("zed", "Update", "v1", None);
        a.time = "2026-01-01T00:00:00Z".into();
        let mut b = Entry::new("alice", "Apply", "v1", None);
        b.time = "2026-01-01T00:00:00Z".into();
        let c = Entry::new("bob", "Apply", "v1", None);
        let mut list = vec![a.clone(), b.clone(), c.clone()];
        sort(&mut list);
        assert_eq!(list, vec![c, b, a]);
        assert!(is_reset(&json!([{}])));
        assert!(!is_reset(&json!([])));
        assert!(decode_strict(&json!([{}])).is_none());
    }

    #[test]
    fn printed_managers_name_version_and_subresource_of_updaters() {
        let e = Entry::new("golden", "Update", "g/v1", Some("status"));
        assert_eq!(
            e.printed(),
            r#""golden" with subresource "status" using g/v1"#
        );
        assert_eq!(
            Entry::new("alice", "Apply", "g/v1", None).printed(),
            r#""alice""#
        );
    }
}
