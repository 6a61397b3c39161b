//! WATCH: replay from a resourceVersion (an ERROR event with 410 when too old), initial
//! events (resourceVersion unset or 0, or sendInitialEvents, ending with the
//! `k8s.io/initial-events-end` BOOKMARK of the watch-list protocol), selectors with ADDED /
//! DELETED on entering / leaving the selection, bookmarks, Tables, timeouts, and ending all
//! watches on demand.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::server::api::error::ApiError;
use crate::server::api::meta;
use crate::server::api::resource::ResourceType;
use crate::server::http::cluster::ClusterState;
use crate::server::http::list_options::{ListQuery, object_bytes};
use crate::server::http::request_counts::client_of;
use crate::server::http::route::Params;
use crate::server::http::table;
use crate::server::kinds::ops;
use crate::server::storage::store::{Change, ChangeKind, Store, Stored};

/// kube-apiserver sends its last bookmark this long before a watch's timeout.
const BOOKMARK_BEFORE_TIMEOUT: Duration = Duration::from_secs(2);

struct Watcher {
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    query: ListQuery,
    mode: table::Render,
    table_version: &'static str,
    params: Params,
    /// Only the first Table event of a stream carries the column definitions.
    columns_sent: AtomicBool,
}

impl Watcher {
    fn selects(&self, obj: &Stored) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| ns == obj.namespace)
            && self.query.matches(obj)
    }

    fn render(&self, obj: &Stored) -> Bytes {
        match self.mode {
            table::Render::Table => {
                let v = ops::to_view(&self.rt, obj.value());
                let mut t = table::table(
                    &self.rt,
                    std::slice::from_ref(&v),
                    &self.params,
                    None,
                    self.table_version,
                );
                if self.columns_sent.swap(true, Ordering::Relaxed) {
                    t["columnDefinitions"] = Value::Null;
                }
                Bytes::from(t.to_string())
            }
            table::Render::Metadata => Bytes::from(table::partial(&obj.value()).to_string()),
            table::Render::Full => object_bytes(&self.rt, obj),
        }
    }

    fn line(&self, kind: &str, obj: &Stored) -> Bytes {
        let object = self.render(obj);
        let mut out = Vec::with_capacity(object.len() + 32);
        out.extend_from_slice(br#"{"type":""#);
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(br#"","object":"#);
        out.extend_from_slice(&object);
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    /// The event a change becomes for this watch, if any. An object leaving the selection
    /// is DELETED as it was before the change, at the change's resourceVersion.
    fn event_for(&self, change: &Change) -> Option<Bytes> {
        if *change.table != *self.rt.table {
            return None;
        }
        let now = self.selects(&change.obj);
        let before = change.prev.as_ref().is_some_and(|p| self.selects(p));
        let kind = match change.kind {
            ChangeKind::Added if now => "ADDED",
            ChangeKind::Modified if now && before => "MODIFIED",
            ChangeKind::Modified if now => "ADDED",
            ChangeKind::Modified if before => {
                let prev = change.prev.as_deref()?;
                return Some(self.line("DELETED", &at_version(prev, change.rv)));
            }
            ChangeKind::Deleted if before || now => "DELETED",
            _ => return None,
        };
        Some(self.line(kind, &change.obj))
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut md = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj =
            json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": md});
        Bytes::from(format!("{}\n", json!({"type": "BOOKMARK", "object": obj})))
    }
}

/// A copy of `obj` carrying another resourceVersion.
fn at_version(obj: &Stored, rv: u64) -> Stored {
    let mut v = obj.value();
    meta::metadata_mut(&mut v).insert("resourceVersion".into(), json!(rv.to_string()));
    Stored {
        bytes: Bytes::from(v.to_string()),
        namespace: obj.namespace.clone(),
        name: obj.name.clone(),
        rv,
        labels: obj.labels.clone(),
        fields: obj.fields.clone(),
    }
}

fn error_line(e: &ApiError) -> Bytes {
    Bytes::from(format!(
        "{}\n",
        json!({"type": "ERROR", "object": e.to_status()})
    ))
}

fn stream_response(body: Body) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The events a watch starts with and the version it continues after, or the error that
/// ends it at once.
fn start(store: &Store, watcher: &Watcher) -> Result<(Vec<Bytes>, u64), ApiError> {
    let current = store.rv();
    let options = &watcher.query.options;
    if options.sends_initial_events() {
        let ns = watcher.namespace.as_deref();
        let mut lines: Vec<Bytes> = store
            .list(&watcher.rt.table, ns, None)
            .filter(|o| watcher.selects(o))
            .map(|o| watcher.line("ADDED", o))
            .collect();
        if options.marks_initial_events_end() {
            lines.push(watcher.bookmark(current, true));
        }
        return Ok((lines, current));
    }
    let Some(from) = options.resource_version.filter(|rv| *rv != 0) else {
        return Ok((Vec::new(), current));
    };
    // A custom resource's watch cache starts when the resource is first used: it cannot
    // replay what happened before.
    let origin = match watcher.rt.crd_name {
        Some(_) => store.origin(&watcher.rt.table),
        None => None,
    };
    if let Some(origin) = origin.filter(|o| from < *o) {
        return Err(ApiError::gone(format!(
            "too old resource version: {from} ({origin})"
        )));
    }
    match store.changes_since(from) {
        Some(changes) => Ok((
            changes
                .iter()
                .filter_map(|c| watcher.event_for(c))
                .collect(),
            current.max(from),
        )),
        None => Err(ApiError::gone(format!(
            "too old resource version: {from} ({})",
            store.compacted() + 1
        ))),
    }
}

/// Counts a watch as open in its cluster's [`ClusterState::watches`] while it lives.
struct Held {
    cluster: Arc<ClusterState>,
    key: (String, String),
}

impl Held {
    fn new(cluster: Arc<ClusterState>, key: (String, String)) -> Self {
        cluster.watches.opened(&key);
        Self { cluster, key }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.cluster.watches.closed(&self.key);
    }
}

/// Starts a watch; the response streams one JSON event per line.
pub fn serve(
    cluster: Arc<ClusterState>,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    query: ListQuery,
    params: &Params,
    headers: &HeaderMap,
) -> Response {
    let bookmarks = query.options.allow_watch_bookmarks;
    let timeout = query
        .options
        .timeout_seconds
        .map(Duration::from_secs)
        .unwrap_or(cluster.options.default_watch_timeout);
    let watcher = Watcher {
        rt,
        namespace,
        query,
        mode: table::render_mode(headers),
        table_version: table::api_version(headers),
        params: params.clone(),
        columns_sent: AtomicBool::new(false),
    };
    // Each line with the time it may leave (the cost model's watch delay), if any.
    let (tx, rx) = mpsc::channel::<(Option<tokio::time::Instant>, Bytes)>(1024);

    // Snapshot or replay, and subscription, under one lock: no change falls in between.
    let (initial, mut changes, start_rv): (Vec<Bytes>, broadcast::Receiver<Arc<Change>>, u64) = {
        let store = cluster.store();
        let rx = store.subscribe();
        match start(&store, &watcher) {
            Ok((lines, rv)) => (lines, rx, rv),
            Err(e) => return stream_response(Body::from(error_line(&e))),
        }
    };
    let mut epoch = cluster.watch_epoch.subscribe();
    let interval = cluster.options.bookmark_interval;
    let held = Held::new(
        cluster.clone(),
        (client_of(headers), watcher.rt.plural.clone()),
    );
    tokio::spawn(async move {
        let _held = held;
        for line in initial {
            if tx.send((None, line)).await.is_err() {
                return;
            }
        }
        // `progress`: the latest version seen; `sent`: the version of the last event sent.
        let (mut progress, mut sent) = (start_rv, start_rv);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let last_bookmark = tokio::time::sleep(timeout.saturating_sub(BOOKMARK_BEFORE_TIMEOUT));
        tokio::pin!(last_bookmark);
        let mut last_bookmark_due = bookmarks && timeout > BOOKMARK_BEFORE_TIMEOUT;
        let mut ticker = tokio::time::interval(interval);
        ticker.tick().await;
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(change) => {
                        if change.rv <= progress {
                            continue;
                        }
                        progress = change.rv;
                        if let Some(line) = watcher.event_for(&change) {
                            sent = change.rv;
                            let due = cluster
                                .cost
                                .watch_delay()
                                .map(|d| tokio::time::Instant::now() + d);
                            if tx.send((due, line)).await.is_err() {
                                return;
                            }
                        }
                    }
                    // Too slow a reader, or the cluster is gone: end the watch; clients re-watch.
                    Err(_) => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    if tx.send((None, watcher.bookmark(progress, false))).await.is_err() {
                        return;
                    }
                }
                // Only once the cache has moved past the last event this watcher got.
                _ = &mut last_bookmark, if last_bookmark_due => {
                    last_bookmark_due = false;
                    if progress > sent && tx.send((None, watcher.bookmark(progress, false))).await.is_err() {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = epoch.changed() => return,
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        let (due, line) = rx.recv().await?;
        if let Some(due) = due {
            tokio::time::sleep_until(due).await;
        }
        Some((Ok::<_, Infallible>(line), rx))
    });
    stream_response(Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> Arc<ResourceType> {
        let crd = json!({"metadata": {"name": "widgets.g"}, "spec": {"group": "g",
            "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true}]}});
        Arc::new(crate::server::api::resource::types_from_crd(&crd).remove(0))
    }

    fn watcher(store: &Store, params: &[(&str, &str)]) -> Watcher {
        let rt = widgets();
        let params: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Watcher {
            query: ListQuery::parse(store, &rt, &params).unwrap(),
            rt,
            namespace: Some("n".into()),
            mode: table::Render::Full,
            table_version: "meta.k8s.io/v1",
            params,
            columns_sent: AtomicBool::new(false),
        }
    }

    fn put(store: &mut Store, tier: &str) -> u64 {
        store
            .put(
                "g/widgets",
                json!({"metadata": {"name": "a", "namespace": "n", "labels": {"tier": tier}}}),
            )
            .rv
    }

    fn events(lines: &[Bytes]) -> Vec<(String, String, String)> {
        lines
            .iter()
            .map(|l| {
                let v: Value = serde_json::from_slice(l).unwrap();
                let md = &v["object"]["metadata"];
                (
                    v["type"].as_str().unwrap_or_default().to_string(),
                    md["labels"]["tier"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    md["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn replays_selector_transitions_and_refuses_versions_before_the_cache() {
        let mut store = Store::new(100);
        store.put("/namespaces", json!({"metadata": {"name": "n"}}));
        let before_cache = store.rv();
        let start_rv = store.note_use("g/widgets");
        put(&mut store, "gold");
        let left = put(&mut store, "silver");
        put(&mut store, "gold");
        let w = watcher(
            &store,
            &[
                ("labelSelector", "tier=gold"),
                ("resourceVersion", &start_rv.to_string()),
            ],
        );
        let (lines, _) = start(&store, &w).unwrap();
        let got = events(&lines);
        assert_eq!(got.len(), 3);
        // Leaving the selection: DELETED with the old content at the new version.
        assert_eq!(got[1], ("DELETED".into(), "gold".into(), left.to_string()));
        assert_eq!(got[2].0, "ADDED");

        let w = watcher(
            &store,
            &[("resourceVersion", &(before_cache - 1).to_string())],
        );
        let err = start(&store, &w).unwrap_err();
        assert_eq!(err.code, 410);
        assert!(err.message.starts_with("too old resource version: "));
    }

    #[test]
    fn initial_events_end_with_the_watch_list_bookmark() {
        let mut store = Store::new(100);
        put(&mut store, "gold");
        let w = watcher(&store, &[("allowWatchBookmarks", "true")]);
        let (lines, rv) = start(&store, &w).unwrap();
        let got = events(&lines);
        assert_eq!(got[0].0, "ADDED");
        assert_eq!(got[1].0, "BOOKMARK");
        let last: Value = serde_json::from_slice(&lines[1]).unwrap();
        assert_eq!(
            last["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        assert_eq!(
            last["object"]["metadata"]["resourceVersion"],
            rv.to_string()
        );
    }
}
