//! Testbed: the API server cost model — off by default and then adds nothing; on, requests
//! queue for the server workers (shared between clusters when they share a budget), watch
//! events are delayed, and every request is counted by client, verb and resource.
//!
//! Only lower bounds on time are asserted (the model guarantees them); upper bounds only where
//! they are seconds away from what a loaded 2-core machine takes.

use std::time::{Duration, Instant};

use baton_testbed::server::TestCluster;
use baton_testbed::server::cost::{Budget, CostProfile, Service};
use baton_testbed::server::request_counts::difference;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

/// Writes take exactly `write` on one of `workers` workers; everything else is free.
fn profile(workers: usize, write: Duration, watch_delay: Duration) -> CostProfile {
    let free = Service::fixed(Duration::ZERO, Duration::ZERO);
    CostProfile {
        workers,
        write: Service::fixed(write, Duration::ZERO),
        read: free,
        list: free,
        watch: free,
        other: free,
        watch_delay,
    }
}

/// Creates `names` at once on `api`; returns how long the last one took.
async fn create_all(api: &Api<ConfigMap>, names: &[String]) -> Duration {
    let start = Instant::now();
    let results = futures::future::join_all(
        names
            .iter()
            .map(|n| async move { api.create(&PostParams::default(), &cm(n)).await }),
    )
    .await;
    for r in results {
        r.unwrap();
    }
    start.elapsed()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

#[tokio::test]
async fn n_plus_one_concurrent_writes_queue_for_n_workers() {
    let cluster = TestCluster::start_named("cost-queue").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    let service = Duration::from_millis(300);
    cluster
        .cost()
        .enable_alone(profile(2, service, Duration::ZERO));
    assert_eq!(cluster.cost().workers(), Some(2));
    let before = cluster.request_counts().snapshot();
    // Two workers serve two at once; the third waits for one of them.
    let took = create_all(&api, &names("q", 3)).await;
    assert!(
        took >= 2 * service,
        "3 writes on 2 workers of {service:?} took only {took:?}"
    );
    let counted = difference(&before, &cluster.request_counts().snapshot());
    let creates: u64 = counted
        .iter()
        .filter(|(k, _)| k.verb == "create" && k.resource == "configmaps")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(creates, 3, "{counted:?}");
}

#[tokio::test]
async fn clusters_sharing_a_budget_queue_for_the_same_workers() {
    let a = TestCluster::start_named("cost-a").await.unwrap();
    let b = TestCluster::start_named("cost-b").await.unwrap();
    let service = Duration::from_millis(300);
    let p = profile(1, service, Duration::ZERO);
    let budget = Budget::new(1);
    a.cost().enable(p.clone(), budget.clone());
    b.cost().enable(p, budget);
    let api_a: Api<ConfigMap> = Api::namespaced(a.client().unwrap(), "default");
    let api_b: Api<ConfigMap> = Api::namespaced(b.client().unwrap(), "default");
    let (na, nb) = (names("a", 1), names("b", 1));
    let start = Instant::now();
    futures::join!(create_all(&api_a, &na), create_all(&api_b, &nb));
    let took = start.elapsed();
    assert!(
        took >= 2 * service,
        "one write on each of two clusters sharing one worker took only {took:?}"
    );
}

#[tokio::test]
async fn off_by_default_and_off_again_adds_no_service_time() {
    let cluster = TestCluster::start_named("cost-off").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    assert_eq!(cluster.cost().profile(), None);
    // A service time far above what a local request takes, even on a loaded machine.
    let service = Duration::from_secs(20);
    let took = create_all(&api, &names("before", 3)).await;
    assert!(took < service, "the model is off: {took:?}");
    cluster
        .cost()
        .enable_alone(profile(1, service, Duration::from_secs(20)));
    cluster.cost().disable();
    assert_eq!(cluster.cost().watch_delay(), None);
    let took = create_all(&api, &names("after", 3)).await;
    assert!(took < service, "the model is off again: {took:?}");
}

#[tokio::test]
async fn watch_events_arrive_after_the_delay() {
    let cluster = TestCluster::start_named("cost-watch").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    let delay = Duration::from_millis(400);
    cluster
        .cost()
        .enable_alone(profile(1, Duration::ZERO, delay));
    let rv = cluster.resource_version().to_string();
    let mut events = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let written = Instant::now();
    api.create(&PostParams::default(), &cm("seen"))
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.try_next().await.unwrap() {
            if let WatchEvent::Added(o) = event
                && o.metadata.name.as_deref() == Some("seen")
            {
                return Instant::now();
            }
        }
        panic!("the watch ended before the event")
    })
    .await
    .expect("the event arrives");
    let after = seen.duration_since(written);
    assert!(
        after >= delay,
        "the event came {after:?} after the write, before the {delay:?} delay"
    );
}
