//! Bound ServiceAccount tokens, the kind the TokenRequest API (`POST
//! serviceaccounts/<name>/token`) issues: JWTs with kube's claims (audiences, expiry, the
//! ServiceAccount's namespace, name and uid, a `jti`).
//!
//! The testbed signs nothing: the signature part is 256 random bits remembered per `jti`
//! in this process, and a token authenticates while it is unexpired, its audiences include
//! the API server's, and its ServiceAccount still exists with the same uid (deleting the
//! ServiceAccount revokes its tokens, as in kube-apiserver).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::UserInfo;
use crate::server::api::meta;
use crate::server::storage::store::Store;

/// The audience of the API server itself (kube-apiserver's default `--api-audiences`).
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc";
const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const KUBE_CLAIM: &str = "kubernetes.io";
/// The `extra` key naming the credential, `JTI=<jti>` for bound tokens.
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
const SERVICE_ACCOUNTS: &str = "/serviceaccounts";

/// What a token was issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub audiences: Vec<String>,
    /// Unix seconds.
    pub issued_at: i64,
    pub expires_at: i64,
}

/// Signatures of the tokens issued in this process, by `jti`, with their expiry.
type Issued = HashMap<String, (Vec<u8>, i64)>;
static ISSUED: LazyLock<Mutex<Issued>> = LazyLock::new(|| Mutex::new(HashMap::new()));

pub fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// RFC 3339 (seconds) of a Unix time, as `expirationTimestamp` is written.
pub fn rfc3339(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

fn random_bytes() -> Vec<u8> {
    // uuid v4 draws from the operating system's random source: 2 x 122 random bits.
    let mut out = uuid::Uuid::new_v4().as_bytes().to_vec();
    out.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

fn claims_of(g: &Grant, jti: &str) -> Value {
    json!({
        "aud": g.audiences,
        "exp": g.expires_at,
        "iat": g.issued_at,
        "iss": ISSUER,
        "jti": jti,
        KUBE_CLAIM: {
            "namespace": g.namespace,
            "serviceaccount": {"name": g.name, "uid": g.uid},
        },
        "nbf": g.issued_at,
        "sub": format!("system:serviceaccount:{}:{}", g.namespace, g.name),
    })
}

/// Issues a token for `grant`.
pub fn issue(grant: &Grant) -> String {
    let jti = uuid::Uuid::new_v4().to_string();
    let header = json!({"alg": "RS256", "kid": ""});
    let signature = random_bytes();
    let token = format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims_of(grant, &jti).to_string()),
        URL_SAFE_NO_PAD.encode(&signature)
    );
    let mut issued = ISSUED.lock().unwrap_or_else(|e| e.into_inner());
    let now = now_unix();
    issued.retain(|_, (_, exp)| *exp > now);
    issued.insert(jti, (signature, grant.expires_at));
    token
}

/// The claims of a token this process issued, if its signature is the one remembered.
fn verified_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    let issued = ISSUED.lock().unwrap_or_else(|e| e.into_inner());
    let (expected, _) = issued.get(claims["jti"].as_str()?)?;
    crate::server::controllers::tokens::same(expected, &signature).then_some(claims)
}

/// Whether a token looks like a bound token (so legacy Secret tokens are not looked up here).
pub fn is_bound(token: &str) -> bool {
    token
        .split('.')
        .nth(1)
        .and_then(|p| URL_SAFE_NO_PAD.decode(p).ok())
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|c| c.get(KUBE_CLAIM).is_some())
}

/// The ServiceAccount user of a live bound token.
pub fn authenticate(store: &Store, token: &str) -> Option<UserInfo> {
    let claims = verified_claims(token)?;
    if claims["exp"].as_i64()? <= now_unix() {
        return None;
    }
    let for_api = claims["aud"]
        .as_array()?
        .iter()
        .any(|a| a.as_str() == Some(API_AUDIENCE));
    if !for_api {
        return None;
    }
    let ns = claims[KUBE_CLAIM]["namespace"].as_str()?;
    let sa = &claims[KUBE_CLAIM]["serviceaccount"];
    let (name, uid) = (sa["name"].as_str()?, sa["uid"].as_str()?);
    let live = store.get(SERVICE_ACCOUNTS, ns, name)?.value();
    if meta::meta_str(&live, "uid") != Some(uid)
        || live["metadata"]["deletionTimestamp"].is_string()
    {
        return None;
    }
    let mut user = UserInfo::service_account(ns, name, uid);
    user.extra.insert(
        CREDENTIAL_ID.into(),
        vec![format!("JTI={}", claims["jti"].as_str()?)],
    );
    Some(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(expires_at: i64) -> Grant {
        Grant {
            namespace: "n".into(),
            name: "robot".into(),
            uid: "u".into(),
            audiences: vec![API_AUDIENCE.into()],
            issued_at: now_unix(),
            expires_at,
        }
    }

    #[test]
    fn issued_tokens_verify_and_forged_ones_do_not() {
        let token = issue(&grant(now_unix() + 3600));
        assert!(token.starts_with("eyJ") && is_bound(&token));
        let claims = verified_claims(&token).unwrap_or_default();
        assert_eq!(claims["sub"], "system:serviceaccount:n:robot");
        assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], "u");
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode([0u8; 32]);
        parts[2] = &forged;
        assert_eq!(verified_claims(&parts.join(".")), None);
        assert!(!is_bound("not-a-token"));
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_600), "2026-01-01T00:00:00Z");
    }
}
