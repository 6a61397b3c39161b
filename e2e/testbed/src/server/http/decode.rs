//! Decoding of create/update request bodies as kube-apiserver does it, with its answers to
//! bodies it cannot take: 415 for a media type it does not read, 400 for bodies that are not
//! an object of the resource's kind (Go's JSON messages, the data summarised as the server
//! summarises it).

use axum::http::{HeaderMap, header};
use serde_json::Value;

use crate::server::api::error::{ApiError, ApiResult};
use crate::server::api::resource::ResourceType;
use crate::server::{api::go_json, http::protobuf};

/// The media types a create or update body may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    Protobuf,
}

const ACCEPTED: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// The 415 of a body in a media type the server does not decode.
pub fn unsupported_media_type() -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {ACCEPTED}"
        ),
    )
}

/// The body's media type from `Content-Type` (parameters such as `charset` ignored). A body
/// without a `Content-Type` is read as JSON (kube-apiserver would answer 415; clients that
/// send bodies always name their type).
pub fn body_format(headers: &HeaderMap) -> ApiResult<BodyFormat> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(BodyFormat::Json);
    };
    let media = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/json" => Ok(BodyFormat::Json),
        "application/yaml" => Ok(BodyFormat::Yaml),
        "application/vnd.kubernetes.protobuf" => Ok(BodyFormat::Protobuf),
        _ => Err(unsupported_media_type()),
    }
}

/// Go's `json: cannot unmarshal` target when the version and kind are read from a body.
const TYPE_META_STRUCT: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// The object in a create or update body for `rt`.
pub fn decode_object(rt: &ResourceType, headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
    match body_format(headers)? {
        BodyFormat::Protobuf if rt.crd_name.is_some() => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        )),
        BodyFormat::Protobuf if !protobuf::is_protobuf(body) => Err(unrecognized(
            rt,
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
            body,
        )),
        BodyFormat::Protobuf => protobuf::decode(body),
        BodyFormat::Json => decode_json(rt, body),
        BodyFormat::Yaml => {
            let text = std::str::from_utf8(body).map_err(|e| {
                unrecognized(rt, &format!("error converting YAML to JSON: {e}"), body)
            })?;
            let v: Value = serde_saphyr::from_str(text).map_err(|e| {
                unrecognized(
                    rt,
                    &format!("error converting YAML to JSON: yaml: {e}"),
                    body,
                )
            })?;
            check_object(rt, v, body)
        }
    }
}

fn decode_json(rt: &ResourceType, body: &[u8]) -> ApiResult<Value> {
    if let Some(e) = go_json::syntax_error(body) {
        return Err(version_kind_error(rt, &e, body));
    }
    let v: Value =
        serde_json::from_slice(body).map_err(|e| version_kind_error(rt, &e.to_string(), body))?;
    check_object(rt, v, body)
}

/// What the version/kind sniffing and then the typed decoding of a parsed body reject.
fn check_object(rt: &ResourceType, v: Value, body: &[u8]) -> ApiResult<Value> {
    let Value::Object(m) = &v else {
        let e = format!(
            "json: cannot unmarshal {} into Go value of type {TYPE_META_STRUCT}",
            go_json::type_name(&v)
        );
        return Err(version_kind_error(rt, &e, body));
    };
    for field in ["apiVersion", "kind"] {
        if let Some(x) = m.get(field).filter(|x| !x.is_string() && !x.is_null()) {
            let e = format!(
                "json: cannot unmarshal {} into Go struct field .{field} of type string",
                go_json::type_name(x)
            );
            return Err(version_kind_error(rt, &e, body));
        }
    }
    // Custom objects are decoded as unstructured data, which needs its kind.
    if rt.crd_name.is_some()
        && m.get("kind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        let raw = String::from_utf8_lossy(body);
        return Err(unrecognized(
            rt,
            &format!("Object 'Kind' is missing in '{raw}'"),
            body,
        ));
    }
    if rt.builtin.is_some()
        && let Some(e) = object_meta_type_error(rt, &m["metadata"])
    {
        let kind = m.get("kind").and_then(Value::as_str).unwrap_or(&rt.kind);
        let version = m
            .get("apiVersion")
            .and_then(Value::as_str)
            .map(|v| v.rsplit('/').next().unwrap_or(v))
            .unwrap_or(&rt.version);
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: {e}",
            rt.kind
        )));
    }
    Ok(v)
}

/// The first `metadata` member whose JSON type does not fit `metav1.ObjectMeta`, as Go's
/// decoder words it (built-in kinds are decoded into their Go structs).
fn object_meta_type_error(rt: &ResourceType, metadata: &Value) -> Option<String> {
    let mismatch = |value: &Value, field: &str, go_type: &str| {
        format!(
            "json: cannot unmarshal {} into Go struct field {field} of type {go_type}",
            go_json::type_name(value)
        )
    };
    let m = match metadata {
        Value::Null => return None,
        Value::Object(m) => m,
        other => {
            return Some(mismatch(
                other,
                &format!("{}.metadata", rt.kind),
                "v1.ObjectMeta",
            ));
        }
    };
    for (key, value) in m {
        let field = format!("ObjectMeta.metadata.{key}");
        let fits = |want: fn(&Value) -> bool| value.is_null() || want(value);
        let error = match key.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
                (!fits(Value::is_string)).then(|| mismatch(value, &field, "string"))
            }
            "generation" | "deletionGracePeriodSeconds" => {
                (!fits(Value::is_i64)).then(|| mismatch(value, &field, "int64"))
            }
            "labels" | "annotations" => match value {
                Value::Object(entries) => entries
                    .values()
                    .find(|x| !x.is_string() && !x.is_null())
                    .map(|x| mismatch(x, &field, "string")),
                Value::Null => None,
                other => Some(mismatch(other, &field, "map[string]string")),
            },
            "finalizers" => match value {
                Value::Array(items) => items
                    .iter()
                    .find(|x| !x.is_string() && !x.is_null())
                    .map(|x| mismatch(x, &field, "string")),
                Value::Null => None,
                other => Some(mismatch(other, &field, "[]string")),
            },
            _ => None,
        };
        if error.is_some() {
            return error;
        }
    }
    None
}

/// `couldn't get version/kind`: the body could not even be sniffed for its kind.
fn version_kind_error(rt: &ResourceType, error: &str, body: &[u8]) -> ApiError {
    unrecognized(
        rt,
        &format!("couldn't get version/kind; json parse error: {error}"),
        body,
    )
}

fn unrecognized(rt: &ResourceType, error: &str, body: &[u8]) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {error} ({})",
        rt.kind,
        summarize(body)
    ))
}

/// The body as kube-apiserver quotes it in decode errors: JSON objects as text, anything
/// else in hex, both cut at 30 bytes.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_quote_objects_and_hex_the_rest() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(br#"{"a": 1, "#), r#"{"a": 1, "#);
        assert_eq!(summarize(b"[1, 2]"), "5b312c20325d");
        assert_eq!(summarize(b"xyz"), "78797a");
        let long = format!("{{\"k\": \"{}\"}}", "x".repeat(40));
        assert_eq!(summarize(long.as_bytes()), format!("{} ...", &long[..30]));
    }

    #[test]
    fn metadata_types_are_checked_as_go_decodes_them() {
        let rt = crate::server::api::registry::Registry::with_builtins()
            .get("", "v1", "configmaps")
            .expect("configmaps are built in");
        let check = |m: Value| object_meta_type_error(&rt, &m);
        assert_eq!(
            check(serde_json::json!({"name": 5})).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"
            )
        );
        assert_eq!(
            check(serde_json::json!({"labels": {"a": true}})).as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"
            )
        );
        assert_eq!(
            check(serde_json::json!({"name": "a", "labels": {"a": "b"}})),
            None
        );
    }
}
