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
    /// Answered as Go's plain-text `404 page not found` instead of a Status: the path is
    /// outside every API prefix the server serves.
    pub plain_text: bool,
    /// `Warning` headers sent with the error (what decoding noticed before it failed).
    pub warnings: Vec<String>,
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            plain_text: false,
            warnings: Vec::new(),
        }
    }

    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }

    /// The 404 of Go's default mux for a path no API handler claims (an unknown API group).
    pub fn page_not_found() -> Self {
        Self {
            plain_text: true,
            ..Self::new(404, "NotFound", "404 page not found")
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
        .with_details(details(name, group, plural))
    }

    /// The 404 of a path no handler serves inside a served API prefix (an unknown resource,
    /// version or subresource): the generic answer with empty details.
    pub fn not_found_path() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(details(name, group, plural))
    }

    /// `409 Conflict` on `plural.group "name"`. Some callers pass a Kind as `plural`: the
    /// delete preconditions name the object by its Kind, as kube-apiserver does.
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        )
        .with_details(details(name, group, plural))
    }

    /// `405` for a verb a resource does not offer (e.g. DELETE of a status subresource).
    pub fn method_not_supported(group: &str, plural: &str, verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                qualified(group, plural)
            ),
        )
        .with_details(details("", group, plural))
    }

    /// A failure kube-apiserver reports without a reason (an error its storage layer did not
    /// classify), e.g. an unparsable resourceVersion: `500` with only a message.
    pub fn unclassified(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
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
        if self.reason.is_empty()
            && let Some(m) = status.as_object_mut()
        {
            // `StatusReasonUnknown` is the empty string, which `omitempty` leaves out.
            m.remove("reason");
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if self.plain_text {
            return (
                code,
                [
                    (
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; charset=utf-8",
                    ),
                    (axum::http::header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                ],
                format!("{}\n", self.message),
            )
                .into_response();
        }
        let body = self.to_status().to_string();
        let mut response = (
            code,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        for w in &self.warnings {
            let escaped = w.replace('"', "\\\"");
            if let Ok(h) = format!("299 - \"{escaped}\"").parse() {
                response
                    .headers_mut()
                    .append(axum::http::header::WARNING, h);
            }
        }
        response
    }
}

/// `metav1.StatusDetails` as serialised: every member is `omitempty`.
pub fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = serde_json::Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", kind)] {
        if !value.is_empty() {
            d.insert(key.into(), Value::String(value.into()));
        }
    }
    Value::Object(d)
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
    let message = format!(
        "{qualified_kind} \"{name}\" is invalid: {}",
        aggregate_message(causes)
    );
    let mut d = details(name, group, kind);
    d["causes"] = causes
        .iter()
        .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
        .collect();
    ApiError::new(422, "Invalid", message).with_details(d)
}

/// The causes as `field.ErrorList.ToAggregate()` prints them: identical errors once, one
/// error bare, several in brackets.
fn aggregate_message(causes: &[Cause]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in causes {
        let part = format!("{}: {}", c.field, c.message);
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        format!("[{}]", parts.join(", "))
    }
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
