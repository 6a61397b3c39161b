//! Testbed: fault injection — offline and back (closed port, then the same address and
//! data), latency, a fraction of failed requests, and watches ended as on a restart.

use std::time::{Duration, Instant};

use crate::harness::{code_of, wait_until};
use baton_testbed::server::TestCluster;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).unwrap()
}

#[tokio::test]
async fn offline_closes_the_port_and_online_keeps_address_and_data() {
    let cluster = TestCluster::start_named("faults").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    api.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    let addr = cluster.addr();

    // A watcher that must survive the outage.
    let mut stream = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("kept"));

    cluster.go_offline().await;
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "port is closed"
    );
    let err = api.get("kept").await.unwrap_err();
    assert_eq!(
        code_of(&err),
        None,
        "a transport error, not an API status: {err:?}"
    );

    cluster.go_online().await.unwrap();
    assert_eq!(cluster.addr(), addr);
    assert_eq!(
        api.get("kept").await.unwrap().metadata.name.as_deref(),
        Some("kept")
    );
    api.create(&PostParams::default(), &cm("after"))
        .await
        .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(o) = stream.try_next().await.ok().flatten() {
            if o.metadata.name.as_deref() == Some("after") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(seen, "the watcher reconnected after the outage");
}

#[tokio::test]
async fn latency_and_failure_fractions() {
    let cluster = TestCluster::start_named("faults").await.unwrap();
    // kube-rs retries 503s by default; this test wants to see every injected failure.
    let api: Api<ConfigMap> = Api::namespaced(cluster.client_without_retries().unwrap(), "default");
    api.create(&PostParams::default(), &cm("x")).await.unwrap();

    cluster.faults().set_latency(Duration::from_millis(150));
    let start = Instant::now();
    api.get("x").await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(150));
    cluster.faults().clear();

    for code in [409u16, 500, 503] {
        cluster.faults().fail_requests(1.0, code);
        assert_eq!(code_of(&api.get("x").await.unwrap_err()), Some(code));
    }

    cluster.faults().fail_requests(0.5, 500);
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..200 {
        match api.get("x").await {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(code_of(&e), Some(500));
                failed += 1;
            }
        }
    }
    assert!(
        ok > 40 && failed > 40,
        "about half fail: ok={ok} failed={failed}"
    );

    cluster.faults().fail_writes(1.0, 409);
    assert!(api.get("x").await.is_ok(), "reads pass");
    assert_eq!(
        code_of(
            &api.create(&PostParams::default(), &cm("y"))
                .await
                .unwrap_err()
        ),
        Some(409)
    );
    cluster.faults().clear();
    api.create(&PostParams::default(), &cm("y")).await.unwrap();
    assert!(cluster.faults().injected() >= 4);
}

#[tokio::test]
async fn ending_watches_forces_clients_to_rewatch() {
    let cluster = TestCluster::start_named("faults").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(cluster.client().unwrap(), "default");
    let mut stream = watcher(api.clone(), watcher::Config::default()).boxed();
    // The initial list completes.
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            if matches!(ev, watcher::Event::InitDone) {
                break;
            }
        }
    })
    .await
    .unwrap();
    cluster.end_watches();
    // The watcher re-lists or re-watches, then delivers new objects.
    let created = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let api2 = api.clone();
    let flag = created.clone();
    wait_until(Duration::from_secs(10), "the object is created", || {
        let api2 = api2.clone();
        let flag = flag.clone();
        async move {
            let ok = api2.create(&PostParams::default(), &cm("z")).await.is_ok();
            flag.store(ok, std::sync::atomic::Ordering::SeqCst);
            ok
        }
    })
    .await;
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = stream.try_next().await.unwrap() {
            if let watcher::Event::Apply(o) | watcher::Event::InitApply(o) = ev
                && o.metadata.name.as_deref() == Some("z")
            {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(seen && created.load(std::sync::atomic::Ordering::SeqCst));
}
