//! LIST: selectors, resourceVersion semantics, pagination (limit/continue) and rendering.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::server::api::error::{ApiError, ApiResult};
use crate::server::api::resource::ResourceType;
use crate::server::http::cluster::ClusterState;
use crate::server::http::continue_token;
use crate::server::http::list_options::{ListQuery, Match, object_bytes};
use crate::server::http::route::Params;
use crate::server::kinds::ops;
use crate::server::storage::store::{ChangeKind, Store, Stored};
use crate::server::{http::table, http::watch};

/// One page of a list.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Arc<Stored>>,
    pub rv: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

impl Page {
    /// The list metadata. Custom resource lists (unstructured) always carry `continue`, even
    /// empty; typed lists omit it when empty.
    pub fn meta_for(&self, always_continue: bool) -> Value {
        let mut m = json!({"resourceVersion": self.rv.to_string()});
        match &self.continue_token {
            Some(c) => m["continue"] = Value::String(c.clone()),
            None if always_continue => m["continue"] = json!(""),
            None => {}
        }
        if let Some(r) = self.remaining {
            m["remainingItemCount"] = json!(r);
        }
        m
    }

    /// The list metadata of a typed list (Tables, PartialObjectMetadataList, built-ins).
    pub fn meta(&self) -> Value {
        self.meta_for(false)
    }
}

/// `504 Timeout` for a resourceVersion the storage has not reached.
fn too_large(rv: u64, current: u64) -> ApiError {
    ApiError::new(
        504,
        "Timeout",
        format!("Timeout: Too large resource version: {rv}, current: {current}"),
    )
    .with_details(json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }))
}

/// The objects of `rt` (in `namespace`, if given) as they were at `rv`: the current ones with
/// the later changes undone.
fn snapshot(
    store: &Store,
    rt: &ResourceType,
    namespace: Option<&str>,
    rv: u64,
    too_old: &str,
) -> ApiResult<BTreeMap<(String, String), Arc<Stored>>> {
    let mut objects: BTreeMap<(String, String), Arc<Stored>> = store
        .list(&rt.table, namespace, None)
        .map(|o| ((o.namespace.clone(), o.name.clone()), o.clone()))
        .collect();
    if rv >= store.rv() {
        return Ok(objects);
    }
    let changes = store
        .changes_after(rv)
        .ok_or_else(|| ApiError::gone(too_old))?;
    for change in changes.iter().rev() {
        if *change.table != *rt.table || namespace.is_some_and(|ns| ns != change.obj.namespace) {
            continue;
        }
        let key = (change.obj.namespace.clone(), change.obj.name.clone());
        match (change.kind, &change.prev) {
            (ChangeKind::Added, _) | (_, None) => {
                objects.remove(&key);
            }
            (_, Some(prev)) => {
                objects.insert(key, prev.clone());
            }
        }
    }
    Ok(objects)
}

/// Lists matching objects. Continuation pages list the first page's snapshot after the last
/// key of the previous page; resourceVersionMatch=Exact lists the snapshot at that version.
pub fn list(
    store: &Store,
    rt: &ResourceType,
    namespace: Option<&str>,
    q: &ListQuery,
) -> ApiResult<Page> {
    let ns_filter = namespace.or_else(|| q.fields.equals("metadata.namespace"));
    let current = store.rv();
    let requested = q.options.resource_version;
    let (rv, after, too_old) = match &q.continue_token {
        Some(token) => {
            if requested.is_some_and(|rv| rv != 0) {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let t = continue_token::decode(token, namespace)
                .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
            (
                t.rv,
                Some((t.namespace, t.name)),
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            )
        }
        None => match (requested, q.options.resource_version_match) {
            (Some(rv), _) if rv > current => return Err(too_large(rv, current)),
            (Some(rv), Match::Exact) => (
                rv,
                None,
                "The resourceVersion for the provided list is too old.",
            ),
            _ => (current, None, ""),
        },
    };
    let objects = snapshot(store, rt, ns_filter, rv, too_old)?;
    let range = match &after {
        Some(key) => objects.range::<(String, String), _>((
            std::ops::Bound::Excluded(key),
            std::ops::Bound::Unbounded,
        )),
        None => objects.range::<(String, String), _>(..),
    };
    let mut keys = range.map(|(_, o)| o);
    let limit = q.limit.unwrap_or(usize::MAX);
    let mut items = Vec::new();
    for o in keys.by_ref() {
        if q.matches(o) {
            items.push(o.clone());
            if items.len() >= limit {
                break;
            }
        }
    }
    // Like etcd paging: more keys after the last one read means another page, whether or
    // not they match; the count of what is left is only known without a selector.
    let rest = keys.count();
    let (continue_token, remaining) = match items.last() {
        Some(last) if q.limit.is_some() && rest > 0 => (
            Some(continue_token::encode(
                rv,
                namespace,
                &last.namespace,
                &last.name,
            )),
            q.selects_all().then_some(rest),
        ),
        _ => (None, None),
    };
    Ok(Page {
        items,
        rv,
        continue_token,
        remaining,
    })
}

/// The list response body.
pub fn render(rt: &ResourceType, page: &Page) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(page.items.iter().map(|i| i.bytes.len() + 1).sum::<usize>() + 256);
    out.extend_from_slice(
        format!(
            r#"{{"kind":{},"apiVersion":{},"metadata":{},"items":["#,
            json!(rt.list_kind),
            json!(rt.api_version()),
            page.meta_for(rt.crd_name.is_some())
        )
        .as_bytes(),
    );
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if rt.builtin.is_some() {
            // Items of built-in lists carry no kind or apiVersion (only the list does).
            out.extend_from_slice(&without_type_meta(&object_bytes(rt, item)));
        } else {
            out.extend_from_slice(&object_bytes(rt, item));
        }
    }
    out.extend_from_slice(b"]}");
    out
}

fn json_ok(body: impl Into<axum::body::Body>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
    )
        .into_response()
}

/// GET on a collection: a watch when `watch` is set, else a list, rendered as the Accept
/// header asks (objects, a Table, or PartialObjectMetadataList).
pub fn serve(
    cluster: Arc<ClusterState>,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    params: &Params,
    headers: &HeaderMap,
) -> ApiResult<Response> {
    let q = {
        let mut store = cluster.store();
        // The first request to a resource starts its watch cache.
        store.note_use(&rt.table);
        ListQuery::parse(&store, &rt, params)?
    };
    if q.options.watch {
        return Ok(watch::serve(cluster, rt, namespace, q, params, headers));
    }
    let store = cluster.store();
    let page = list(&store, &rt, namespace.as_deref(), &q)?;
    drop(store);
    Ok(match table::render_mode(headers) {
        table::Render::Table => {
            let objs: Vec<Value> = page
                .items
                .iter()
                .map(|s| ops::to_view(&rt, s.value()))
                .collect();
            let v = table::table(
                &rt,
                &objs,
                params,
                Some(&page.meta()),
                table::api_version(headers),
            );
            json_ok(v.to_string())
        }
        table::Render::Metadata => {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|s| table::partial(&s.value()))
                .collect();
            let v = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": page.meta(), "items": items});
            json_ok(v.to_string())
        }
        table::Render::Full => json_ok(render(&rt, &page)),
    })
}

/// A serialised object without `kind` and `apiVersion`, as items of built-in lists are.
fn without_type_meta(bytes: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut m)) => {
            m.remove("kind");
            m.remove("apiVersion");
            Value::Object(m).to_string().into_bytes()
        }
        _ => bytes.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::http::list_options::params;
    use crate::server::http::list_options::{CRD_TABLE, field_text};

    fn widgets() -> ResourceType {
        let crd = json!({"metadata": {"name": "widgets.g"}, "spec": {"group": "g",
            "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}]}]}});
        crate::server::api::resource::types_from_crd(&crd).remove(0)
    }

    fn put(store: &mut Store, name: &str, color: &str) -> u64 {
        store
            .put(
                "g/widgets",
                json!({"metadata": {"name": name, "namespace": "n"}, "spec": {"color": color}}),
            )
            .rv
    }

    #[test]
    fn built_in_list_items_carry_no_type_meta() {
        assert_eq!(
            without_type_meta(br#"{"kind":"Event","apiVersion":"v1","metadata":{}}"#),
            br#"{"metadata":{}}"#
        );
    }

    #[test]
    fn pages_snapshots_and_selectable_fields() {
        let rt = widgets();
        let mut store = Store::new(100);
        let crd = json!({"metadata": {"name": "widgets.g"}, "spec": {"versions": [
            {"name": "v1", "selectableFields": [{"jsonPath": ".spec.color"}]}]}});
        store.put(CRD_TABLE, crd);
        for (n, c) in [("a", "red"), ("b", "blue"), ("c", "red")] {
            put(&mut store, n, c);
        }
        let q = ListQuery::parse(&store, &rt, &params(&[("limit", "2")])).unwrap();
        let first = list(&store, &rt, Some("n"), &q).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.remaining, Some(1));
        let at = first.rv;
        put(&mut store, "b", "green");
        put(&mut store, "d", "red");
        let token = first.continue_token.clone().unwrap();
        let q = ListQuery::parse(
            &store,
            &rt,
            &params(&[("limit", "2"), ("continue", &token)]),
        )
        .unwrap();
        let second = list(&store, &rt, Some("n"), &q).unwrap();
        assert_eq!(second.items.len(), 1, "the snapshot of the first page");
        assert_eq!(second.rv, at);
        store.compact();
        let exact = ListQuery::parse(
            &store,
            &rt,
            &params(&[
                ("resourceVersion", &at.to_string()),
                ("resourceVersionMatch", "Exact"),
            ]),
        )
        .unwrap();
        let page = list(&store, &rt, Some("n"), &exact).unwrap();
        assert_eq!(page.items.len(), 3);
        assert_eq!(field_text(&page.items[1].value(), "spec.color"), "blue");
        let red =
            ListQuery::parse(&store, &rt, &params(&[("fieldSelector", "spec.color=red")])).unwrap();
        assert_eq!(list(&store, &rt, Some("n"), &red).unwrap().items.len(), 3);
        let err = ListQuery::parse(&store, &rt, &params(&[("fieldSelector", "spec.size=1")]))
            .unwrap_err();
        assert_eq!(err.message, "field label not supported: spec.size");
        let future =
            ListQuery::parse(&store, &rt, &params(&[("resourceVersion", "99999")])).unwrap();
        assert_eq!(list(&store, &rt, Some("n"), &future).unwrap_err().code, 504);
    }

    #[test]
    fn selector_pages_continue_without_a_count() {
        let rt = widgets();
        let mut store = Store::new(100);
        for (n, c) in [("a", "red"), ("b", "red"), ("c", "blue")] {
            put(&mut store, n, c);
        }
        let q = ListQuery::parse(
            &store,
            &rt,
            &params(&[("limit", "1"), ("fieldSelector", "metadata.name!=a")]),
        )
        .unwrap();
        let page = list(&store, &rt, Some("n"), &q).unwrap();
        assert_eq!(page.items[0].name, "b");
        assert!(page.continue_token.is_some() && page.remaining.is_none());
        let meta = page.meta_for(true);
        assert!(meta.get("remainingItemCount").is_none());
    }
}
