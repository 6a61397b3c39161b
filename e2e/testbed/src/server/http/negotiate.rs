//! Response content negotiation: which `Accept` headers a resource request can be answered
//! for, and the 406 otherwise. Answers are JSON (clients that ask for YAML or protobuf of a
//! built-in kind also take JSON); custom resources have no protobuf form, so an `Accept` that
//! allows only protobuf is refused — with the refusal itself encoded in protobuf, as
//! kube-apiserver does.

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::server::api::error::ApiError;
use crate::server::api::resource::ResourceType;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Why a request's `Accept` cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAcceptable {
    /// The client takes protobuf: the Status is sent in protobuf.
    pub as_protobuf: bool,
}

impl NotAcceptable {
    fn error() -> ApiError {
        ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    }
}

impl IntoResponse for NotAcceptable {
    fn into_response(self) -> Response {
        let error = Self::error();
        if !self.as_protobuf {
            return error.into_response();
        }
        (
            StatusCode::NOT_ACCEPTABLE,
            [(header::CONTENT_TYPE, PROTOBUF)],
            status_protobuf(&error),
        )
            .into_response()
    }
}

/// Checks that some media range of `Accept` can be answered for `rt` (no `Accept` takes
/// anything).
pub fn check_accept(rt: &ResourceType, headers: &HeaderMap) -> Result<(), NotAcceptable> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|h| h.to_str().ok()) else {
        return Ok(());
    };
    let ranges: Vec<String> = accept
        .split(',')
        .map(|r| {
            r.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|r| !r.is_empty())
        .collect();
    if ranges.is_empty() {
        return Ok(());
    }
    let servable = |r: &str| match r {
        "*/*" | "application/*" | "application/json" | "application/yaml" => true,
        PROTOBUF => rt.crd_name.is_none(),
        _ => false,
    };
    if ranges.iter().any(|r| servable(r)) {
        return Ok(());
    }
    Err(NotAcceptable {
        as_protobuf: ranges.iter().any(|r| r == PROTOBUF),
    })
}

/// A failure `metav1.Status` in Kubernetes' protobuf envelope: the `k8s\0` magic and a
/// `runtime.Unknown` holding the type (`v1`, `Status`) and the encoded Status.
pub fn status_protobuf(error: &ApiError) -> Vec<u8> {
    let mut list_meta = Vec::new();
    // ListMeta: selfLink, resourceVersion, continue (non-pointer strings are always written).
    for field in 1..=3 {
        put_bytes(&mut list_meta, field, b"");
    }
    let mut status = Vec::new();
    put_bytes(&mut status, 1, &list_meta);
    put_bytes(&mut status, 2, b"Failure");
    put_bytes(&mut status, 3, error.message.as_bytes());
    put_bytes(&mut status, 4, error.reason.as_bytes());
    put_varint_field(&mut status, 6, u64::from(error.code));
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, b"v1");
    put_bytes(&mut type_meta, 2, b"Status");
    let mut unknown = Vec::new();
    put_bytes(&mut unknown, 1, &type_meta);
    put_bytes(&mut unknown, 2, &status);
    put_bytes(&mut unknown, 3, b"");
    put_bytes(&mut unknown, 4, b"");
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown);
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    put_varint(out, field << 3);
    put_varint(out, v);
}

fn put_bytes(out: &mut Vec<u8>, field: u64, bytes: &[u8]) {
    put_varint(out, (field << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use base64::Engine;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_str(value).expect("a valid header"),
        );
        h
    }

    #[test]
    fn accept_ranges_are_negotiated_per_resource() {
        let registry = crate::server::api::registry::Registry::with_builtins();
        let configmaps = registry
            .get("", "v1", "configmaps")
            .expect("configmaps are built in");
        let mut custom = (*configmaps).clone();
        custom.crd_name = Some("widgets.example.test".into());
        assert!(check_accept(&custom, &HeaderMap::new()).is_ok());
        assert!(
            check_accept(
                &custom,
                &accept("application/json;as=Table;v=v1;g=meta.k8s.io")
            )
            .is_ok()
        );
        assert!(check_accept(&custom, &accept("application/vnd.kubernetes.protobuf, */*")).is_ok());
        assert!(check_accept(&configmaps, &accept(PROTOBUF)).is_ok());
        assert_eq!(
            check_accept(&custom, &accept(PROTOBUF)),
            Err(NotAcceptable { as_protobuf: true })
        );
        assert_eq!(
            check_accept(&custom, &accept("application/xml")),
            Err(NotAcceptable { as_protobuf: false })
        );
    }

    #[test]
    fn the_protobuf_status_is_byte_for_byte_kubernetes() {
        // As kube-apiserver v1.36.2 sent it for a protobuf-only Accept on a custom resource.
        let recorded = "azhzAAoMCgJ2MRIGU3RhdHVzEpkBCgYKABIAGgASB0ZhaWx1cmUadG9ubHkgdGhlIGZvbGxvd2luZyBtZWRpYSB0eXBlcyBhcmUgYWNjZXB0ZWQ6IGFwcGxpY2F0aW9uL2pzb24sIGFwcGxpY2F0aW9uL3lhbWwsIGFwcGxpY2F0aW9uL3ZuZC5rdWJlcm5ldGVzLnByb3RvYnVmIg1Ob3RBY2NlcHRhYmxlMJYDGgAiAA==";
        let ours = base64::engine::general_purpose::STANDARD
            .encode(status_protobuf(&NotAcceptable::error()));
        assert_eq!(ours, recorded);
    }
}
