//! Whether one RBAC policy rule covers a request, with rbac/v1's matching rules: `*` for
//! verbs, groups and resources, `*/subresource`, resourceNames (an empty list allows every
//! name), and non-resource URLs with a trailing `*`.

use serde_json::Value;

use super::attributes::Attributes;

/// One `PolicyRule`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

impl Rule {
    pub fn from_json(v: &Value) -> Self {
        Self {
            verbs: strings(&v["verbs"]),
            api_groups: strings(&v["apiGroups"]),
            resources: strings(&v["resources"]),
            resource_names: strings(&v["resourceNames"]),
            non_resource_urls: strings(&v["nonResourceURLs"]),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn list_from(role: &Value) -> Vec<Self> {
        role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(Self::from_json)
            .collect()
    }

    pub fn allows(&self, a: &Attributes) -> bool {
        if !has_or_star(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return self
                .non_resource_urls
                .iter()
                .any(|u| url_matches(u, &a.path));
        }
        has_or_star(&self.api_groups, &a.group)
            && self.resource_matches(&a.combined_resource(), &a.subresource)
            && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
    }

    fn resource_matches(&self, combined: &str, sub: &str) -> bool {
        self.resources.iter().any(|r| {
            r == "*" || r == combined || (!sub.is_empty() && r.strip_prefix("*/") == Some(sub))
        })
    }
}

fn has_or_star(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*"
        || rule == path
        || rule
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "n".into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn matching() {
        let r = Rule::from_json(
            &json!({"verbs": ["get", "patch"], "apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"]}),
        );
        assert!(r.allows(&req("get", "kueue.x-k8s.io", "workloads", "", "a")));
        assert!(!r.allows(&req("patch", "kueue.x-k8s.io", "workloads", "status", "a")));
        assert!(!r.allows(&req("list", "kueue.x-k8s.io", "workloads", "", "")));
        assert!(!r.allows(&req("get", "", "workloads", "", "a")));

        let sub = Rule::from_json(
            &json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]}),
        );
        assert!(sub.allows(&req("update", "x", "workloads", "status", "a")));
        assert!(!sub.allows(&req("update", "x", "workloads", "", "a")));

        let named = Rule::from_json(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s"]}),
        );
        assert!(named.allows(&req("get", "", "secrets", "", "s")));
        assert!(!named.allows(&req("get", "", "secrets", "", "t")));
        assert!(!named.allows(&req("list", "", "secrets", "", "")));

        let urls = Rule::from_json(
            &json!({"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}),
        );
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Attributes::default()
        };
        assert!(urls.allows(&path("/metrics")));
        assert!(urls.allows(&path("/debug/pprof")));
        assert!(!urls.allows(&path("/api")));
    }
}
