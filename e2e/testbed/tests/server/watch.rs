//! Testbed: list and watch — selectors, limit/continue, replay from a resourceVersion,
//! bookmarks, 410 Gone, timeouts, ending all watches, and the kube-runtime watcher.

use std::time::Duration;

use baton_testbed::server::{ClusterOptions, TestCluster};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(10);

async fn cluster() -> (TestCluster, Api<ConfigMap>) {
    let options = ClusterOptions {
        name: "watch".into(),
        bookmark_interval: Duration::from_millis(100),
        ..ClusterOptions::default()
    };
    let cluster = TestCluster::start(options).await.unwrap();
    let api = Api::namespaced(cluster.client().unwrap(), "default");
    (cluster, api)
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}),
    )
    .unwrap()
}

/// The next non-bookmark event, within the deadline.
async fn next_event<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(DEADLINE, async {
        loop {
            match stream.next().await {
                Some(Ok(WatchEvent::Bookmark(_))) => continue,
                Some(Ok(e)) => return e,
                other => panic!("watch ended: {other:?}"),
            }
        }
    })
    .await
    .expect("event before the deadline")
}

fn name_of(e: &WatchEvent<ConfigMap>) -> (&'static str, String) {
    match e {
        WatchEvent::Added(o) => ("ADDED", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => ("MODIFIED", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Deleted(o) => ("DELETED", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Bookmark(_) => ("BOOKMARK", String::new()),
        WatchEvent::Error(e) => ("ERROR", e.message.clone()),
    }
}

#[tokio::test]
async fn watch_from_resource_version_with_label_selector() {
    let (_c, api) = cluster().await;
    api.create(&PostParams::default(), &cm("before", json!({"app": "a"})))
        .await
        .unwrap();
    let list = api
        .list(&ListParams::default().labels("app=a"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().labels("app=a"), &rv)
        .await
        .unwrap()
        .boxed();

    api.create(&PostParams::default(), &cm("other", json!({"app": "b"})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("x", json!({"app": "a"})))
        .await
        .unwrap();
    assert_eq!(
        name_of(&next_event(&mut stream).await),
        ("ADDED", "x".into())
    );
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "1"}})),
    )
    .await
    .unwrap();
    assert_eq!(
        name_of(&next_event(&mut stream).await),
        ("MODIFIED", "x".into())
    );
    // Leaving the selection is a DELETED for this watch; entering it an ADDED.
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "c"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        name_of(&next_event(&mut stream).await),
        ("DELETED", "x".into())
    );
    api.patch(
        "other",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "a"}}})),
    )
    .await
    .unwrap();
    assert_eq!(
        name_of(&next_event(&mut stream).await),
        ("ADDED", "other".into())
    );
    api.delete("other", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        name_of(&next_event(&mut stream).await),
        ("DELETED", "other".into())
    );

    // Replay: a new watch from the list's version sees the same history.
    let mut replay = api
        .watch(&WatchParams::default().labels("app=a"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(name_of(&next_event(&mut replay).await).0);
    }
    assert_eq!(seen, ["ADDED", "MODIFIED", "DELETED", "ADDED", "DELETED"]);
}

#[tokio::test]
async fn field_selectors_and_pagination() {
    let (_c, api) = cluster().await;
    for i in 0..7 {
        api.create(
            &PostParams::default(),
            &cm(&format!("cm-{i}"), json!({"i": i.to_string()})),
        )
        .await
        .unwrap();
    }
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm-3"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
    let not_name = api
        .list(&ListParams::default().fields("metadata.name!=cm-3,metadata.namespace=default"))
        .await
        .unwrap();
    assert_eq!(not_name.items.len(), 6);
    let err = api
        .list(&ListParams::default().fields("data.v=0"))
        .await
        .unwrap_err();
    assert_eq!(crate::harness::code_of(&err), Some(400));
    let sel = api
        .list(&ListParams::default().labels("i in (1,2),i notin (2)"))
        .await
        .unwrap();
    assert_eq!(sel.items.len(), 1);

    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(3);
    let mut pages = 0;
    let mut first_rv = None;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        first_rv.get_or_insert(page.metadata.resource_version.clone());
        assert_eq!(page.metadata.resource_version, *first_rv.as_ref().unwrap());
        names.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn bookmarks_timeouts_and_gone() {
    let (cluster, api) = cluster().await;
    let created = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.unwrap();

    // Bookmarks arrive when asked for.
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let bookmark = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Some(Ok(WatchEvent::Bookmark(b))) = stream.next().await {
                return b;
            }
        }
    })
    .await
    .unwrap();
    assert!(
        bookmark.metadata.resource_version.parse::<u64>().unwrap() >= rv.parse::<u64>().unwrap()
    );

    // timeoutSeconds ends the watch.
    let mut short = api
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    let ended =
        tokio::time::timeout(DEADLINE, async { while short.next().await.is_some() {} }).await;
    assert!(ended.is_ok(), "watch ended by its timeout");

    // After compaction an old version is 410 Gone.
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "1"}})),
    )
    .await
    .unwrap();
    cluster.compact();
    let mut gone = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match next_event(&mut gone).await {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
    // Ending all watches closes open streams.
    let now = cluster.resource_version().to_string();
    let mut open = api
        .watch(&WatchParams::default(), &now)
        .await
        .unwrap()
        .boxed();
    cluster.end_watches();
    let ended =
        tokio::time::timeout(DEADLINE, async { while open.next().await.is_some() {} }).await;
    assert!(ended.is_ok(), "watch ended on demand");
}

#[tokio::test]
async fn runtime_watcher_sees_changes_and_survives_gone_and_restarts() {
    let (cluster, api) = cluster().await;
    api.create(&PostParams::default(), &cm("first", json!({})))
        .await
        .unwrap();
    for config in [
        watcher::Config::default(),
        watcher::Config::default().streaming_lists(),
    ] {
        let mut stream = watcher(api.clone(), config.clone())
            .applied_objects()
            .boxed();
        let first = tokio::time::timeout(DEADLINE, async {
            while let Some(obj) = stream.try_next().await.unwrap() {
                if obj.metadata.name.as_deref() == Some("first") {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap();
        assert!(first);
        cluster.end_watches();
        cluster.compact();
        let name = format!("after-{}", cluster.resource_version());
        api.create(&PostParams::default(), &cm(&name, json!({})))
            .await
            .unwrap();
        let found = tokio::time::timeout(DEADLINE, async {
            while let Some(obj) = stream.try_next().await.unwrap() {
                if obj.metadata.name.as_deref() == Some(name.as_str()) {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap();
        assert!(found, "watcher recovered and saw {name} ({config:?})");
    }
}

#[tokio::test]
async fn metadata_only_list_get_and_watch() {
    let (_c, api) = cluster().await;
    api.create(&PostParams::default(), &cm("m1", json!({"app": "a"})))
        .await
        .unwrap();
    let list = api
        .list_metadata(&ListParams::default().labels("app=a"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("m1"));
    assert_eq!(
        list.items[0].types.as_ref().unwrap().kind,
        "PartialObjectMetadata"
    );
    let one = api.get_metadata("m1").await.unwrap();
    assert_eq!(one.metadata.labels.unwrap()["app"], "a");

    let meta_api: Api<kube::core::PartialObjectMeta<ConfigMap>> =
        Api::namespaced(_c.client().unwrap(), "default");
    let mut stream = watcher(meta_api, watcher::Config::default())
        .applied_objects()
        .boxed();
    api.create(&PostParams::default(), &cm("m2", json!({})))
        .await
        .unwrap();
    let seen = tokio::time::timeout(DEADLINE, async {
        while let Some(o) = stream.try_next().await.unwrap() {
            if o.metadata.name.as_deref() == Some("m2") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(seen);
}
