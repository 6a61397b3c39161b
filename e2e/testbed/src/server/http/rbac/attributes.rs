//! What a request asks to do, in the terms authorizers use (kube-apiserver's `RequestInfo`):
//! verb, API group, resource and subresource, namespace and name — or a non-resource path.

use axum::http::Method;

use crate::server::http::route::{Params, Target};

/// The authorization attributes of one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    pub verb: String,
    /// False for discovery, OpenAPI, health and version paths.
    pub resource_request: bool,
    /// The URL path of a non-resource request.
    pub path: String,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// A request on a resource path, its HTTP method mapped to a verb as kube-apiserver maps
    /// it: GET of one object is `get`, of a collection `list` (or `watch` with `watch=true`),
    /// POST `create`, PUT `update`, PATCH `patch` (server-side apply included), DELETE of one
    /// object `delete`, of a collection `deletecollection`.
    pub fn for_resource(method: &Method, t: &Target, params: &Params) -> Self {
        let collection = t.name.is_none();
        let verb = match *method {
            Method::GET | Method::HEAD if collection => {
                if params.get("watch").is_some_and(|w| w == "true" || w == "1") {
                    "watch"
                } else {
                    "list"
                }
            }
            Method::GET | Method::HEAD => "get",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if collection => "deletecollection",
            Method::DELETE => "delete",
            _ => "",
        };
        let mut name = t.name.clone().unwrap_or_default();
        // A list or watch of one name (`fieldSelector=metadata.name=x`) is about that name, so
        // rules limited by resourceNames can allow it.
        if collection
            && (verb == "list" || verb == "watch")
            && let Some(n) = params.get("fieldSelector").and_then(|f| exact_name(f))
        {
            name = n;
        }
        // A namespace is its own namespace: `get namespaces/x` is allowed by a RoleBinding in x.
        let namespace = match (&t.namespace, t.group.is_empty() && t.plural == "namespaces") {
            (Some(ns), _) => ns.clone(),
            (None, true) => t.name.clone().unwrap_or_default(),
            (None, false) => String::new(),
        };
        Self {
            verb: verb.into(),
            resource_request: true,
            path: String::new(),
            group: t.group.clone(),
            version: t.version.clone(),
            resource: t.plural.clone(),
            subresource: t.sub.clone().unwrap_or_default(),
            namespace,
            name,
        }
    }

    /// A request on a non-resource path (verbs are the lower-case HTTP method).
    pub fn for_path(method: &Method, path: &str) -> Self {
        Self {
            verb: method.as_str().to_ascii_lowercase(),
            resource_request: false,
            path: path.into(),
            ..Self::default()
        }
    }

    /// `resource/subresource`, as rules name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// The name a field selector requires exactly (`metadata.name=x` or `metadata.name==x`).
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let (k, v) = term.split_once("==").or_else(|| term.split_once('='))?;
        (k.trim() == "metadata.name" && !v.trim().is_empty()).then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::http::route::{Route, parse_route};

    fn attrs(method: Method, path: &str, query: &[(&str, &str)]) -> Attributes {
        let Some(Route::Resource(t)) = parse_route(path) else {
            panic!("{path} is not a resource path");
        };
        let params: Params = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Attributes::for_resource(&method, &t, &params)
    }

    #[test]
    fn verbs_from_methods() {
        let ws = "/apis/kueue.x-k8s.io/v1beta2/namespaces/n/workloads";
        assert_eq!(attrs(Method::GET, ws, &[]).verb, "list");
        assert_eq!(attrs(Method::GET, ws, &[("watch", "true")]).verb, "watch");
        assert_eq!(attrs(Method::POST, ws, &[]).verb, "create");
        assert_eq!(attrs(Method::DELETE, ws, &[]).verb, "deletecollection");
        let w = attrs(Method::PATCH, &format!("{ws}/a/status"), &[]);
        assert_eq!(
            (w.verb.as_str(), w.name.as_str(), w.combined_resource()),
            ("patch", "a", "workloads/status".to_string())
        );
        assert_eq!(w.namespace, "n");
        assert_eq!(attrs(Method::PUT, &format!("{ws}/a"), &[]).verb, "update");
        assert_eq!(
            attrs(Method::DELETE, &format!("{ws}/a"), &[]).verb,
            "delete"
        );
        let one = attrs(Method::GET, ws, &[("fieldSelector", "metadata.name=x")]);
        assert_eq!((one.verb.as_str(), one.name.as_str()), ("list", "x"));
        let ns = attrs(Method::GET, "/api/v1/namespaces/n", &[]);
        assert_eq!((ns.namespace.as_str(), ns.name.as_str()), ("n", "n"));
        assert_eq!(attrs(Method::GET, "/api/v1/secrets", &[]).namespace, "");
    }
}
