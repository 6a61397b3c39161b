//! Continue tokens as kube-apiserver's storage writes them: unpadded URL-safe base64 of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"}`, the key relative to the list's
//! prefix (`name` in a namespace, `namespace/name` across namespaces). Bad tokens fail with
//! the storage's messages, including Go's JSON syntax errors (see `go_json`).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use thiserror::Error;

/// Why a token is not valid; the text follows `invalid continue token: `.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("continue key is not valid{0}")]
pub struct InvalidToken(String);

/// A decoded token: the list's revision and the key the next page starts after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub rv: u64,
    pub namespace: String,
    pub name: String,
}

/// Encodes a token for a list in `namespace` (None: across namespaces) that stopped at
/// the object `(ns, name)`.
pub fn encode(rv: u64, namespace: Option<&str>, ns: &str, name: &str) -> String {
    let key = match namespace {
        Some(_) => name.to_string(),
        None if ns.is_empty() => name.to_string(),
        None => format!("{ns}/{name}"),
    };
    let v = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{key}\u{0}")});
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Decodes a token for a list in `namespace` (None: across namespaces).
pub fn decode(token: &str, namespace: Option<&str>) -> Result<Token, InvalidToken> {
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            _ => token.len().saturating_sub(1),
        };
        InvalidToken(format!(": illegal base64 data at input byte {at}"))
    })?;
    if let Some(msg) = crate::server::api::go_json::syntax_error(&bytes) {
        return Err(InvalidToken(format!(": {msg}")));
    }
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let version = v["v"].as_str().unwrap_or_default();
    if version != "meta.k8s.io/v1" {
        return Err(InvalidToken(format!(
            ": server does not recognize this encoded version {version}"
        )));
    }
    let rv = v["rv"].as_u64().unwrap_or(0);
    if rv == 0 {
        return Err(InvalidToken(
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into(),
        ));
    }
    let start = v["start"].as_str().unwrap_or_default();
    if start.is_empty() {
        return Err(InvalidToken(
            ": encoded start key empty (version meta.k8s.io/v1)".into(),
        ));
    }
    let key = start.trim_end_matches('\u{0}');
    if key.split('/').any(|p| p == ".." || p == ".") {
        return Err(InvalidToken(format!(": {start}")));
    }
    let (ns, name) = match (namespace, key.split_once('/')) {
        (Some(ns), _) => (ns.to_string(), key.to_string()),
        (None, Some((ns, name))) => (ns.to_string(), name.to_string()),
        (None, None) => (String::new(), key.to_string()),
    };
    Ok(Token {
        rv,
        namespace: ns,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = encode(42, Some("ns"), "ns", "b");
        assert_eq!(
            decode(&t, Some("ns")).unwrap(),
            Token {
                rv: 42,
                namespace: "ns".into(),
                name: "b".into()
            }
        );
        let t = encode(7, None, "ns2", "a");
        assert_eq!(decode(&t, None).unwrap().namespace, "ns2");
        assert!(!t.contains('='), "unpadded");
    }

    #[test]
    fn invalid_tokens_fail_as_go_does() {
        // base64 of "not-a-token".
        assert_eq!(
            decode("bm90LWEtdG9rZW4", None).unwrap_err().to_string(),
            "continue key is not valid: invalid character 'o' in literal null (expecting 'u')"
        );
        assert_eq!(
            decode("!!", None).unwrap_err().to_string(),
            "continue key is not valid: illegal base64 data at input byte 0"
        );
        let no_rv = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","start":"a"}"#);
        assert!(
            decode(&no_rv, None)
                .unwrap_err()
                .0
                .contains("start resourceVersion")
        );
        let other = URL_SAFE_NO_PAD.encode(r#"{"v":"x"}"#);
        assert!(
            decode(&other, None)
                .unwrap_err()
                .0
                .ends_with("encoded version x")
        );
    }
}
