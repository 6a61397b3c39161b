//! Kubernetes-shaped errors: every failure leaves the server as a `metav1.Status` body.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An API error as kube-apiserver reports it (`kind: Status`, `status: Failure`).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// `404 NotFound` for a named object, e.g. `workloads.kueue.x-k8s.io "a" not found`.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    pub fn not_found_path() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
            .with_details(json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}))
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        )
        .with_details(json!({"name": name, "group": group, "kind": plural}))
    }

    pub fn modified(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type}"
            ),
        )
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// The `metav1.Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = self.to_status().to_string();
        (
            code,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }
}

/// `plural.group`, or just `plural` for the core group.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

/// One field error in a 422 response.
#[derive(Debug, Clone)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, ...
    pub reason: &'static str,
    pub field: String,
    /// The full message, e.g. `Invalid value: -1: must be greater than or equal to 0`.
    pub message: String,
}

/// `422 Invalid`: `Kind.group "name" is invalid: field: message, ...`.
pub fn invalid(kind: &str, group: &str, name: &str, causes: &[Cause]) -> ApiError {
    let qualified_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let parts: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    let joined = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let message = format!("{qualified_kind} \"{name}\" is invalid: {joined}");
    ApiError::new(422, "Invalid", message).with_details(json!({
        "name": name,
        "group": group,
        "kind": kind,
        "causes": causes.iter().map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field})).collect::<Vec<_>>(),
    }))
}

/// Shorthand for one `Required value` cause.
pub fn required(field: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    Cause {
        reason: "FieldValueRequired",
        field: field.into(),
        message,
    }
}

/// Shorthand for one `Invalid value` cause.
pub fn invalid_value(field: &str, value: &Value, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field: field.into(),
        message: format!("Invalid value: {}: {detail}", render_value(value)),
    }
}

/// Values in messages as the Go API server prints them: strings quoted, numbers bare.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        Value::Object(_) => "\"object\"".into(),
        Value::Array(_) => "\"array\"".into(),
        other => other.to_string(),
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
