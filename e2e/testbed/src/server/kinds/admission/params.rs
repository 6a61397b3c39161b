//! The parameter objects a binding hands its policy (`spec.paramKind` + the binding's
//! `paramRef`), found as kube-apiserver's `CollectParams` finds them: by name or by label
//! selector, in the paramRef's namespace or the request's, with `parameterNotFoundAction`.

use serde_json::Value;

use super::matching::selector_matches;
use crate::server::kinds::view;
use crate::server::storage::store::Store;

/// The params to evaluate the policy with: `[None]` when the policy takes none, an empty list
/// when none were found and the binding allows that.
pub fn collect(
    store: &Store,
    policy_spec: &Value,
    binding_spec: &Value,
    request_namespace: &str,
) -> Result<Vec<Option<Value>>, String> {
    let kind = &policy_spec["paramKind"];
    let pr = &binding_spec["paramRef"];
    if !kind.is_object() || !pr.is_object() {
        return Ok(vec![None]);
    }
    let api_version = kind["apiVersion"].as_str().unwrap_or("");
    let kind_name = kind["kind"].as_str().unwrap_or("");
    let rt = store
        .registry
        .all()
        .find(|rt| rt.api_version() == api_version && rt.kind == kind_name)
        .cloned()
        .ok_or_else(|| format!("paramKind kind `{api_version}, Kind={kind_name}` not known"))?;
    let ref_ns = pr["namespace"].as_str().unwrap_or("");
    let namespace = if rt.namespaced {
        match (ref_ns, request_namespace) {
            ("", "") => {
                return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
            }
            ("", ns) | (ns, _) => ns.to_string(),
        }
    } else if !ref_ns.is_empty() {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    } else {
        String::new()
    };
    let found: Vec<Option<Value>> = match pr["name"].as_str().filter(|n| !n.is_empty()) {
        Some(name) => view::get_view(store, &rt, &namespace, name)
            .ok()
            .map(Some)
            .into_iter()
            .collect(),
        None => {
            let ns = rt.namespaced.then_some(namespace.as_str());
            store
                .list(&rt.table, ns, None)
                .filter(|s| selector_matches(&pr["selector"], &s.labels))
                .map(|s| Some(view::to_view(&rt, s.value())))
                .collect()
        }
    };
    if found.is_empty() && pr["parameterNotFoundAction"] == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found)
}
