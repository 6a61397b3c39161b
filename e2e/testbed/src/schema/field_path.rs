//! apimachinery's `field.Error` constructors, worded as kube-apiserver prints them, and the
//! rendering of values inside those messages (Go's `%q` for strings, Go's `encoding/json` for
//! structures, with its HTML escaping of `<`, `>` and `&`).

use serde_json::Value;

use super::validate::{FieldError, FieldErrorKind};

/// `field.Required`: `Required value` or `Required value: <detail>`.
pub fn required(field: &str, detail: &str) -> FieldError {
    error(
        FieldErrorKind::Required,
        field,
        with_detail("Required value", detail),
    )
}

/// `<path>.type` does not suit a keyword: Required when no type is set, else Invalid.
pub fn type_error(path: &str, ty: &str, detail: &str) -> FieldError {
    let field = format!("{path}.type");
    if ty.is_empty() {
        required(&field, detail)
    } else {
        invalid(&field, &go_quote(ty), detail)
    }
}

/// `field.Forbidden`: `Forbidden: <detail>`.
pub fn forbidden(field: &str, detail: &str) -> FieldError {
    error(
        FieldErrorKind::Forbidden,
        field,
        with_detail("Forbidden", detail),
    )
}

/// `field.Invalid` with a value already rendered (see [`go_value`]).
pub fn invalid(field: &str, rendered: &str, detail: &str) -> FieldError {
    error(
        FieldErrorKind::Invalid,
        field,
        with_detail(&format!("Invalid value: {rendered}"), detail),
    )
}

/// `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`.
pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    error(
        FieldErrorKind::NotSupported,
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            list.join(", ")
        ),
    )
}

fn with_detail(head: &str, detail: &str) -> String {
    if detail.is_empty() {
        head.to_string()
    } else {
        format!("{head}: {detail}")
    }
}

fn error(kind: FieldErrorKind, field: &str, message: String) -> FieldError {
    FieldError {
        kind,
        field: field.to_string(),
        message,
    }
}

/// A value as `field.Invalid` prints it: strings quoted, numbers and booleans bare, `null`
/// for nil, anything else as Go's JSON.
pub fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Null => "null".into(),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        other => go_json(other),
    }
}

/// Go's `%q`: a double-quoted string with Go escapes.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if let Some(escaped) = short_escape(c) {
            out.push_str(escaped);
        } else if (c as u32) < 0x20 || c as u32 == 0x7f {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// The backslash escapes Go's `%q` and `encoding/json` share.
fn short_escape(c: char) -> Option<&'static str> {
    match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        '\t' => Some("\\t"),
        _ => None,
    }
}

/// Go's `json.Marshal` of a value: compact, members in the given order, `<`, `>`, `&`,
/// U+2028 and U+2029 escaped.
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => write_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(k, out);
                out.push(':');
                write_json(v, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        if let Some(escaped) = short_escape(c) {
            out.push_str(escaped);
            continue;
        }
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A Go struct as `json.Marshal` prints it: members in declaration order.
pub fn go_struct(members: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_json_string(k, &mut out);
        out.push(':');
        write_json(v, &mut out);
    }
    out.push('}');
    out
}

/// Sorts errors by their `Error()` text, as `ValidateStructural` does.
pub fn sort_by_text(errors: &mut [FieldError]) {
    errors.sort_by_key(|e| e.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_render_as_go_prints_them() {
        assert_eq!(go_value(&json!("a")), "\"a\"");
        assert_eq!(go_value(&json!(11)), "11");
        assert_eq!(go_value(&json!(false)), "false");
        assert_eq!(go_value(&Value::Null), "null");
        assert_eq!(go_value(&json!(["v1"])), "[\"v1\"]");
        assert_eq!(
            go_json(&json!({"Rule": "a > b"})),
            "{\"Rule\":\"a \\u003e b\"}"
        );
    }

    #[test]
    fn constructors_word_messages_like_apimachinery() {
        assert_eq!(required("a", "").message, "Required value");
        assert_eq!(forbidden("a", "no").message, "Forbidden: no");
        assert_eq!(
            not_supported("s", "Global", &["Cluster", "Namespaced"]).message,
            "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
        );
        assert_eq!(
            invalid("x", "11", "too big").to_string(),
            "x: Invalid value: 11: too big"
        );
    }
}
