//! The review kinds, created and answered at once, never stored: SelfSubjectAccessReview
//! (`kubectl auth can-i`), SelfSubjectRulesReview (`kubectl auth can-i --list`) and
//! SelfSubjectReview (`kubectl auth whoami`).

use serde_json::{Map, Value, json};

use super::auth::UserInfo;
use super::cluster::ClusterState;
use super::error::{ApiError, ApiResult, Cause, invalid};
use super::rbac::rules::Rule;
use super::rbac::{self, Attributes, Decision, defaults};
use super::resource::{Builtin, ResourceType};

/// Answers a review of `rt` posted by `user` (None: the administrator).
pub fn create(
    cluster: &ClusterState,
    user: Option<&UserInfo>,
    rt: &ResourceType,
    body: &Value,
) -> ApiResult<Value> {
    if let Some(kind) = body["kind"].as_str().filter(|k| *k != rt.kind) {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    let admin = UserInfo::admin();
    let user = user.unwrap_or(&admin);
    let status = match rt.builtin {
        Some(Builtin::SelfSubjectAccessReview) => access(cluster, user, rt, &body["spec"])?,
        Some(Builtin::SelfSubjectRulesReview) => rules(cluster, user, &body["spec"]),
        _ => who(user),
    };
    let mut out = json!({
        "kind": rt.kind,
        "apiVersion": rt.api_version(),
        "metadata": {"creationTimestamp": null},
        "status": status,
    });
    if !body["spec"].is_null() {
        out["spec"] = body["spec"].clone();
    }
    Ok(out)
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
    let Decision { allowed, reason } = rbac::authorize(cluster, user, &a);
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
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    json!({"userInfo": info})
}
