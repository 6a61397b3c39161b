//! What each request is (its client, verb and resource, as kube-apiserver's audit log names
//! them) and how many of each a cluster served, so that a benchmark can count the API work a
//! pipeline does per workload. Counted on arrival, whatever the answer (a conflict costs the
//! server too).

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::http::{HeaderMap, Method, Uri, header};

use crate::server::http::cost::CostClass;
use crate::server::http::route::{Route, parse_route, without_watch_segment};

/// Who sent a request, what it did and to what.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKind {
    /// The User-Agent's product (before the first `/`), or `-` without one.
    pub client: String,
    /// get, list, watch, create, update, patch, delete, deletecollection; `other` for paths
    /// that are no resource (discovery, OpenAPI, version, health).
    pub verb: String,
    /// `plural` or `plural/subresource`; for `other`, the first path segment.
    pub resource: String,
}

/// The User-Agent's product (before the first `/`), or `-` without one.
pub fn client_of(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|c| !c.is_empty())
        .unwrap_or("-")
        .to_string()
}

impl RequestKind {
    /// Classifies a request from its method, URI and headers (pure).
    pub fn of(method: &Method, uri: &Uri, headers: &HeaderMap) -> Self {
        let client = client_of(headers);
        let path = uri.path();
        let watch_path = without_watch_segment(path);
        let watch_param = uri
            .query()
            .unwrap_or("")
            .split('&')
            .any(|kv| kv == "watch=true" || kv == "watch=1");
        let route = parse_route(watch_path.as_deref().unwrap_or(path));
        let (verb, resource) = match route {
            Some(Route::Resource(t)) => {
                let verb = match (method, t.name.is_some()) {
                    (&Method::GET, _) if watch_path.is_some() || watch_param => "watch",
                    (&Method::GET, true) => "get",
                    (&Method::GET, false) => "list",
                    (&Method::POST, _) => "create",
                    (&Method::PUT, _) => "update",
                    (&Method::PATCH, _) => "patch",
                    (&Method::DELETE, true) => "delete",
                    (&Method::DELETE, false) => "deletecollection",
                    _ => "other",
                };
                let resource = match &t.sub {
                    Some(sub) => format!("{}/{sub}", t.plural),
                    None => t.plural.clone(),
                };
                (verb, resource)
            }
            _ => (
                "other",
                path.split('/')
                    .find(|s| !s.is_empty())
                    .unwrap_or("")
                    .to_string(),
            ),
        };
        Self {
            client,
            verb: verb.into(),
            resource,
        }
    }

    /// The cost model's class of this request.
    pub fn cost_class(&self) -> CostClass {
        match self.verb.as_str() {
            "create" | "update" | "patch" | "delete" | "deletecollection" => CostClass::Write,
            "get" => CostClass::Read,
            "list" => CostClass::List,
            "watch" => CostClass::Watch,
            _ => CostClass::Other,
        }
    }

    pub fn is_write(&self) -> bool {
        self.cost_class() == CostClass::Write
    }
}

/// How many requests of each kind a cluster served since it started.
#[derive(Debug, Default)]
pub struct RequestCounts {
    counts: Mutex<BTreeMap<RequestKind, u64>>,
}

impl RequestCounts {
    pub fn record(&self, kind: RequestKind) {
        *self.lock().entry(kind).or_default() += 1;
    }

    /// A copy of the counts so far (subtract two snapshots to count a phase).
    pub fn snapshot(&self) -> BTreeMap<RequestKind, u64> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<RequestKind, u64>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The watches a cluster holds open now, by client (as [`RequestKind::client`]) and resource
/// (`plural`): a watch counts from its start until its stream ends (timeout, the client
/// gone, or every watch ended at once).
#[derive(Debug, Default)]
pub struct OpenWatches {
    open: Mutex<BTreeMap<(String, String), usize>>,
}

impl OpenWatches {
    pub fn opened(&self, key: &(String, String)) {
        *self.lock().entry(key.clone()).or_default() += 1;
    }

    pub fn closed(&self, key: &(String, String)) {
        let mut open = self.lock();
        if let Some(n) = open.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(key);
            }
        }
    }

    /// The watches open now, by (client, resource).
    pub fn snapshot(&self) -> BTreeMap<(String, String), usize> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), usize>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The requests counted in `after` but not yet in `before` (kinds with none left out).
pub fn difference(
    before: &BTreeMap<RequestKind, u64>,
    after: &BTreeMap<RequestKind, u64>,
) -> BTreeMap<RequestKind, u64> {
    after
        .iter()
        .filter_map(|(k, n)| {
            let d = n.saturating_sub(before.get(k).copied().unwrap_or(0));
            (d > 0).then(|| (k.clone(), d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(method: Method, uri: &str, ua: Option<&str>) -> RequestKind {
        let mut headers = HeaderMap::new();
        if let Some(ua) = ua {
            headers.insert(header::USER_AGENT, ua.parse().unwrap());
        }
        RequestKind::of(&method, &uri.parse().unwrap(), &headers)
    }

    fn vr(k: &RequestKind) -> (&str, &str) {
        (k.verb.as_str(), k.resource.as_str())
    }

    #[test]
    fn verbs_follow_the_audit_names() {
        let wl = "/apis/kueue.x-k8s.io/v1beta2/namespaces/n/workloads";
        let cases = [
            (Method::GET, format!("{wl}/a"), ("get", "workloads")),
            (Method::GET, wl.to_string(), ("list", "workloads")),
            (
                Method::GET,
                format!("{wl}?watch=true&resourceVersion=5"),
                ("watch", "workloads"),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/n/pods".into(),
                ("watch", "pods"),
            ),
            (Method::POST, wl.to_string(), ("create", "workloads")),
            (
                Method::PUT,
                format!("{wl}/a/status"),
                ("update", "workloads/status"),
            ),
            (Method::PATCH, format!("{wl}/a"), ("patch", "workloads")),
            (Method::DELETE, format!("{wl}/a"), ("delete", "workloads")),
            (
                Method::DELETE,
                wl.to_string(),
                ("deletecollection", "workloads"),
            ),
            (Method::GET, "/apis".into(), ("other", "apis")),
            (Method::GET, "/version".into(), ("other", "version")),
            (Method::OPTIONS, format!("{wl}/a"), ("other", "workloads")),
        ];
        for (method, uri, want) in cases {
            let k = kind(method, &uri, None);
            assert_eq!(vr(&k), want, "{uri}");
        }
    }

    #[test]
    fn clients_are_named_by_their_user_agent_product() {
        assert_eq!(
            kind(Method::GET, "/version", Some("baton-bench/0.1")).client,
            "baton-bench"
        );
        assert_eq!(kind(Method::GET, "/version", None).client, "-");
        assert_eq!(kind(Method::GET, "/version", Some("/x")).client, "-");
    }

    #[test]
    fn cost_classes_follow_the_verbs() {
        let wl = "/apis/g/v1/namespaces/n/ws";
        assert!(kind(Method::POST, wl, None).is_write());
        assert!(kind(Method::DELETE, wl, None).is_write());
        assert_eq!(
            kind(Method::GET, &format!("{wl}/a"), None).cost_class(),
            CostClass::Read
        );
        assert_eq!(kind(Method::GET, wl, None).cost_class(), CostClass::List);
        assert_eq!(
            kind(Method::GET, &format!("{wl}?watch=1"), None).cost_class(),
            CostClass::Watch
        );
        assert_eq!(
            kind(Method::GET, "/openapi/v2", None).cost_class(),
            CostClass::Other
        );
    }

    #[test]
    fn counts_and_their_differences() {
        let counts = RequestCounts::default();
        let a = kind(Method::POST, "/api/v1/namespaces/n/configmaps", None);
        let b = kind(Method::GET, "/api/v1/namespaces/n/configmaps/x", None);
        counts.record(a.clone());
        let before = counts.snapshot();
        counts.record(a.clone());
        counts.record(b.clone());
        counts.record(b.clone());
        let d = difference(&before, &counts.snapshot());
        assert_eq!(d.get(&a), Some(&1));
        assert_eq!(d.get(&b), Some(&2));
        assert_eq!(difference(&d, &d).len(), 0);
    }

    #[test]
    fn open_watches_count_up_and_down() {
        let open = OpenWatches::default();
        let key = ("baton".to_string(), "workloads".to_string());
        open.opened(&key);
        open.opened(&key);
        open.closed(&key);
        assert_eq!(open.snapshot().get(&key), Some(&1));
        open.closed(&key);
        open.closed(&key);
        assert!(open.snapshot().is_empty());
    }
}
