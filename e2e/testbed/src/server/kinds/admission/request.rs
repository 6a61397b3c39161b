//! The `request` and `namespaceObject` variables, as kube-apiserver builds them for admission
//! policies (`CreateAdmissionRequest`, `CreateNamespaceObject`).

use serde_json::{Value, json};

use super::Attributes;

/// The `request` variable: kind, resource, subresource, name, namespace, operation, user,
/// dry run (the object itself is `object`/`oldObject`).
pub fn request(a: &Attributes<'_>) -> Value {
    let rt = a.rt;
    let kind = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let resource = json!({"group": rt.group, "version": rt.version, "resource": rt.plural});
    let user = a.user_info();
    let mut r = json!({
        "uid": a.uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": a.name,
        "namespace": a.namespace,
        "operation": a.operation.as_str(),
        "userInfo": {
            "username": user.name,
            "uid": user.uid,
            "groups": user.groups,
            "extra": user.extra,
        },
        "dryRun": a.dry_run,
    });
    if let Some(sub) = a.sub.filter(|s| !s.is_empty()) {
        r["subResource"] = json!(sub);
        r["requestSubResource"] = json!(sub);
    }
    if let Value::Object(m) = &mut r {
        m.retain(|k, v| !((k == "name" || k == "namespace") && v == ""));
    }
    if let Value::Object(m) = &mut r["userInfo"] {
        m.retain(|_, v| {
            !(v == ""
                || v.as_array().is_some_and(Vec::is_empty)
                || v.as_object().is_some_and(|o| o.is_empty()))
        });
    }
    r
}

/// The `namespaceObject` variable: the request's Namespace without its managed fields.
pub fn namespace_object(namespace: &Value) -> Value {
    let mut ns = namespace.clone();
    if let Some(md) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
    }
    ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::api::builtin_types::builtin_types;
    use crate::server::api::user::UserInfo;
    use crate::server::kinds::admission::Operation;

    #[test]
    fn requests_carry_the_operation_resource_and_user() {
        let types = builtin_types();
        let rt = types.iter().find(|t| t.plural == "configmaps").unwrap();
        let user = UserInfo::service_account("ns", "sa", "u-1");
        let a = Attributes {
            rt,
            operation: Operation::Create,
            namespace: "ns",
            name: "",
            sub: None,
            user: Some(&user),
            dry_run: true,
            uid: "r-1".into(),
        };
        let r = request(&a);
        assert_eq!(r["operation"], "CREATE");
        assert_eq!(r["resource"]["resource"], "configmaps");
        assert_eq!(r["kind"]["kind"], "ConfigMap");
        assert_eq!(r["userInfo"]["username"], "system:serviceaccount:ns:sa");
        assert_eq!(r["dryRun"], true);
        assert!(r.get("name").is_none());
        assert!(r.get("subResource").is_none());
        let ns = namespace_object(&json!({"metadata": {"name": "ns", "managedFields": []}}));
        assert!(ns["metadata"].get("managedFields").is_none());
    }
}
