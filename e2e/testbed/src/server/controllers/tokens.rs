//! ServiceAccount token Secrets, the legacy way kube-controller-manager fills them: a Secret
//! of type `kubernetes.io/service-account-token` naming an existing ServiceAccount in its
//! `kubernetes.io/service-account.name` annotation gets `data.token`, `data.namespace` and
//! `data.ca.crt` (the CA of the testbed's HTTPS endpoint) and the ServiceAccount's uid
//! annotation. A token Secret whose ServiceAccount does not exist is
//! deleted, and so are a ServiceAccount's token Secrets when it goes.
//!
//! Tokens look like kube's legacy tokens (a JWT naming the Secret), but the signature is 256
//! random bits and the check is that the named Secret holds exactly this token: deleting the
//! Secret or the ServiceAccount revokes it at once.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::server::api::meta;
use crate::server::api::user::UserInfo;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, DeleteOpts, WriteOpts};
use crate::server::kinds::secrets::{NAME_KEY, TOKEN_TYPE};
use crate::server::storage::store::Store;

pub const UID_KEY: &str = "kubernetes.io/service-account.uid";
const SECRETS: &str = "/secrets";
const SERVICE_ACCOUNTS: &str = "/serviceaccounts";
const MANAGER: &str = "kube-controller-manager";
const NS_CLAIM: &str = "kubernetes.io/serviceaccount/namespace";
const SECRET_CLAIM: &str = "kubernetes.io/serviceaccount/secret.name";

fn annotation<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"]["annotations"][key].as_str().unwrap_or("")
}

fn is_token_secret(secret: &Value) -> bool {
    secret["type"] == TOKEN_TYPE
}

/// The ServiceAccount a token Secret names, if it exists (with the uid the Secret expects).
fn service_account_of(store: &Store, secret: &Value) -> Option<Value> {
    let ns = meta::namespace_of(secret);
    let sa = store
        .get(SERVICE_ACCOUNTS, ns, annotation(secret, NAME_KEY))?
        .value();
    let want = annotation(secret, UID_KEY);
    (want.is_empty() || meta::meta_str(&sa, "uid") == Some(want)).then_some(sa)
}

/// A new token for `secret` of `sa`.
fn mint(secret: &Value, sa: &Value) -> String {
    let header = json!({"alg": "RS256", "kid": ""});
    let ns = meta::namespace_of(sa);
    let name = meta::name_of(sa);
    let claims = json!({
        "iss": "kubernetes/serviceaccount",
        NS_CLAIM: ns,
        SECRET_CLAIM: meta::name_of(secret),
        "kubernetes.io/serviceaccount/service-account.name": name,
        "kubernetes.io/serviceaccount/service-account.uid": meta::meta_str(sa, "uid").unwrap_or(""),
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    // uuid v4 draws from the operating system's random source: 2 x 122 random bits.
    let mut signature = uuid::Uuid::new_v4().as_bytes().to_vec();
    signature.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

fn data_missing(secret: &Value, key: &str) -> bool {
    secret["data"][key].as_str().is_none_or(str::is_empty)
}

/// The token controller's reaction to a committed Secret.
pub fn secret_changed(store: &mut Store, secret: &Value) {
    if !is_token_secret(secret) || secret["metadata"]["deletionTimestamp"].is_string() {
        return;
    }
    let ns = meta::namespace_of(secret).to_string();
    let name = meta::name_of(secret).to_string();
    let Some(rt) = store.registry.get("", "v1", "secrets") else {
        return;
    };
    let Some(sa) = service_account_of(store, secret) else {
        let opts = DeleteOpts {
            uid: meta::meta_str(secret, "uid").map(String::from),
            ..DeleteOpts::default()
        };
        if let Err(e) = ops::delete(store, &rt, &ns, &name, &opts) {
            tracing::debug!(secret = %name, error = %e, "cannot delete orphaned token secret");
        }
        return;
    };
    let needs_token = data_missing(secret, "token");
    let needs_ns = data_missing(secret, "namespace");
    let ca = STANDARD.encode(crate::server::api::ca::CA_PEM);
    let needs_ca = secret["data"]["ca.crt"].as_str() != Some(ca.as_str());
    let sa_uid = meta::meta_str(&sa, "uid").unwrap_or("");
    if !needs_token && !needs_ns && !needs_ca && annotation(secret, UID_KEY) == sa_uid {
        return;
    }
    let mut updated = secret.clone();
    if !updated["data"].is_object() {
        updated["data"] = json!({});
    }
    if needs_token {
        updated["data"]["token"] = json!(STANDARD.encode(mint(secret, &sa)));
    }
    if needs_ns {
        updated["data"]["namespace"] = json!(STANDARD.encode(&ns));
    }
    if needs_ca {
        updated["data"]["ca.crt"] = json!(ca);
    }
    let md = meta::metadata_mut(&mut updated);
    if !md.get("annotations").is_some_and(Value::is_object) {
        md.insert("annotations".into(), json!({}));
    }
    updated["metadata"]["annotations"][NAME_KEY] = json!(meta::name_of(&sa));
    updated["metadata"]["annotations"][UID_KEY] = json!(sa_uid);
    let opts = WriteOpts {
        manager: MANAGER.into(),
        ..WriteOpts::default()
    };
    // The update comes back here and finds nothing left to do.
    if let Err(e) = ops::update(
        store,
        &rt,
        Some(&ns),
        &name,
        updated,
        &opts,
        Operation::Update,
    ) {
        tracing::debug!(secret = %name, error = %e, "cannot fill token secret");
    }
}

/// Deletes the token Secrets of a ServiceAccount that was removed.
pub fn service_account_removed(store: &mut Store, sa: &Value) {
    let ns = meta::namespace_of(sa).to_string();
    let name = meta::name_of(sa);
    let uid = meta::meta_str(sa, "uid").unwrap_or("");
    let doomed: Vec<(String, Option<String>)> = store
        .list(SECRETS, Some(&ns), None)
        .map(|s| s.value())
        .filter(|s| {
            is_token_secret(s)
                && annotation(s, NAME_KEY) == name
                && (annotation(s, UID_KEY).is_empty() || annotation(s, UID_KEY) == uid)
        })
        .map(|s| {
            (
                meta::name_of(&s).to_string(),
                meta::meta_str(&s, "uid").map(String::from),
            )
        })
        .collect();
    let Some(rt) = store.registry.get("", "v1", "secrets") else {
        return;
    };
    for (secret, secret_uid) in doomed {
        let opts = DeleteOpts {
            uid: secret_uid,
            ..DeleteOpts::default()
        };
        let _ = ops::delete(store, &rt, &ns, &secret, &opts);
    }
}

/// The (namespace, Secret name) a token claims to come from.
fn claims_of(token: &str) -> Option<(String, String)> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    Some((
        claims[NS_CLAIM].as_str()?.to_string(),
        claims[SECRET_CLAIM].as_str()?.to_string(),
    ))
}

/// Compares without stopping at the first difference (no timing hints about the token).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The ServiceAccount user of a bearer token, if the token is live.
pub fn authenticate(store: &Store, token: &str) -> Option<UserInfo> {
    let (ns, secret_name) = claims_of(token)?;
    let secret = store.get(SECRETS, &ns, &secret_name)?.value();
    if !is_token_secret(&secret) || secret["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    let stored = STANDARD.decode(secret["data"]["token"].as_str()?).ok()?;
    if !same(&stored, token.as_bytes()) {
        return None;
    }
    let sa = service_account_of(store, &secret)?;
    if sa["metadata"]["deletionTimestamp"].is_string() {
        return None;
    }
    Some(UserInfo::service_account(
        &ns,
        meta::name_of(&sa),
        meta::meta_str(&sa, "uid").unwrap_or(""),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_secret_and_differ() {
        let secret = json!({"metadata": {"name": "s", "namespace": "n"}});
        let sa = json!({"metadata": {"name": "a", "namespace": "n", "uid": "u"}});
        let (t1, t2) = (mint(&secret, &sa), mint(&secret, &sa));
        assert_ne!(t1, t2);
        assert_eq!(claims_of(&t1), Some(("n".into(), "s".into())));
        assert_eq!(claims_of("not-a-token"), None);
        assert_eq!(claims_of("a.b.c.d"), None);
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"ab", b"abc"));
    }
}
