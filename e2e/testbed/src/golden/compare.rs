//! Comparing a normalised answer with the recording, as the step's `compare` says.

use serde_json::Value;

use super::case::{Compare, Response};

/// What the testbed answered, normalised.
#[derive(Debug, Clone, Default)]
pub struct Actual {
    pub status: u16,
    pub content_type: Option<String>,
    pub warnings: Vec<String>,
    pub body: Option<Value>,
    pub body_text: Option<String>,
    pub body_base64: Option<String>,
    pub events: Option<Vec<Value>>,
}

/// At most this many differences are reported per step.
const MAX_DIFFERENCES: usize = 8;

/// Differences between the recording and the answer; empty when they match.
pub fn differences(expected: &Response, compare: &Compare, actual: &Actual) -> Vec<String> {
    let mut out = Vec::new();
    if expected.status != actual.status {
        out.push(format!(
            "status: expected {}, got {}",
            expected.status, actual.status
        ));
    }
    for header in &compare.headers {
        match header.as_str() {
            "Warning" if expected.headers.warning != actual.warnings => out.push(format!(
                "Warning headers: expected {:?}, got {:?}",
                expected.headers.warning, actual.warnings
            )),
            "Content-Type" if expected.headers.content_type != actual.content_type => {
                out.push(format!(
                    "Content-Type: expected {:?}, got {:?}",
                    expected.headers.content_type, actual.content_type
                ))
            }
            _ => {}
        }
    }
    if compare.events.as_deref() == Some("exact") {
        let want = events(expected.events.as_deref(), compare.optional_bookmarks);
        match &actual.events {
            Some(got) => {
                let got = events(Some(got), compare.optional_bookmarks);
                let mut got = Value::Array(got);
                prepare(&mut got, compare);
                let mut want = Value::Array(want);
                order_managed_fields(&mut want);
                order_managed_fields(&mut got);
                diff("", &want, &got, &mut out);
            }
            None if expected.events.is_some() => out.push("expected watch events, got none".into()),
            None => {}
        }
        if expected.events.is_none() {
            compare_body(expected, compare, actual, &mut out);
        }
    } else if compare.body_exact() {
        compare_body(expected, compare, actual, &mut out);
    }
    out.truncate(MAX_DIFFERENCES);
    out
}

fn compare_body(expected: &Response, compare: &Compare, actual: &Actual, out: &mut Vec<String>) {
    if let Some(want) = &expected.body {
        match &actual.body {
            Some(got) => {
                let mut got = got.clone();
                prepare(&mut got, compare);
                let mut want = want.clone();
                order_managed_fields(&mut want);
                order_managed_fields(&mut got);
                for (pointer, prefix) in &compare.prefix {
                    let starts = matches!(got.pointer(pointer), Some(Value::String(s)) if s.starts_with(prefix.as_str()));
                    if starts && let Some(slot) = got.pointer_mut(pointer) {
                        *slot = Value::String(prefix.clone());
                    }
                }
                diff("", &want, &got, out);
            }
            None => out.push(format!(
                "body: expected JSON, got {}",
                actual
                    .body_text
                    .as_deref()
                    .map(|t| format!("text {t:?}"))
                    .unwrap_or_else(|| "nothing".into())
            )),
        }
    } else if let Some(want) = &expected.body_text {
        if actual.body_text.as_deref() != Some(want.as_str()) {
            out.push(format!(
                "body text: expected {want:?}, got {:?}",
                actual
                    .body_text
                    .as_deref()
                    .or(actual.body.as_ref().map(|_| "<json>"))
            ));
        }
    } else if let Some(want) = &expected.body_base64
        && actual.body_base64.as_deref() != Some(want.as_str())
    {
        out.push(format!(
            "binary body: expected {want}, got {:?}",
            actual.body_base64
        ));
    }
}

/// Drops optional bookmarks (those without the initial-events-end annotation).
fn events(list: Option<&[Value]>, optional_bookmarks: bool) -> Vec<Value> {
    list.unwrap_or_default()
        .iter()
        .filter(|e| {
            !optional_bookmarks
                || e.get("type").and_then(Value::as_str) != Some("BOOKMARK")
                || e.pointer("/object/metadata/annotations/k8s.io~1initial-events-end")
                    .is_some()
        })
        .cloned()
        .collect()
}

/// Puts the entries of every `managedFields` list in one order: by operation (as
/// kube-apiserver sorts them), then by content. kube-apiserver orders entries of one
/// operation by the Unix second of their `time`, which normalisation hides, so their order
/// depends on whether two writes fell within one second — on a real server as on the
/// testbed. Everything else about the entries is still compared exactly.
pub fn order_managed_fields(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "managedFields"
                    && let Value::Array(entries) = child
                {
                    entries.sort_by_cached_key(|e| {
                        let operation = e.get("operation").and_then(Value::as_str).unwrap_or("");
                        (operation.to_string(), canonical(e))
                    });
                }
                order_managed_fields(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(order_managed_fields),
        _ => {}
    }
}

/// Applies `ignore` and `unordered` to an answer.
fn prepare(value: &mut Value, compare: &Compare) {
    for pointer in &compare.ignore {
        for_each_at(value, &tokens(pointer), &mut |v| {
            *v = Value::String("<ignored>".into())
        });
    }
    for pointer in &compare.unordered {
        for_each_at(value, &tokens(pointer), &mut |v| {
            if let Value::Array(items) = v {
                items.sort_by_cached_key(canonical);
            }
        });
    }
}

fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Runs `f` on every value at the pointer; a `*` segment matches every member.
fn for_each_at(value: &mut Value, tokens: &[String], f: &mut dyn FnMut(&mut Value)) {
    let Some((first, rest)) = tokens.split_first() else {
        f(value);
        return;
    };
    match value {
        Value::Object(map) if first == "*" => {
            for child in map.values_mut() {
                for_each_at(child, rest, f);
            }
        }
        Value::Array(items) if first == "*" => {
            for child in items {
                for_each_at(child, rest, f);
            }
        }
        Value::Object(map) => {
            if let Some(child) = map.get_mut(first.as_str()) {
                for_each_at(child, rest, f);
            }
        }
        Value::Array(items) => {
            if let Some(child) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                for_each_at(child, rest, f);
            }
        }
        _ => {}
    }
}

/// Compact JSON with sorted keys (how the recorder sorted unordered arrays).
pub fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        let mut end = 300;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    } else {
        text
    }
}

/// Lists where two values differ, by JSON pointer.
pub fn diff(pointer: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    if out.len() >= MAX_DIFFERENCES {
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let child = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                match g.get(k) {
                    Some(gv) => diff(&child, wv, gv, out),
                    None => out.push(format!("{child}: missing (expected {})", short(wv))),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    let child = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(format!("{child}: unexpected {}", short(gv)));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(&format!("{pointer}/{i}"), wv, gv, out);
            }
        }
        (Value::Array(w), Value::Array(g)) => out.push(format!(
            "{pointer}: expected {} items {}, got {} items {}",
            w.len(),
            short(want),
            g.len(),
            short(got)
        )),
        (Value::Number(w), Value::Number(g)) if w.as_f64() == g.as_f64() => {}
        _ if want == got => {}
        _ => out.push(format!(
            "{}: expected {}, got {}",
            if pointer.is_empty() { "/" } else { pointer },
            short(want),
            short(got)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::golden::case::ResponseHeaders;
    use serde_json::json;

    fn recorded(status: u16, body: Value) -> Response {
        Response {
            status,
            headers: ResponseHeaders::default(),
            body: Some(body),
            body_text: None,
            body_base64: None,
            body_omitted: false,
            events: None,
            projection: None,
        }
    }

    fn exact() -> Compare {
        Compare {
            body: Some("exact".into()),
            headers: vec!["Warning".into()],
            ..Compare::default()
        }
    }

    #[test]
    fn equal_answers_match_and_any_change_is_reported() {
        let want = recorded(200, json!({"a": 1, "b": [1, 2]}));
        let same = Actual {
            status: 200,
            body: Some(json!({"b": [1, 2], "a": 1.0})),
            ..Actual::default()
        };
        assert!(differences(&want, &exact(), &same).is_empty());
        let other = Actual {
            status: 201,
            body: Some(json!({"a": 2, "b": [1], "c": null})),
            warnings: vec!["299 - x".into()],
            ..Actual::default()
        };
        let d = differences(&want, &exact(), &other);
        assert_eq!(d.len(), 5, "{d:?}");
    }

    #[test]
    fn ignored_members_must_exist_and_unordered_arrays_are_sorted() {
        let want = recorded(
            200,
            json!({"x": {"id": "<ignored>"}, "l": [{"n": "a"}, {"n": "b"}]}),
        );
        let compare = Compare {
            ignore: vec!["/x/id".into()],
            unordered: vec!["/l".into()],
            ..exact()
        };
        let got = Actual {
            status: 200,
            body: Some(json!({"x": {"id": "123"}, "l": [{"n": "b"}, {"n": "a"}]})),
            ..Actual::default()
        };
        assert!(differences(&want, &compare, &got).is_empty());
        let missing = Actual {
            status: 200,
            body: Some(json!({"x": {}, "l": [{"n": "a"}, {"n": "b"}]})),
            ..Actual::default()
        };
        assert_eq!(differences(&want, &compare, &missing).len(), 1);
    }

    #[test]
    fn managed_fields_entries_of_one_operation_may_come_in_either_order() {
        let entry = |m: &str, op: &str| json!({"manager": m, "operation": op, "time": "<time>"});
        let want = recorded(
            200,
            json!({"metadata": {"managedFields": [entry("b", "Update"), entry("a", "Update")]}}),
        );
        let swapped = Actual {
            status: 200,
            body: Some(
                json!({"metadata": {"managedFields": [entry("a", "Update"), entry("b", "Update")]}}),
            ),
            ..Actual::default()
        };
        assert!(differences(&want, &exact(), &swapped).is_empty());
        let other = Actual {
            status: 200,
            body: Some(
                json!({"metadata": {"managedFields": [entry("a", "Apply"), entry("b", "Update")]}}),
            ),
            ..Actual::default()
        };
        assert!(!differences(&want, &exact(), &other).is_empty());
    }

    #[test]
    fn optional_bookmarks_are_dropped_from_both_sides() {
        let mut want = recorded(200, json!(null));
        want.body = None;
        want.events = Some(vec![json!({"type": "ADDED", "object": {"a": 1}})]);
        let compare = Compare {
            events: Some("exact".into()),
            optional_bookmarks: true,
            ..Compare::default()
        };
        let got = Actual {
            status: 200,
            events: Some(vec![
                json!({"type": "ADDED", "object": {"a": 1}}),
                json!({"type": "BOOKMARK", "object": {"metadata": {}}}),
            ]),
            ..Actual::default()
        };
        assert!(differences(&want, &compare, &got).is_empty());
    }
}
