//! Events are stored once, in core/v1 form, and served in both groups
//! (`v1` Event and `events.k8s.io/v1` Event), converted as kube-apiserver converts them.

use serde_json::{Map, Value};

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
    mv(&mut src, &mut out, "metadata", "metadata");
    mv(&mut src, &mut out, "regarding", "involvedObject");
    mv(&mut src, &mut out, "related", "related");
    mv(&mut src, &mut out, "note", "message");
    mv(&mut src, &mut out, "reason", "reason");
    mv(&mut src, &mut out, "type", "type");
    mv(&mut src, &mut out, "action", "action");
    mv(&mut src, &mut out, "eventTime", "eventTime");
    mv(&mut src, &mut out, "series", "series");
    mv(
        &mut src,
        &mut out,
        "reportingController",
        "reportingComponent",
    );
    mv(&mut src, &mut out, "reportingInstance", "reportingInstance");
    mv(&mut src, &mut out, "deprecatedSource", "source");
    mv(
        &mut src,
        &mut out,
        "deprecatedFirstTimestamp",
        "firstTimestamp",
    );
    mv(
        &mut src,
        &mut out,
        "deprecatedLastTimestamp",
        "lastTimestamp",
    );
    mv(&mut src, &mut out, "deprecatedCount", "count");
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
    mv(&mut src, &mut out, "metadata", "metadata");
    mv(&mut src, &mut out, "involvedObject", "regarding");
    mv(&mut src, &mut out, "related", "related");
    mv(&mut src, &mut out, "message", "note");
    mv(&mut src, &mut out, "reason", "reason");
    mv(&mut src, &mut out, "type", "type");
    mv(&mut src, &mut out, "action", "action");
    mv(&mut src, &mut out, "eventTime", "eventTime");
    mv(&mut src, &mut out, "series", "series");
    mv(
        &mut src,
        &mut out,
        "reportingComponent",
        "reportingController",
    );
    mv(&mut src, &mut out, "reportingInstance", "reportingInstance");
    mv(&mut src, &mut out, "source", "deprecatedSource");
    mv(
        &mut src,
        &mut out,
        "firstTimestamp",
        "deprecatedFirstTimestamp",
    );
    mv(
        &mut src,
        &mut out,
        "lastTimestamp",
        "deprecatedLastTimestamp",
    );
    mv(&mut src, &mut out, "count", "deprecatedCount");
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
