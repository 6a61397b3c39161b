//! Normalisation of answers (the corpus README's two passes and two structural rules):
//! values that differ from run to run become placeholders, numbered across a whole case.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

const TIME_KEYS: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "time",
    "lastTransitionTime",
    "expirationTimestamp",
    "lastUpdateTime",
    "lastHeartbeatTime",
    "lastProbeTime",
];

static RFC3339: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
        .expect("valid regex")
});
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$").expect("valid regex")
});
static HASH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([?&])hash=[0-9A-Fa-f]+").expect("valid regex"));
static RV_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(resource version: |Resource Version: |ResourceVersion in precondition: |ResourceVersion in object meta: |, current: )(\d+)",
    )
    .expect("valid regex")
});
static RV_PARENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(too old resource version: (?:\d+|<rv(?::\d+)?>) \(|the ResourceVersion in the precondition \(|the ResourceVersion in record \()(\d+)(\))",
    )
    .expect("valid regex")
});

/// Which top-level `resourceVersion` of a body is the storage's revision rather than an
/// object's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// An ordinary answer (a list's own resourceVersion is recognised from its shape).
    Plain,
    /// The object of a `BOOKMARK` watch event.
    Bookmark,
}

/// One normaliser per case; bodies are fed in the order the README prescribes.
#[derive(Debug, Default)]
pub struct Normaliser {
    /// (real text, placeholder), longest first.
    namespaces: Vec<(String, String)>,
    uids: Vec<String>,
    uid_numbers: HashMap<String, usize>,
    rv_numbers: HashMap<String, usize>,
    generate_names: Vec<String>,
    /// Indexes of the age columns of the last Table seen (watches of Tables).
    table_age_columns: Option<Vec<usize>>,
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

impl Normaliser {
    /// `namespaces`: (placeholder name such as `ns`, chosen value).
    pub fn new(namespaces: &[(String, String)]) -> Self {
        let mut pairs = Vec::new();
        for (name, value) in namespaces {
            pairs.push((value.clone(), format!("<{name}>")));
            pairs.push((upper_first(value), format!("<{}>", upper_first(name))));
        }
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Self {
            namespaces: pairs,
            ..Self::default()
        }
    }

    /// A `metadata.generateName` sent in a request body.
    pub fn add_generate_name(&mut self, prefix: &str) {
        if !prefix.is_empty() && !self.generate_names.iter().any(|g| g == prefix) {
            self.generate_names.push(prefix.to_string());
        }
    }

    /// Normalises one answer body.
    pub fn body(&mut self, body: &Value, kind: BodyKind) -> Value {
        let storage_rv = kind == BodyKind::Bookmark || is_list(body);
        self.number(body, None, "", storage_rv);
        let mut out = self.rewrite(body, None, "", storage_rv);
        self.ages(&mut out);
        sort_causes(&mut out);
        out
    }

    /// Pass 1: numbers UIDs and resourceVersions in order of first appearance.
    fn number(&mut self, value: &Value, key: Option<&str>, pointer: &str, storage_rv: bool) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for k in keys {
                    let child = format!("{pointer}/{k}");
                    self.number(&map[k], Some(k), &child, storage_rv);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.number(item, key, &format!("{pointer}/{i}"), storage_rv);
                }
            }
            Value::String(s) if !s.is_empty() => match key {
                Some("uid") if !self.uid_numbers.contains_key(s) => {
                    self.uids.push(s.clone());
                    self.uid_numbers.insert(s.clone(), self.uids.len());
                }
                Some("resourceVersion")
                    if !(storage_rv && pointer == "/metadata/resourceVersion") =>
                {
                    let next = self.rv_numbers.len() + 1;
                    self.rv_numbers.entry(s.clone()).or_insert(next);
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// Pass 2: rewrites values by key, and every other string (and key) by the string rules.
    fn rewrite(&self, value: &Value, key: Option<&str>, pointer: &str, storage_rv: bool) -> Value {
        match value {
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    let child = format!("{pointer}/{k}");
                    out.insert(self.text(k), self.rewrite(v, Some(k), &child, storage_rv));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.rewrite(v, key, &format!("{pointer}/{i}"), storage_rv))
                    .collect(),
            ),
            Value::String(s) => Value::String(self.rewrite_string(s, key, pointer, storage_rv)),
            other => other.clone(),
        }
    }

    fn rewrite_string(
        &self,
        s: &str,
        key: Option<&str>,
        pointer: &str,
        storage_rv: bool,
    ) -> String {
        match key {
            Some("uid") if !s.is_empty() => {
                if let Some(n) = self.uid_numbers.get(s) {
                    return format!("<uid:{n}>");
                }
            }
            Some("resourceVersion") if !s.is_empty() => {
                if storage_rv && pointer == "/metadata/resourceVersion" {
                    return "<rv>".into();
                }
                if let Some(n) = self.rv_numbers.get(s) {
                    return format!("<rv:{n}>");
                }
            }
            Some(k) if TIME_KEYS.contains(&k) && RFC3339.is_match(s) => return "<time>".into(),
            Some("continue") if pointer == "/metadata/continue" && !s.is_empty() => {
                return "<continue>".into();
            }
            Some("storageVersionHash") => return "<hash>".into(),
            _ => {}
        }
        self.text(s)
    }

    /// The string rules, for any text: values, object keys, Warning headers, plain bodies.
    pub fn text(&self, s: &str) -> String {
        if JWT.is_match(s) {
            return "<token>".into();
        }
        let mut out = s.to_string();
        for g in &self.generate_names {
            if out.contains(g.as_str()) {
                let re = Regex::new(&format!(
                    "{}[bcdfghjklmnpqrstvwxz2456789]{{5}}",
                    regex::escape(g)
                ));
                if let Ok(re) = re {
                    out = re
                        .replace_all(&out, |_: &regex::Captures| format!("{g}<suffix>"))
                        .into_owned();
                }
            }
        }
        for (uid, n) in self.uids.iter().zip(1..) {
            if out.contains(uid.as_str()) {
                out = out.replace(uid.as_str(), &format!("<uid:{n}>"));
            }
        }
        for (real, placeholder) in &self.namespaces {
            if out.contains(real.as_str()) {
                out = out.replace(real.as_str(), placeholder);
            }
        }
        if out.contains("hash=") {
            out = HASH.replace_all(&out, "${1}hash=<hash>").into_owned();
        }
        let rv = |digits: &str| match self.rv_numbers.get(digits) {
            Some(n) => format!("<rv:{n}>"),
            None => "<rv>".into(),
        };
        out = RV_AFTER
            .replace_all(&out, |c: &regex::Captures| {
                format!("{}{}", &c[1], rv(&c[2]))
            })
            .into_owned();
        out = RV_PARENS
            .replace_all(&out, |c: &regex::Captures| {
                format!("{}{}{}", &c[1], rv(&c[2]), &c[3])
            })
            .into_owned();
        out
    }

    /// Tables: relative ages in `date` or `Age` columns become `<age>`.
    fn ages(&mut self, body: &mut Value) {
        if body.get("kind").and_then(Value::as_str) != Some("Table") {
            return;
        }
        if let Some(defs) = body.get("columnDefinitions").and_then(Value::as_array) {
            let ages = defs
                .iter()
                .enumerate()
                .filter(|(_, d)| {
                    d.get("type").and_then(Value::as_str) == Some("date")
                        || d.get("name").and_then(Value::as_str) == Some("Age")
                })
                .map(|(i, _)| i)
                .collect();
            self.table_age_columns = Some(ages);
        }
        let Some(ages) = &self.table_age_columns else {
            return;
        };
        if let Some(rows) = body.get_mut("rows").and_then(Value::as_array_mut) {
            for row in rows {
                if let Some(cells) = row.get_mut("cells").and_then(Value::as_array_mut) {
                    for &i in ages {
                        if let Some(cell) = cells.get_mut(i)
                            && cell.is_string()
                        {
                            *cell = Value::String("<age>".into());
                        }
                    }
                }
            }
        }
    }
}

/// A list's own resourceVersion is the storage's revision.
fn is_list(body: &Value) -> bool {
    body.get("items").is_some_and(Value::is_array)
        || body.get("rows").is_some_and(Value::is_array)
        || body
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
}

fn cause_text(cause: &Value) -> String {
    let message = cause.get("message").and_then(Value::as_str).unwrap_or("");
    match cause.get("field").and_then(Value::as_str) {
        Some(field) => format!("{field}: {message}"),
        None => message.to_string(),
    }
}

/// Two or more causes of a Status: sorted by (field, message, reason), and the bracketed
/// list at the end of the message rebuilt in that order.
fn sort_causes(body: &mut Value) {
    if body.get("kind").and_then(Value::as_str) != Some("Status") {
        return;
    }
    let Some(causes) = body
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .filter(|c| c.len() >= 2)
        .cloned()
    else {
        return;
    };
    let field = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut sorted = causes.clone();
    sorted.sort_by_key(|c| (field(c, "field"), field(c, "message"), field(c, "reason")));
    let list = |cs: &[Value]| {
        format!(
            "[{}]",
            cs.iter().map(cause_text).collect::<Vec<_>>().join(", ")
        )
    };
    let (before, after) = (list(&causes), list(&sorted));
    if let Some(message) = body.get_mut("message")
        && let Some(text) = message.as_str()
        && let Some(head) = text.strip_suffix(before.as_str())
    {
        *message = Value::String(format!("{head}{after}"));
    }
    if let Some(slot) = body.pointer_mut("/details/causes") {
        *slot = Value::Array(sorted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn normaliser() -> Normaliser {
        Normaliser::new(&[
            ("ns".to_string(), "rabc123a".to_string()),
            ("ns2".to_string(), "rabc123b".to_string()),
        ])
    }

    #[test]
    fn uids_and_resource_versions_are_numbered_in_sorted_key_order_across_bodies() {
        let mut n = normaliser();
        let first = n.body(
            &json!({"metadata": {"uid": "U1", "resourceVersion": "10", "name": "a"}, "apiVersion": "v1"}),
            BodyKind::Plain,
        );
        assert_eq!(first["metadata"]["uid"], "<uid:1>");
        assert_eq!(first["metadata"]["resourceVersion"], "<rv:1>");
        let second = n.body(
            &json!({"metadata": {"uid": "U2", "resourceVersion": "11",
                "ownerReferences": [{"uid": "U1"}]}}),
            BodyKind::Plain,
        );
        assert_eq!(second["metadata"]["ownerReferences"][0]["uid"], "<uid:1>");
        assert_eq!(second["metadata"]["uid"], "<uid:2>");
        assert_eq!(second["metadata"]["resourceVersion"], "<rv:2>");
    }

    #[test]
    fn a_lists_own_resource_version_is_not_numbered() {
        let mut n = normaliser();
        let list = n.body(
            &json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "99"},
                "items": [{"metadata": {"resourceVersion": "5"}}]}),
            BodyKind::Plain,
        );
        assert_eq!(list["metadata"]["resourceVersion"], "<rv>");
        assert_eq!(list["items"][0]["metadata"]["resourceVersion"], "<rv:1>");
        let bookmark = n.body(
            &json!({"kind": "ConfigMap", "metadata": {"resourceVersion": "5"}}),
            BodyKind::Bookmark,
        );
        assert_eq!(bookmark["metadata"]["resourceVersion"], "<rv>");
    }

    #[test]
    fn string_rules_cover_names_uids_tokens_suffixes_hashes_and_messages() {
        let mut n = normaliser();
        n.add_generate_name("w-");
        n.body(
            &json!({"metadata": {"uid": "abc-1", "resourceVersion": "77"}}),
            BodyKind::Plain,
        );
        assert_eq!(n.text("eyJhbGci.eyJzdWIi.sig_-"), "<token>");
        assert_eq!(n.text("w-x7k2b made"), "w-<suffix> made");
        assert_eq!(n.text("owner abc-1 in rabc123a"), "owner <uid:1> in <ns>");
        assert_eq!(n.text("opRabc123b"), "op<Ns2>");
        assert_eq!(
            n.text("/openapi/v3/apis/x?hash=ABCDEF01"),
            "/openapi/v3/apis/x?hash=<hash>"
        );
        assert_eq!(
            n.text("Precondition failed: ResourceVersion in precondition: 77, ResourceVersion in object meta: 78"),
            "Precondition failed: ResourceVersion in precondition: <rv:1>, ResourceVersion in object meta: <rv>"
        );
        assert_eq!(
            n.text("too old resource version: 1 (77)"),
            "too old resource version: <rv> (<rv:1>)"
        );
    }

    #[test]
    fn keyed_values_timestamps_continue_and_hashes() {
        let mut n = normaliser();
        let out = n.body(
            &json!({"metadata": {"continue": "tok", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "eventTime": "2026-01-01T00:00:00.000000Z", "storageVersionHash": "x=",
                "items": []}),
            BodyKind::Plain,
        );
        assert_eq!(out["metadata"]["continue"], "<continue>");
        assert_eq!(out["metadata"]["creationTimestamp"], "<time>");
        assert_eq!(out["eventTime"], "2026-01-01T00:00:00.000000Z");
        assert_eq!(out["storageVersionHash"], "<hash>");
    }

    #[test]
    fn table_ages_follow_the_last_column_definitions() {
        let mut n = normaliser();
        let first = n.body(
            &json!({"kind": "Table", "columnDefinitions": [{"name": "Name", "type": "string"},
                {"name": "Age", "type": "string"}], "rows": [{"cells": ["a", "5s"]}]}),
            BodyKind::Plain,
        );
        assert_eq!(first["rows"][0]["cells"], json!(["a", "<age>"]));
        let later = n.body(
            &json!({"kind": "Table", "columnDefinitions": null, "rows": [{"cells": ["b", "7s"]}]}),
            BodyKind::Plain,
        );
        assert_eq!(later["rows"][0]["cells"], json!(["b", "<age>"]));
    }

    #[test]
    fn several_causes_are_sorted_and_the_message_list_rebuilt() {
        let mut n = normaliser();
        let out = n.body(
            &json!({"kind": "Status", "message": "X is invalid: [spec.b: Required value, spec.a: Invalid value]",
                "details": {"causes": [
                    {"field": "spec.b", "message": "Required value", "reason": "FieldValueRequired"},
                    {"field": "spec.a", "message": "Invalid value", "reason": "FieldValueInvalid"}]}}),
            BodyKind::Plain,
        );
        assert_eq!(
            out["message"],
            "X is invalid: [spec.a: Invalid value, spec.b: Required value]"
        );
        assert_eq!(out["details"]["causes"][0]["field"], "spec.a");
    }
}
