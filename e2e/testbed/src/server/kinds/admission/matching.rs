//! Which requests a policy or binding applies to: `matchConstraints` / `matchResources`
//! (resource rules with operations, groups, versions, resources and subresources, scope,
//! resource names, exclusions, the `Equivalent` match policy) and the namespace and object
//! label selectors.

use serde_json::Value;

use crate::server::api::selector::LabelSelector;

/// What a request is, as rules see it.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub group: &'a str,
    pub version: &'a str,
    /// Every served version of the resource (for `matchPolicy: Equivalent`).
    pub versions: &'a [String],
    pub resource: &'a str,
    pub subresource: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    pub name: &'a str,
    pub namespaced: bool,
    /// Whether the object is a Namespace (its own labels meet the namespace selector).
    pub is_namespace: bool,
}

/// The labels a request brings: its namespace's (None for cluster-scoped resources), and its
/// new and old objects'.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    pub namespace: Option<Vec<(String, String)>>,
    pub object: Option<Vec<(String, String)>>,
    pub old_object: Option<Vec<(String, String)>>,
}

fn strings(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn listed(v: &Value, wanted: &str) -> bool {
    strings(v).any(|s| s == "*" || s == wanted)
}

/// `resources` entries: `*` (every resource, no subresource), `*/*`, `r`, `r/*`, `*/s`, `r/s`.
fn resource_listed(v: &Value, resource: &str, sub: &str) -> bool {
    strings(v).any(|entry| {
        let (r, s) = entry.split_once('/').unwrap_or((entry, ""));
        (r == "*" || r == resource) && (s == "*" || s == sub)
    })
}

/// One `NamedRuleWithOperations`.
pub fn rule_matches(rule: &Value, t: &Target<'_>, equivalent: bool) -> bool {
    if !listed(&rule["operations"], t.operation) || !listed(&rule["apiGroups"], t.group) {
        return false;
    }
    let version_ok = listed(&rule["apiVersions"], t.version)
        || (equivalent && t.versions.iter().any(|v| listed(&rule["apiVersions"], v)));
    if !version_ok || !resource_listed(&rule["resources"], t.resource, t.subresource) {
        return false;
    }
    let scope_ok = match rule["scope"].as_str().unwrap_or("*") {
        "Cluster" => !t.namespaced,
        "Namespaced" => t.namespaced,
        _ => true,
    };
    let names: Vec<&str> = strings(&rule["resourceNames"]).collect();
    scope_ok && (names.is_empty() || names.contains(&t.name))
}

/// A `metav1.LabelSelector`; absent or `{}` selects everything, an invalid one nothing.
pub fn selector_matches(selector: &Value, labels: &[(String, String)]) -> bool {
    if selector.is_null() {
        return true;
    }
    LabelSelector::from_object(selector).is_some_and(|s| s.matches(labels))
}

/// A `MatchResources`: the namespace and object selectors, the exclusions, then the rules
/// (none listed: every resource matches, as a binding's own matchResources may leave them out).
pub fn resources_match(mr: &Value, t: &Target<'_>, labels: &Labels) -> bool {
    let namespace_ok = match (&labels.namespace, t.is_namespace) {
        (_, true) => labels
            .object
            .as_deref()
            .or(labels.old_object.as_deref())
            .is_none_or(|l| selector_matches(&mr["namespaceSelector"], l)),
        (Some(ns), false) => selector_matches(&mr["namespaceSelector"], ns),
        // Cluster-scoped objects are never filtered by the namespace selector.
        (None, false) => true,
    };
    let object_ok = [&labels.object, &labels.old_object]
        .into_iter()
        .flatten()
        .any(|l| selector_matches(&mr["objectSelector"], l))
        || (labels.object.is_none() && labels.old_object.is_none());
    if !namespace_ok || !object_ok {
        return false;
    }
    let equivalent = mr["matchPolicy"].as_str() != Some("Exact");
    let rules = |key: &str| mr[key].as_array().cloned().unwrap_or_default();
    if rules("excludeResourceRules")
        .iter()
        .any(|r| rule_matches(r, t, equivalent))
    {
        return false;
    }
    let include = rules("resourceRules");
    include.is_empty() || include.iter().any(|r| rule_matches(r, t, equivalent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target<'a>(resource: &'a str, sub: &'a str, op: &'a str) -> Target<'a> {
        Target {
            group: "batch",
            version: "v1",
            versions: &[],
            resource,
            subresource: sub,
            operation: op,
            name: "j",
            namespaced: true,
            is_namespace: false,
        }
    }

    fn rule(resources: Value) -> Value {
        json!({"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": resources})
    }

    #[test]
    fn resources_and_subresources() {
        let t = target("jobs", "", "CREATE");
        assert!(rule_matches(&rule(json!(["jobs"])), &t, true));
        assert!(rule_matches(&rule(json!(["*"])), &t, true));
        assert!(rule_matches(&rule(json!(["*/*"])), &t, true));
        assert!(!rule_matches(&rule(json!(["cronjobs"])), &t, true));
        let status = target("jobs", "status", "UPDATE");
        assert!(!rule_matches(&rule(json!(["jobs"])), &status, true));
        assert!(!rule_matches(&rule(json!(["*"])), &status, true));
        assert!(rule_matches(&rule(json!(["jobs/status"])), &status, true));
        assert!(rule_matches(&rule(json!(["jobs/*"])), &status, true));
        assert!(rule_matches(&rule(json!(["*/status"])), &status, true));
        assert!(!rule_matches(
            &rule(json!(["jobs"])),
            &target("jobs", "", "DELETE"),
            true
        ));
    }

    #[test]
    fn versions_scope_and_names() {
        let versions = ["v1".to_string(), "v2".to_string()];
        let t = Target {
            version: "v2",
            versions: &versions,
            ..target("jobs", "", "CREATE")
        };
        assert!(rule_matches(&rule(json!(["jobs"])), &t, true));
        assert!(!rule_matches(&rule(json!(["jobs"])), &t, false));
        let mut r = rule(json!(["jobs"]));
        r["scope"] = json!("Cluster");
        assert!(!rule_matches(&r, &target("jobs", "", "CREATE"), true));
        r["scope"] = json!("Namespaced");
        r["resourceNames"] = json!(["other"]);
        assert!(!rule_matches(&r, &target("jobs", "", "CREATE"), true));
    }

    #[test]
    fn selectors_and_exclusions() {
        let t = target("jobs", "", "CREATE");
        let l = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        let mr = json!({
            "resourceRules": [rule(json!(["jobs"]))],
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "objectSelector": {"matchExpressions": [{"key": "q", "operator": "Exists"}]},
        });
        let labels = Labels {
            namespace: Some(l("team", "a")),
            object: Some(l("q", "x")),
            old_object: None,
        };
        assert!(resources_match(&mr, &t, &labels));
        let other_ns = Labels {
            namespace: Some(l("team", "b")),
            ..labels.clone()
        };
        assert!(!resources_match(&mr, &t, &other_ns));
        let unlabelled = Labels {
            object: Some(Vec::new()),
            ..labels.clone()
        };
        assert!(!resources_match(&mr, &t, &unlabelled));
        let mut excluded = mr.clone();
        excluded["excludeResourceRules"] = json!([rule(json!(["jobs"]))]);
        assert!(!resources_match(&excluded, &t, &labels));
        // A binding's matchResources without rules: every resource.
        assert!(resources_match(&json!({}), &t, &labels));
    }
}
