//! Object metadata helpers: timestamps, UIDs, generated names, name validation.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use crate::server::api::error::{Cause, invalid_value};

/// RFC 3339 time with second precision, as `metav1.Time` serialises.
pub fn now_time() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `generateName` + five random characters from the API server's alphabet.
pub fn generate_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut prefix = prefix.to_string();
    // The API server truncates the prefix so that the result fits 63 characters.
    if prefix.len() > 58 {
        prefix.truncate(58);
    }
    let suffix: String = bytes
        .iter()
        .take(5)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    format!("{prefix}{suffix}")
}

static SUBDOMAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").ok()
});
static LABEL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").ok());

/// Validates a DNS-1123 subdomain name (most kinds).
pub fn check_subdomain(field: &str, name: &str) -> Option<Cause> {
    check_dns_name(
        field,
        name,
        253,
        &SUBDOMAIN,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    )
}

/// Validates a DNS-1123 label name (namespaces).
pub fn check_label(field: &str, name: &str) -> Option<Cause> {
    check_dns_name(
        field,
        name,
        63,
        &LABEL,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    )
}

/// A DNS-1123 name: at most `max` characters matching `pattern` (`format_error` otherwise).
fn check_dns_name(
    field: &str,
    name: &str,
    max: usize,
    pattern: &Option<Regex>,
    format_error: &str,
) -> Option<Cause> {
    let ok = name.len() <= max && pattern.as_ref().is_some_and(|r| r.is_match(name));
    (!ok).then(|| {
        let detail = if name.len() > max {
            format!("must be no more than {max} characters")
        } else {
            format_error.to_string()
        };
        invalid_value(field, &Value::String(name.into()), &detail)
    })
}

/// Validates a name that only has to be a URL path segment (RBAC kinds).
pub fn check_path_segment(field: &str, name: &str) -> Option<Cause> {
    let detail = if name == "." || name == ".." {
        format!("may not be '{name}'")
    } else if let Some(c) = ['/', '%'].into_iter().find(|c| name.contains(*c)) {
        format!("may not contain '{c}'")
    } else {
        return None;
    };
    Some(invalid_value(field, &Value::String(name.into()), &detail))
}

/// Borrow `metadata` as an object, creating it if absent or malformed.
/// `obj` must be a JSON object (request bodies are checked for that on entry).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let slot = &mut obj["metadata"];
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(m) => m,
        _ => unreachable!("metadata was made an object above"),
    }
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

pub fn name_of(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

pub fn namespace_of(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

/// Sets a metadata list, or removes it when empty (Go's `omitempty`).
pub fn set_list(md: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    if items.is_empty() {
        md.remove(key);
    } else {
        md.insert(key.into(), Value::Array(items));
    }
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn labels(obj: &Value) -> Vec<(String, String)> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Human-readable age, like kubectl's `HumanDuration`.
pub fn human_age(since: &str) -> String {
    let Ok(ts) = since.parse::<jiff::Timestamp>() else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - ts.as_second()).max(0);
    human_duration(secs)
}

pub fn human_duration(secs: i64) -> String {
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        if secs % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", secs % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

/// `metav1.OwnerReference` as Go's JSON encoder writes it (struct field order, pointers
/// omitted when unset): how an Invalid value of ownerReferences is quoted in messages.
fn owner_reference_json(r: &Value) -> String {
    let text = |k: &str| Value::String(r[k].as_str().unwrap_or("").to_string()).to_string();
    let mut out = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
        text("apiVersion"),
        text("kind"),
        text("name"),
        text("uid")
    );
    for flag in ["controller", "blockOwnerDeletion"] {
        if let Some(b) = r[flag].as_bool() {
            out.push_str(&format!(",\"{flag}\":{b}"));
        }
    }
    out.push('}');
    out
}

/// `ValidateOwnerReferences`: every reference names an owner completely, no Event owns
/// anything, and at most one reference is the controller.
pub fn check_owner_references(obj: &Value) -> Vec<Cause> {
    const FIELD: &str = "metadata.ownerReferences";
    let Some(refs) = obj["metadata"]["ownerReferences"].as_array() else {
        return Vec::new();
    };
    let invalid = |field: &str, rendered: String, detail: &str| Cause {
        reason: "FieldValueInvalid",
        field: field.to_string(),
        message: format!("Invalid value: {rendered}: {detail}"),
    };
    let mut causes = Vec::new();
    let mut controller: Option<String> = None;
    for r in refs {
        let text = |k: &str| r[k].as_str().unwrap_or("").to_string();
        let api_version = text("apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            causes.push(invalid(
                &format!("{FIELD}.apiVersion"),
                format!("{api_version:?}"),
                "version must not be empty",
            ));
        }
        for key in ["kind", "name", "uid"] {
            if text(key).is_empty() {
                causes.push(invalid(
                    &format!("{FIELD}.{key}"),
                    "\"\"".into(),
                    "must not be empty",
                ));
            }
        }
        if api_version == "v1" && text("kind") == "Event" {
            causes.push(invalid(
                FIELD,
                owner_reference_json(r),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r["controller"] == true {
            let this = format!("{}/{}", text("kind"), text("name"));
            match &controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(owner_reference_json).collect();
                    causes.push(invalid(
                        FIELD,
                        format!("[{}]", all.join(",")),
                        &format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                        ),
                    ));
                }
                None => controller = Some(this),
            }
        }
    }
    causes
}

#[cfg(test)]
mod owner_reference_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn owner_references_are_validated_as_kube_apiserver_does() {
        let missing_uid = json!({"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}]}});
        let causes = check_owner_references(&missing_uid);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "metadata.ownerReferences.uid");
        assert_eq!(causes[0].message, "Invalid value: \"\": must not be empty");

        let two = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "blockOwnerDeletion": false, "controller": true},
        ]}});
        let causes = check_owner_references(&two);
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].message,
            "Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"b\",\"uid\":\"2\",\"controller\":true,\"blockOwnerDeletion\":false}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/b"
        );
        assert!(check_owner_references(&json!({"metadata": {}})).is_empty());
    }
}
