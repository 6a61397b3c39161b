//! Secrets as kube-apiserver decodes and validates them: `data` values must be standard
//! base64 (a 400 at decoding, with Go's message), keys must be config keys, well-known types
//! need their keys, and an `immutable` Secret keeps its data.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use crate::server::api::error::{ApiError, Cause, invalid_value, required};

/// The type of ServiceAccount token Secrets.
pub const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming a token Secret's ServiceAccount.
pub const NAME_KEY: &str = "kubernetes.io/service-account.name";

const KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const KEY_MAX: usize = 253;
/// The most a Secret's data may hold in total (1 MiB).
const MAX_TOTAL: usize = 1024 * 1024;

/// Go's `base64.StdEncoding` error for `s`: the offset of the first byte it cannot take.
fn base64_error_offset(s: &str) -> Option<usize> {
    // Go skips line breaks; the offsets it reports count them.
    let kept: Vec<(usize, u8)> = s
        .bytes()
        .enumerate()
        .filter(|(_, b)| *b != b'\n' && *b != b'\r')
        .collect();
    let clean: Vec<u8> = kept.iter().map(|(_, b)| *b).collect();
    let at = |i: usize| kept.get(i).map_or(s.len(), |(o, _)| *o);
    match STANDARD.decode(&clean) {
        Ok(_) => None,
        Err(
            base64::DecodeError::InvalidByte(i, _) | base64::DecodeError::InvalidLastSymbol(i, _),
        ) => Some(at(i)),
        // A last quantum that is incomplete is reported at its start.
        Err(base64::DecodeError::InvalidLength(n)) => Some(at(n - n % 4)),
        Err(base64::DecodeError::InvalidPadding) => Some(at(clean.len().saturating_sub(1))),
    }
}

/// The decoding check: a `data` value that is not base64 makes the body undecodable.
pub fn check_data_encoding(obj: &Value) -> Result<(), ApiError> {
    for v in obj["data"].as_object().into_iter().flat_map(Map::values) {
        if let Some(offset) = v.as_str().and_then(base64_error_offset) {
            return Err(ApiError::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte {offset}"
            )));
        }
    }
    Ok(())
}

/// kube's `IsConfigMapKey` messages.
pub fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > KEY_MAX {
        errs.push(format!("must be no more than {KEY_MAX} characters"));
    }
    let ok_chars = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c));
    if !ok_chars {
        errs.push(format!(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '{KEY_FMT}')"
        ));
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// `ValidateSecret` (keys and size) and, on updates, `ValidateSecretUpdate`.
pub fn validate(obj: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if let Some(o) = old
        && o["immutable"] == true
    {
        let forbidden = |field: &str| Cause {
            reason: "FieldValueForbidden",
            field: field.into(),
            message: "Forbidden: field is immutable when `immutable` is set".into(),
        };
        if obj["immutable"] != true {
            causes.push(forbidden("immutable"));
        }
        if normalized_data(obj) != normalized_data(o) {
            causes.push(forbidden("data"));
        }
    }
    let mut total = 0;
    for (k, v) in obj["data"].as_object().into_iter().flatten() {
        for e in config_key_errors(k) {
            causes.push(invalid_value(&format!("data[{k}]"), &json!(k), &e));
        }
        total += v.as_str().map_or(0, |s| s.len() / 4 * 3);
    }
    if total > MAX_TOTAL {
        causes.push(Cause {
            reason: "FieldValueTooLong",
            field: "data".into(),
            message: format!("Too long: may not be more than {MAX_TOTAL} bytes"),
        });
    }
    validate_type(obj, causes);
}

/// The keys each well-known Secret type requires.
fn validate_type(obj: &Value, causes: &mut Vec<Cause>) {
    let data = obj["data"].as_object();
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let key = |k: &str| format!("data[{k}]");
    match obj["type"].as_str().unwrap_or("") {
        // The token controller fills the rest; the ServiceAccount's name is the client's.
        TOKEN_TYPE => {
            let named = obj["metadata"]["annotations"][NAME_KEY]
                .as_str()
                .is_some_and(|n| !n.is_empty());
            if !named {
                causes.push(required(&format!("metadata.annotations[{NAME_KEY}]"), ""));
            }
        }
        "kubernetes.io/dockercfg" => docker_config(obj, ".dockercfg", causes),
        "kubernetes.io/dockerconfigjson" => docker_config(obj, ".dockerconfigjson", causes),
        // Either may be empty, but one must be there.
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(required(&key("username"), ""));
            causes.push(required(&key("password"), ""));
        }
        "kubernetes.io/ssh-auth"
            if obj["data"]["ssh-privatekey"]
                .as_str()
                .is_none_or(str::is_empty) =>
        {
            causes.push(required(&key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has(k) {
                    causes.push(required(&key(k), ""));
                }
            }
        }
        _ => {}
    }
}

/// A docker config Secret needs its key, holding a JSON object.
fn docker_config(obj: &Value, k: &str, causes: &mut Vec<Cause>) {
    let field = format!("data[{k}]");
    let Some(encoded) = obj["data"][k].as_str() else {
        causes.push(required(&field, ""));
        return;
    };
    let bytes = STANDARD.decode(encoded).unwrap_or_default();
    let problem = match crate::server::api::go_json::syntax_error(&bytes) {
        Some(e) => Some(e),
        None => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(_)) => None,
            Ok(other) => Some(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                crate::server::api::go_json::type_name(&other)
            )),
            Err(e) => Some(e.to_string()),
        },
    };
    if let Some(e) = problem {
        causes.push(invalid_value(
            &field,
            &json!("<secret contents redacted>"),
            &e,
        ));
    }
}

/// `data` with absent and empty treated alike (Go compares the decoded maps).
fn normalized_data(obj: &Value) -> Map<String, Value> {
    obj["data"].as_object().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_offsets_as_go_reports_them() {
        assert_eq!(base64_error_offset("MQ=="), None);
        assert_eq!(base64_error_offset("not base64!"), Some(3));
        assert_eq!(base64_error_offset("abcde"), Some(4));
        assert_eq!(base64_error_offset("YW\nJj"), None);
        let e = check_data_encoding(&json!({"data": {"a": "not base64!"}}));
        assert_eq!(
            e.map_err(|e| e.message),
            Err(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
                    .to_string()
            )
        );
    }

    #[test]
    fn keys_and_immutability() {
        assert!(config_key_errors("a.b-c_D").is_empty());
        assert_eq!(config_key_errors("bad key").len(), 1);
        assert_eq!(config_key_errors("..x"), ["must not start with '..'"]);
        let old = json!({"immutable": true, "data": {"a": "MQ=="}});
        let mut causes = Vec::new();
        validate(
            &json!({"immutable": true, "data": {"a": "Mg=="}}),
            Some(&old),
            &mut causes,
        );
        let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["data"]);
        let mut causes = Vec::new();
        validate(&old, Some(&old), &mut causes);
        assert!(causes.is_empty());
    }

    fn type_causes(obj: Value) -> Vec<String> {
        let mut causes = Vec::new();
        validate(&obj, None, &mut causes);
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn well_known_types_need_their_keys() {
        assert_eq!(
            type_causes(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}})),
            ["data[tls.key]: Required value"]
        );
        let bad_json = STANDARD.encode("[1]");
        assert_eq!(
            type_causes(
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": bad_json}})
            ),
            [
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
            ]
        );
        assert_eq!(
            type_causes(json!({"type": "kubernetes.io/service-account-token"})),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert!(
            type_causes(json!({"type": "kubernetes.io/basic-auth", "data": {"username": ""}}))
                .is_empty()
        );
    }
}
