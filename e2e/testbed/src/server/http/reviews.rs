//! The review kinds, created and answered at once, never stored: SelfSubjectAccessReview
//! (`kubectl auth can-i`), SelfSubjectRulesReview (`kubectl auth can-i --list`) and
//! SelfSubjectReview (`kubectl auth whoami`).

use serde_json::{Map, Value, json};

use crate::server::api::error::{ApiError, ApiResult, Cause, invalid};
use crate::server::api::meta;
use crate::server::api::resource::{Builtin, ResourceType};
use crate::server::api::user::UserInfo;
use crate::server::http::cluster::ClusterState;
use crate::server::http::rbac::rules::Rule;
use crate::server::http::rbac::{Attributes, Decision, defaults};

/// Answers a review of `rt` posted by `user` (None: the administrator) through `manager`.
pub fn create(
    cluster: &ClusterState,
    user: Option<&UserInfo>,
    rt: &ResourceType,
    body: &Value,
    manager: &str,
) -> ApiResult<Value> {
    if let Some(kind) = body["kind"].as_str().filter(|k| *k != rt.kind) {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    let admin = UserInfo::admin();
    let user = user.unwrap_or(&admin);
    let (metadata, spec, status) = match rt.builtin {
        // The posted review comes back with its status filled in.
        Some(Builtin::SelfSubjectAccessReview) => {
            let spec = without_empty(&body["spec"]);
            let status = access(cluster, user, rt, &spec)?;
            let metadata = json!({"managedFields": [access_managed_entry(&spec, manager, rt)]});
            (metadata, Some(spec), status)
        }
        // A new object: no metadata, an empty spec.
        Some(Builtin::SelfSubjectRulesReview) => (
            json!({}),
            Some(json!({})),
            rules(cluster, user, &body["spec"]),
        ),
        _ => (
            json!({"creationTimestamp": meta::now_time()}),
            None,
            who(user),
        ),
    };
    let mut out = json!({
        "kind": rt.kind,
        "apiVersion": rt.api_version(),
        "metadata": metadata,
    });
    if let Some(spec) = spec {
        out["spec"] = spec;
    }
    out["status"] = status;
    Ok(out)
}

/// A SubjectAccessReview spec as Go serialises it: every string and list is `omitempty`.
fn without_empty(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), without_empty(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// fieldsV1 of a request body's fields, all set by its sender: objects are walked, other
/// values are leaves; the `optional` structs (Go pointers) are owned themselves too (`.`).
pub fn request_fields(v: &Value, optional: &[&[&str]]) -> Value {
    fn walk(v: &Value, path: &mut Vec<String>, optional: &[&[&str]]) -> Value {
        let mut out = Map::new();
        if let Value::Object(m) = v {
            for (k, child) in m {
                path.push(k.clone());
                let node = match child {
                    Value::Object(c) if !c.is_empty() => {
                        let mut n = walk(child, path, optional);
                        if optional.iter().any(|o| o.iter().eq(path.iter())) {
                            n[".".to_string()] = json!({});
                        }
                        n
                    }
                    _ => json!({}),
                };
                out.insert(format!("f:{k}"), node);
                path.pop();
            }
        }
        Value::Object(out)
    }
    walk(v, &mut Vec::new(), optional)
}

/// The optional (pointer) structs of a SubjectAccessReview: ownership of each covers the
/// struct itself, not only its fields.
const OPTIONAL_STRUCTS: [&[&str]; 4] = [
    &["spec", "resourceAttributes"],
    &["spec", "nonResourceAttributes"],
    &["spec", "resourceAttributes", "fieldSelector"],
    &["spec", "resourceAttributes", "labelSelector"],
];

fn access_managed_entry(spec: &Value, manager: &str, rt: &ResourceType) -> Value {
    json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": rt.api_version(),
        "time": meta::now_time(),
        "fieldsType": "FieldsV1",
        "fieldsV1": request_fields(&json!({ "spec": spec }), &OPTIONAL_STRUCTS),
    })
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

fn access(
    cluster: &ClusterState,
    user: &UserInfo,
    rt: &ResourceType,
    spec: &Value,
) -> ApiResult<Value> {
    let (ra, nra) = (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
    let problem = match (ra.is_object(), nra.is_object()) {
        (false, false) => Some((
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (true, true) => Some((
            "spec.nonResourceAttributes",
            "Invalid value: \"object\": cannot be specified in combination with resourceAttributes",
        )),
        _ => None,
    };
    if let Some((field, message)) = problem {
        let cause = Cause {
            reason: "FieldValueInvalid",
            field: field.into(),
            message: message.into(),
        };
        return Err(invalid(&rt.kind, &rt.group, "", &[cause]));
    }
    let a = if ra.is_object() {
        Attributes {
            verb: text(ra, "verb"),
            resource_request: true,
            path: String::new(),
            group: text(ra, "group"),
            version: text(ra, "version"),
            resource: text(ra, "resource"),
            subresource: text(ra, "subresource"),
            namespace: text(ra, "namespace"),
            name: text(ra, "name"),
        }
    } else {
        Attributes {
            verb: text(nra, "verb"),
            path: text(nra, "path"),
            ..Attributes::default()
        }
    };
    let Decision { allowed, reason } = cluster.authorize(user, &a);
    let mut status = json!({"allowed": allowed});
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    Ok(status)
}

/// A list field as kube serialises it: left out when empty.
fn put(m: &mut Map<String, Value>, key: &str, list: &[String]) {
    if !list.is_empty() {
        m.insert(key.into(), json!(list));
    }
}

fn rules(cluster: &ClusterState, user: &UserInfo, spec: &Value) -> Value {
    let all = vec!["*".to_string()];
    let (mut list, errors) = if user.is_superuser() {
        let everything = Rule {
            verbs: all.clone(),
            api_groups: all.clone(),
            resources: all.clone(),
            ..Rule::default()
        };
        let urls = Rule {
            verbs: all.clone(),
            non_resource_urls: all,
            ..Rule::default()
        };
        (vec![everything, urls], Vec::new())
    } else {
        let policy = cluster.rbac.get(&cluster.store());
        policy.rules_for(user, spec["namespace"].as_str().unwrap_or(""))
    };
    list.extend(defaults::rules(user));
    let (mut resource, mut non_resource) = (Vec::new(), Vec::new());
    for r in &list {
        let mut m = Map::new();
        put(&mut m, "verbs", &r.verbs);
        if r.non_resource_urls.is_empty() {
            put(&mut m, "apiGroups", &r.api_groups);
            put(&mut m, "resources", &r.resources);
            put(&mut m, "resourceNames", &r.resource_names);
            resource.push(Value::Object(m));
        } else {
            put(&mut m, "nonResourceURLs", &r.non_resource_urls);
            non_resource.push(Value::Object(m));
        }
    }
    let mut status =
        json!({"resourceRules": resource, "nonResourceRules": non_resource, "incomplete": false});
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}

fn who(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    info["groups"] = json!(user.groups);
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    json!({"userInfo": info})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_reviews_keep_what_go_would_serialise() {
        let spec = without_empty(
            &json!({"resourceAttributes": {"namespace": "n", "verb": "get", "group": "", "resource": "configmaps"}}),
        );
        assert_eq!(
            spec,
            json!({"resourceAttributes": {"namespace": "n", "verb": "get", "resource": "configmaps"}})
        );
        let rt = crate::server::api::builtin_types::builtin_types()
            .into_iter()
            .find(|t| t.builtin == Some(Builtin::SelfSubjectAccessReview));
        let Some(rt) = rt else {
            panic!("no SelfSubjectAccessReview type");
        };
        let entry = access_managed_entry(&spec, "golden", &rt);
        assert_eq!(
            entry["fieldsV1"],
            json!({"f:spec": {"f:resourceAttributes": {".": {}, "f:namespace": {}, "f:resource": {}, "f:verb": {}}}})
        );
    }
}
