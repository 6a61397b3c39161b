//! Events are stored once, in core/v1 form, and served in both groups
//! (`v1` Event and `events.k8s.io/v1` Event), converted as kube-apiserver converts them.

use serde_json::{Map, Value, json};

use crate::server::api::error::{Cause, invalid_value, required};
use crate::server::api::meta;

/// Field names in events.k8s.io/v1 and in core/v1; the conversion runs this table one way
/// or the other.
const FIELDS: &[(&str, &str)] = &[
    ("metadata", "metadata"),
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("reason", "reason"),
    ("type", "type"),
    ("action", "action"),
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn mv(from: &mut Map<String, Value>, to: &mut Map<String, Value>, a: &str, b: &str) {
    if let Some(v) = from.remove(a)
        && !v.is_null()
    {
        to.insert(b.to_string(), v);
    }
}

/// events.k8s.io/v1 -> core/v1 (the stored form).
pub fn to_core(obj: Value) -> Value {
    let Value::Object(mut src) = obj else {
        return obj;
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), "v1".into());
    out.insert("kind".into(), "Event".into());
    for (v1, core) in FIELDS {
        mv(&mut src, &mut out, v1, core);
    }
    // As kube's conversion: the series stays a series (core readers do not see it as
    // lastTimestamp or count, which are the deprecated fields' values).
    core_shape(Value::Object(out))
}

/// The zero value Go writes for a field it always writes.
#[derive(Clone, Copy)]
enum Zero {
    Object,
    Null,
    EmptyString,
}

impl Zero {
    fn value(self) -> Value {
        match self {
            Self::Object => Value::Object(Map::new()),
            Self::Null => Value::Null,
            Self::EmptyString => Value::String(String::new()),
        }
    }
}

/// Fields Go always writes (no `omitempty`, or a struct), with their zero values.
const CORE_ALWAYS: &[(&str, Zero)] = &[
    ("involvedObject", Zero::Object),
    ("source", Zero::Object),
    ("firstTimestamp", Zero::Null),
    ("lastTimestamp", Zero::Null),
    ("eventTime", Zero::Null),
    ("reportingComponent", Zero::EmptyString),
    ("reportingInstance", Zero::EmptyString),
];
const V1_ALWAYS: &[(&str, Zero)] = &[
    ("eventTime", Zero::Null),
    ("regarding", Zero::Object),
    ("deprecatedSource", Zero::Object),
    ("deprecatedFirstTimestamp", Zero::Null),
    ("deprecatedLastTimestamp", Zero::Null),
];
/// `omitempty` strings and numbers of each form, left out when zero.
const CORE_OMITTED: &[&str] = &["reason", "message", "type", "action", "count"];
const V1_OMITTED: &[&str] = &[
    "reason",
    "note",
    "type",
    "action",
    "reportingController",
    "reportingInstance",
    "deprecatedCount",
];

fn shape(obj: Value, always: &[(&str, Zero)], omitted: &[&str]) -> Value {
    let Value::Object(mut m) = obj else {
        return obj;
    };
    for key in omitted {
        if m.get(*key)
            .is_some_and(|v| v.is_null() || *v == "" || *v == 0)
        {
            m.remove(*key);
        }
    }
    for (key, zero) in always {
        if !m.contains_key(*key) {
            m.insert(key.to_string(), zero.value());
        }
    }
    Value::Object(m)
}

/// A core/v1 Event as kube-apiserver serialises it.
pub fn core_shape(obj: Value) -> Value {
    shape(obj, CORE_ALWAYS, CORE_OMITTED)
}

/// core/v1 (stored) -> events.k8s.io/v1.
pub fn to_v1(obj: Value) -> Value {
    let Value::Object(mut src) = obj else {
        return obj;
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), "events.k8s.io/v1".into());
    out.insert("kind".into(), "Event".into());
    for (v1, core) in FIELDS {
        mv(&mut src, &mut out, core, v1);
    }
    shape(Value::Object(out), V1_ALWAYS, V1_OMITTED)
}

/// Field-selector names of events.k8s.io/v1 mapped to the stored (core) names.
pub fn v1_field_to_core(field: &str) -> String {
    if let Some(rest) = field.strip_prefix("regarding.") {
        return format!("involvedObject.{rest}");
    }
    match field {
        "reportingController" => "reportingComponent".into(),
        "deprecatedSource" => "source".into(),
        other => other.into(),
    }
}

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj[key].as_str().unwrap_or("")
}

fn unset(obj: &Value, key: &str) -> bool {
    obj[key].is_null() || obj[key] == ""
}

fn too_long(field: &str, value: &str, limit: usize, causes: &mut Vec<Cause>) {
    if value.len() > limit {
        causes.push(invalid_value(
            field,
            &json!(""),
            &format!("can have at most {limit} characters"),
        ));
    }
}

/// kube's `IsQualifiedName` messages (`prefix/name`, the prefix a DNS subdomain).
fn qualified_name_errors(value: &str) -> Vec<String> {
    const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && n.starts_with(|c: char| c.is_ascii_alphanumeric())
            && n.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    let regex_error = |what: &str| {
        format!(
            "{what} must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{NAME_FMT}')"
        )
    };
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else if let Some(c) = meta::check_subdomain("", prefix) {
                let detail = c.message.splitn(3, ": ").nth(2).unwrap_or("").to_string();
                errs.push(format!("prefix part {detail}"));
            }
            *name
        }
        _ => {
            return vec![format!("a qualified name {}", regex_error("").trim_start())];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    if !name_ok(name) {
        errs.push(regex_error("name part"));
    }
    errs
}

/// kube's Event validation on create, on the core form. `v1_request` for events.k8s.io/v1,
/// which adds the strict checks of new-style events.
pub fn validate(event: &Value, v1_request: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let ns = meta::namespace_of(event);
    let involved_ns = event["involvedObject"]["namespace"].as_str().unwrap_or("");
    let mismatch = || {
        invalid_value(
            "involvedObject.namespace",
            &json!(involved_ns),
            "does not match event.namespace",
        )
    };
    let controller_field = if v1_request {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if unset(event, "eventTime") {
        let ok = if involved_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == involved_ns
        };
        if !ok {
            causes.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(event, "reportingComponent");
        if controller.is_empty() {
            causes.push(required(controller_field, ""));
        }
        for e in qualified_name_errors(controller) {
            causes.push(invalid_value(controller_field, &json!(controller), &e));
        }
        let instance = text(event, "reportingInstance");
        if instance.is_empty() {
            causes.push(required("reportingInstance", ""));
        }
        too_long(
            "reportingInstance",
            instance,
            REPORTING_INSTANCE_LIMIT,
            &mut causes,
        );
        let action = text(event, "action");
        if action.is_empty() {
            causes.push(required("action", ""));
        }
        too_long("action", action, ACTION_LIMIT, &mut causes);
        let reason = text(event, "reason");
        if reason.is_empty() {
            causes.push(required("reason", ""));
        }
        too_long("reason", reason, REASON_LIMIT, &mut causes);
        too_long("message", text(event, "message"), NOTE_LIMIT, &mut causes);
    }
    if !v1_request {
        return causes;
    }
    if unset(event, "eventTime") {
        causes.push(required("eventTime", ""));
    }
    let type_ = text(event, "type");
    if type_ != "Normal" && type_ != "Warning" {
        causes.push(invalid_value(
            "type",
            &json!(""),
            &format!("has invalid value: {type_}"),
        ));
    }
    for key in ["firstTimestamp", "lastTimestamp"] {
        if !unset(event, key) {
            causes.push(invalid_value(key, &json!(""), "needs to be unset"));
        }
    }
    if event["count"].as_i64().is_some_and(|c| c != 0) {
        causes.push(invalid_value("count", &json!(""), "needs to be unset"));
    }
    let source = &event["source"];
    if !unset(source, "component") || !unset(source, "host") {
        causes.push(invalid_value("source", &json!(""), "needs to be unset"));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn v1_event() -> Value {
        json!({
            "metadata": {"name": "e", "namespace": "n"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reportingController": "golden.test/manager",
            "reportingInstance": "m-0",
            "action": "Open",
            "reason": "Opened",
            "regarding": {"kind": "ConfigMap", "namespace": "n", "name": "x"},
            "type": "Normal",
        })
    }

    #[test]
    fn v1_events_need_the_new_fields() {
        assert!(validate(&to_core(v1_event()), true).is_empty());
        let mut e = v1_event();
        e["eventTime"] = Value::Null;
        assert_eq!(
            messages(&validate(&to_core(e), true)),
            ["eventTime: Required value"]
        );
        let mut e = v1_event();
        e["type"] = json!("Loud");
        e["reportingController"] = json!("");
        assert_eq!(
            messages(&validate(&to_core(e), true)),
            [
                "reportingController: Required value",
                "reportingController: Invalid value: \"\": name part must be non-empty",
                "reportingController: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "type: Invalid value: \"\": has invalid value: Loud",
            ]
        );
    }

    #[test]
    fn core_events_check_only_the_namespace() {
        let e = json!({"metadata": {"name": "e", "namespace": "n"}, "involvedObject": {"namespace": "m"}});
        assert_eq!(
            messages(&validate(&e, false)),
            ["involvedObject.namespace: Invalid value: \"m\": does not match event.namespace"]
        );
        let shaped = core_shape(json!({"metadata": {}, "reason": "", "count": 0}));
        assert_eq!(shaped["eventTime"], Value::Null);
        assert_eq!(shaped["reportingComponent"], "");
        assert!(shaped.get("reason").is_none() && shaped.get("count").is_none());
    }

    #[test]
    fn v1_view_leaves_out_empty_strings() {
        let v = to_v1(core_shape(json!({"metadata": {}, "message": "m"})));
        assert_eq!(v["note"], "m");
        assert!(v.get("reportingController").is_none());
        assert_eq!(v["deprecatedSource"], json!({}));
        assert_eq!(v["deprecatedFirstTimestamp"], Value::Null);
    }
}
