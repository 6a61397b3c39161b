//! Defaulting and validation of RBAC objects as kube-apiserver does them, so that a chart
//! whose Roles or bindings a real cluster would reject is rejected here too.

use serde_json::{Value, json};

use crate::server::api::error::{Cause, required};
use crate::server::api::resource::Builtin;

const GROUP: &str = "rbac.authorization.k8s.io";

fn not_supported(field: String, value: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    Cause {
        reason: "FieldValueNotSupported",
        field,
        message: format!(
            "Unsupported value: {value:?}: supported values: {}",
            list.join(", ")
        ),
    }
}

fn invalid(field: String, rendered: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field,
        message: format!("Invalid value: {rendered}: {detail}"),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// Admission of the four RBAC kinds (`old` on updates).
pub fn admit(kind: Builtin, obj: &mut Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if matches!(kind, Builtin::Role | Builtin::ClusterRole) {
        empty_rules_are_null(obj);
    }
    match kind {
        Builtin::Role => check_rules(obj, true, causes),
        Builtin::ClusterRole => check_rules(obj, false, causes),
        Builtin::RoleBinding => check_binding(obj, old, true, causes),
        Builtin::ClusterRoleBinding => check_binding(obj, old, false, causes),
        _ => {}
    }
}

/// An empty rule list is stored as none at all (kube-apiserver's storage encoding keeps no
/// empty lists), and `rules` has no `omitempty`: it reads back as `null`.
fn empty_rules_are_null(obj: &mut Value) {
    if obj["rules"].as_array().is_some_and(Vec::is_empty) {
        obj["rules"] = Value::Null;
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn check_rules(obj: &Value, namespaced: bool, causes: &mut Vec<Cause>) {
    for (i, rule) in obj["rules"].as_array().into_iter().flatten().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        if strings(&rule["verbs"]).is_empty() {
            causes.push(required(
                &path("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = strings(&rule["nonResourceURLs"]);
        if !urls.is_empty() {
            let rendered = format!(
                "[]string{{{}}}",
                urls.iter()
                    .map(|u| format!("{u:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if namespaced {
                causes.push(invalid(
                    path("nonResourceURLs"),
                    &rendered,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            let has_resources = ["apiGroups", "resources", "resourceNames"]
                .iter()
                .any(|k| !strings(&rule[*k]).is_empty());
            if has_resources {
                causes.push(invalid(
                    path("nonResourceURLs"),
                    &rendered,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule["apiGroups"].as_array().is_none_or(Vec::is_empty) {
            causes.push(required(
                &path("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if strings(&rule["resources"]).is_empty() {
            causes.push(required(
                &path("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

fn role_ref_text(r: &Value) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        str_of(r, "apiGroup"),
        str_of(r, "kind"),
        str_of(r, "name")
    )
}

fn check_binding(obj: &mut Value, old: Option<&Value>, namespaced: bool, causes: &mut Vec<Cause>) {
    // rbac/v1 defaulting: the role's group, and the group of User and Group subjects.
    if obj["roleRef"].is_object() && str_of(&obj["roleRef"], "apiGroup").is_empty() {
        obj["roleRef"]["apiGroup"] = json!(GROUP);
    }
    if let Some(subjects) = obj["subjects"].as_array_mut() {
        for s in subjects.iter_mut() {
            let kind = str_of(s, "kind");
            if (kind == "User" || kind == "Group") && str_of(s, "apiGroup").is_empty() {
                s["apiGroup"] = json!(GROUP);
            }
        }
    }
    let r = &obj["roleRef"];
    if str_of(r, "apiGroup") != GROUP {
        causes.push(not_supported(
            "roleRef.apiGroup".into(),
            str_of(r, "apiGroup"),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&str_of(r, "kind")) {
        causes.push(not_supported(
            "roleRef.kind".into(),
            str_of(r, "kind"),
            kinds,
        ));
    }
    if str_of(r, "name").is_empty() {
        causes.push(required("roleRef.name", ""));
    }
    for (i, s) in obj["subjects"].as_array().into_iter().flatten().enumerate() {
        check_subject(s, namespaced, &format!("subjects[{i}]"), causes);
    }
    if let Some(o) = old
        && o["roleRef"] != obj["roleRef"]
    {
        causes.push(invalid(
            "roleRef".into(),
            &role_ref_text(&obj["roleRef"]),
            "cannot change roleRef",
        ));
    }
}

fn check_subject(s: &Value, namespaced: bool, path: &str, causes: &mut Vec<Cause>) {
    let field = |f: &str| format!("{path}.{f}");
    if str_of(s, "name").is_empty() {
        causes.push(required(&field("name"), ""));
    }
    match str_of(s, "kind") {
        "ServiceAccount" => {
            if !str_of(s, "apiGroup").is_empty() {
                causes.push(not_supported(
                    field("apiGroup"),
                    str_of(s, "apiGroup"),
                    &[""],
                ));
            }
            if !namespaced && str_of(s, "namespace").is_empty() {
                causes.push(required(&field("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if str_of(s, "apiGroup") != GROUP {
                causes.push(not_supported(
                    field("apiGroup"),
                    str_of(s, "apiGroup"),
                    &[GROUP],
                ));
            }
        }
        other => causes.push(not_supported(
            field("kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn causes_of(kind: Builtin, mut obj: Value, old: Option<&Value>) -> Vec<String> {
        let mut causes = Vec::new();
        admit(kind, &mut obj, old, &mut causes);
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn rules_and_bindings() {
        let role = json!({"rules": [{"verbs": [], "resources": ["x"]}, {"verbs": ["get"], "nonResourceURLs": ["/m"]}]});
        assert_eq!(
            causes_of(Builtin::Role, role, None),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/m\"}: namespaced rules cannot apply to non-resource URLs",
            ]
        );
        let ok = json!({"roleRef": {"kind": "ClusterRole", "name": "r"}, "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]});
        assert!(causes_of(Builtin::ClusterRoleBinding, ok.clone(), None).is_empty());
        let mut changed = ok.clone();
        changed["roleRef"]["name"] = json!("other");
        let mut old = ok.clone();
        old["roleRef"]["apiGroup"] = json!(GROUP);
        assert_eq!(
            causes_of(Builtin::ClusterRoleBinding, changed, Some(&old)),
            [
                "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"other\"}: cannot change roleRef"
            ]
        );
        let mut empty = json!({"rules": []});
        admit(Builtin::ClusterRole, &mut empty, None, &mut Vec::new());
        assert_eq!(empty, json!({"rules": null}));
        let bad = json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "s"}, {"kind": "Robot", "name": "r"}]});
        assert_eq!(
            causes_of(Builtin::ClusterRoleBinding, bad, None),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
    }
}
