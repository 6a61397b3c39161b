//! The JSONPath subset printer columns use, and how a value prints in a table cell.

use serde_json::Value;

/// Evaluates the JSONPath subset printer columns use: `.a.b`, `.a[0]`, `.a[*].b`,
/// `.a[?(@.k=="v")].b`.
pub fn json_path(obj: &Value, path: &str) -> Vec<Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut current = vec![obj.clone()];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            rest = &r[end..];
            if key.is_empty() {
                continue;
            }
            current = current.iter().filter_map(|v| v.get(key).cloned()).collect();
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Vec::new();
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            let arrays: Vec<Vec<Value>> = current
                .iter()
                .filter_map(|v| v.as_array().cloned())
                .collect();
            current = if inner == "*" {
                arrays.into_iter().flatten().collect()
            } else if let Ok(i) = inner.parse::<i64>() {
                arrays
                    .into_iter()
                    .filter_map(|a| {
                        let idx = if i < 0 { a.len() as i64 + i } else { i };
                        usize::try_from(idx).ok().and_then(|i| a.get(i).cloned())
                    })
                    .collect()
            } else if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')'))
            {
                let (lhs, rhs) = match filter.split_once("==") {
                    Some((l, r)) => (l.trim(), Some(r.trim().trim_matches(['"', '\'']))),
                    None => (filter.trim(), None),
                };
                let field_path = lhs.trim_start_matches('@');
                arrays
                    .into_iter()
                    .flatten()
                    .filter(|item| {
                        let got = json_path(item, field_path);
                        match rhs {
                            Some(want) => got.iter().any(|g| cell_text(g) == want),
                            None => !got.is_empty(),
                        }
                    })
                    .collect()
            } else {
                return Vec::new();
            };
        } else {
            return Vec::new();
        }
    }
    current
}

/// A value as a table cell shows it.
pub fn cell_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
