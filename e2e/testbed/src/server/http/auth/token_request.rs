//! The TokenRequest subresource (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`),
//! as kube-apiserver answers it: the request is validated (a duration between 10 minutes and
//! 2^32 seconds), the ServiceAccount must exist, audiences default to the API server's, and
//! the answer is the request with the ServiceAccount's identity in its metadata and a bound
//! token in its status. Nothing is stored.

use serde_json::{Map, Value, json};

use super::bound::{self, API_AUDIENCE, Grant};
use crate::server::api::error::{ApiError, ApiResult, Cause, invalid, invalid_value};
use crate::server::api::meta;
use crate::server::storage::store::Store;

const GROUP: &str = "authentication.k8s.io";
const API_VERSION: &str = "authentication.k8s.io/v1";
const KIND: &str = "TokenRequest";
/// kube's defaulted `spec.expirationSeconds` (one hour).
const DEFAULT_SECONDS: i64 = 60 * 60;
const MIN_SECONDS: i64 = 10 * 60;
const MAX_SECONDS: i64 = 1 << 32;

fn check_body(body: &Value) -> ApiResult<()> {
    if let Some(v) = body["apiVersion"].as_str().filter(|v| *v != API_VERSION) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({API_VERSION})"
        )));
    }
    if let Some(k) = body["kind"].as_str().filter(|k| *k != KIND) {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({KIND})"
        )));
    }
    Ok(())
}

/// `ValidateTokenRequest`: the causes of a 422.
fn validate(seconds: i64) -> Vec<Cause> {
    let field = "spec.expirationSeconds";
    let mut causes = Vec::new();
    if seconds < MIN_SECONDS {
        causes.push(invalid_value(
            field,
            &json!(seconds),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_SECONDS {
        causes.push(invalid_value(
            field,
            &json!(seconds),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    causes
}

/// The managedFields entry of the request's own fields (the subresource is `token`).
fn managed_entry(spec: &Value, manager: &str) -> Value {
    // boundObjectRef is the one optional struct of a TokenRequest.
    let optional: [&[&str]; 1] = [&["spec", "boundObjectRef"]];
    let fields = crate::server::http::reviews::request_fields(&json!({ "spec": spec }), &optional);
    json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": API_VERSION,
        "time": meta::now_time(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "subresource": "token",
    })
}

/// Answers a TokenRequest for ServiceAccount `name` in `namespace`.
pub fn create(
    store: &Store,
    namespace: &str,
    name: &str,
    body: &Value,
    manager: &str,
) -> ApiResult<Value> {
    check_body(body)?;
    let mut spec = body["spec"].as_object().cloned().unwrap_or_default();
    let seconds = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot unmarshal {v} into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"
            ))
        })?,
    };
    spec.insert("expirationSeconds".into(), json!(seconds));
    let causes = validate(seconds);
    if !causes.is_empty() {
        return Err(invalid(KIND, GROUP, "", &causes));
    }
    let sa = store
        .get("/serviceaccounts", namespace, name)
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", name))?
        .value();
    let entry = managed_entry(&Value::Object(spec.clone()), manager);
    let audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![API_AUDIENCE.to_string()]);
    spec.insert("audiences".into(), json!(audiences));
    spec.entry("boundObjectRef").or_insert(Value::Null);
    let uid = meta::meta_str(&sa, "uid").unwrap_or_default().to_string();
    let now = bound::now_unix();
    let grant = Grant {
        namespace: namespace.to_string(),
        name: name.to_string(),
        uid: uid.clone(),
        audiences,
        issued_at: now,
        expires_at: now + seconds,
    };
    let token = bound::issue(&grant);
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("uid".into(), json!(uid));
    metadata.insert("creationTimestamp".into(), json!(meta::now_time()));
    metadata.insert("managedFields".into(), json!([entry]));
    Ok(json!({
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": metadata,
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": bound::rfc3339(grant.expires_at)},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let short = validate(60);
        assert_eq!(short.len(), 1);
        assert_eq!(
            short[0].message,
            "Invalid value: 60: may not specify a duration less than 10 minutes"
        );
        assert!(validate(600).is_empty() && validate(MAX_SECONDS).is_empty());
        assert_eq!(validate(MAX_SECONDS + 1).len(), 1);
    }

    fn put(store: &mut Store, plural: &str, obj: Value) {
        let Some(rt) = store.registry.get("", "v1", plural) else {
            panic!("no {plural}");
        };
        let opts = crate::server::kinds::ops::WriteOpts::default();
        let ns = meta::namespace_of(&obj).to_string();
        let created = crate::server::kinds::ops::create(
            store,
            &rt,
            (!ns.is_empty()).then_some(ns.as_str()),
            obj,
            &opts,
            crate::server::kinds::managed::Operation::Update,
        );
        assert!(created.is_ok(), "{created:?}");
    }

    #[test]
    fn issued_tokens_authenticate_as_their_service_account_until_it_goes() {
        let mut store = Store::new(100);
        put(&mut store, "namespaces", json!({"metadata": {"name": "n"}}));
        let sa = json!({"metadata": {"name": "robot", "namespace": "n"}});
        put(&mut store, "serviceaccounts", sa);
        let request = json!({"spec": {"expirationSeconds": 3600}});
        let answer = create(&store, "n", "robot", &request, "m").unwrap_or_default();
        let token = answer["status"]["token"].as_str().unwrap_or_default();
        let user = bound::authenticate(&store, token);
        assert_eq!(
            user.as_ref().map(|u| u.name.as_str()),
            Some("system:serviceaccount:n:robot")
        );
        assert_eq!(
            answer["metadata"]["uid"].as_str(),
            user.map(|u| u.uid).as_deref()
        );
        assert_eq!(answer["spec"]["audiences"], json!([API_AUDIENCE]));
        // A token for another audience is not for the API server.
        let other = json!({"spec": {"audiences": ["baton"]}});
        let answer = create(&store, "n", "robot", &other, "m").unwrap_or_default();
        let token_b = answer["status"]["token"].as_str().unwrap_or_default();
        assert!(bound::authenticate(&store, token_b).is_none());
        assert_eq!(
            create(&store, "n", "ghost", &request, "m").map_err(|e| e.message),
            Err("serviceaccounts \"ghost\" not found".to_string())
        );
        store.remove("/serviceaccounts", "n", "robot");
        assert!(bound::authenticate(&store, token).is_none());
    }

    #[test]
    fn bodies_of_another_kind_are_refused() {
        assert!(check_body(&json!({"kind": "TokenRequest"})).is_ok());
        assert_eq!(
            check_body(&json!({"kind": "Secret"})).map_err(|e| e.code),
            Err(400)
        );
    }
}
