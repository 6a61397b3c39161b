//! Events are stored once, in core/v1 form, and served in both groups
//! (`v1` Event and `events.k8s.io/v1` Event), converted as kube-apiserver converts them.

use serde_json::{Map, Value};

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
    if !out.contains_key("involvedObject") {
        out.insert("involvedObject".into(), Value::Object(Map::new()));
    }
    // A series' last observation is what core readers see as the last time.
    if !out.contains_key("lastTimestamp")
        && let Some(t) = out
            .get("series")
            .and_then(|s| s.get("lastObservedTime"))
            .and_then(Value::as_str)
    {
        let t = truncate_micro(t);
        out.insert("lastTimestamp".into(), Value::String(t));
    }
    if let Some(n) = out.get("series").and_then(|s| s.get("count")).cloned() {
        out.entry("count").or_insert(n);
    }
    Value::Object(out)
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
    Value::Object(out)
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

fn truncate_micro(t: &str) -> String {
    match t.find('.') {
        Some(dot) => format!("{}Z", &t[..dot]),
        None => t.to_string(),
    }
}
