//! WATCH: replay from a resourceVersion (410 when compacted), initial events, selectors
//! with ADDED/DELETED on entering/leaving the selection, bookmarks, timeouts, and ending all
//! watches on demand.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use super::cluster::ClusterState;
use super::error::ApiError;
use super::handlers::Params;
use super::list::{ListQuery, object_bytes};
use super::ops;
use super::resource::ResourceType;
use super::store::{Change, ChangeKind, Stored};
use super::table;

struct Watcher {
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    query: ListQuery,
    mode: table::Render,
    params: Params,
}

impl Watcher {
    fn selects(&self, obj: &Stored) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| ns == obj.namespace)
            && self.query.matches(obj)
    }

    fn line(&self, kind: &str, obj: &Stored) -> Bytes {
        let object = match self.mode {
            table::Render::Table => {
                let v = ops::to_view(&self.rt, obj.value());
                Bytes::from(
                    table::table(&self.rt, std::slice::from_ref(&v), &self.params, None)
                        .to_string(),
                )
            }
            table::Render::Metadata => Bytes::from(table::partial(&obj.value()).to_string()),
            table::Render::Full => object_bytes(&self.rt, obj),
        };
        let mut out = Vec::with_capacity(object.len() + 32);
        out.extend_from_slice(br#"{"type":""#);
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(br#"","object":"#);
        out.extend_from_slice(&object);
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    /// The event a change becomes for this watch, if any.
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
            ChangeKind::Modified if before => "DELETED",
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

fn error_line(e: &ApiError) -> Bytes {
    Bytes::from(format!(
        "{}\n",
        json!({"type": "ERROR", "object": e.to_status()})
    ))
}

/// Starts a watch; the response streams one JSON event per line.
pub fn serve(
    cluster: Arc<ClusterState>,
    rt: Arc<ResourceType>,
    namespace: Option<String>,
    query: ListQuery,
    params: &Params,
    mode: table::Render,
) -> Response {
    let rv_param = params.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = params
        .get("allowWatchBookmarks")
        .is_some_and(|b| b == "true" || b == "1");
    let send_initial = params.get("sendInitialEvents").is_some_and(|b| b == "true");
    let timeout = params
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(cluster.options.default_watch_timeout);
    let watcher = Watcher {
        rt,
        namespace,
        query,
        mode,
        params: params.clone(),
    };
    let (tx, rx) = mpsc::channel::<Bytes>(1024);

    // Snapshot or replay, and subscription, under one lock: no change falls in between.
    let (initial, mut changes, start_rv): (Vec<Bytes>, broadcast::Receiver<Arc<Change>>, u64) = {
        let store = cluster.store();
        let current = store.rv();
        let rx = store.subscribe();
        if rv_param.is_empty() || rv_param == "0" || send_initial {
            let ns = watcher.namespace.as_deref();
            let lines = store
                .list(&watcher.rt.table, ns, None)
                .filter(|o| watcher.selects(o))
                .map(|o| watcher.line("ADDED", o))
                .collect();
            (lines, rx, current)
        } else {
            let Ok(from) = rv_param.parse::<u64>() else {
                return ApiError::bad_request(format!("invalid resource version: {rv_param}"))
                    .into_response();
            };
            match store.changes_since(from) {
                Some(changes) => {
                    let lines = changes
                        .iter()
                        .filter_map(|c| watcher.event_for(c))
                        .collect();
                    (lines, rx, current.max(from))
                }
                None => {
                    let e = ApiError::gone(format!(
                        "too old resource version: {from} ({})",
                        store.compacted() + 1
                    ));
                    let body = Body::from(error_line(&e));
                    return (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "application/json")],
                        body,
                    )
                        .into_response();
                }
            }
        }
    };
    let mut epoch = cluster.watch_epoch.subscribe();
    let interval = cluster.options.bookmark_interval;
    tokio::spawn(async move {
        for line in initial {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        if send_initial && bookmarks && tx.send(watcher.bookmark(start_rv, true)).await.is_err() {
            return;
        }
        let mut progress = start_rv;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
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
                        if let Some(line) = watcher.event_for(&change)
                            && tx.send(line).await.is_err() {
                                return;
                            }
                    }
                    // Too slow a reader, or the cluster is gone: end the watch; clients re-watch.
                    Err(_) => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(watcher.bookmark(progress, false)).await.is_err() {
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
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
