//! `baton-testbed-bench`: throughput and memory figures of the testbed API server.
//! The server runs on a single-threaded runtime (one core); clients run on another thread.
//! Build with `--release` for meaningful numbers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use baton_testbed::server::{ClusterOptions, TestCluster};
use clap::Parser;
use futures::{StreamExt, stream};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(version, about = "Benchmark the testbed API server")]
struct Args {
    /// Objects to create over HTTP.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Watchers for the fan-out figure.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Writes observed by every watcher.
    #[arg(long, default_value_t = 1_000)]
    fanout_writes: usize,
}

fn workload(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "app": "bench"}},
        "spec": {
            "queueName": "user-queue",
            "priority": 100,
            "podSets": [{"name": "main", "count": 4, "template": {"spec": {"containers": [
                {"name": "c", "image": "registry.example/bench:1.0", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ]}}}],
            "preemptionGates": [{"name": "kueue.x-k8s.io/multikueue"}]
        }
    })
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Starts a cluster on a dedicated single-threaded runtime and returns it.
fn start_server(name: &str, history_limit: usize) -> anyhow::Result<Arc<TestCluster>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let name = name.to_string();
    std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = tx.send(Err(anyhow::anyhow!(e)));
                return;
            }
        };
        rt.block_on(async move {
            let options = ClusterOptions {
                name,
                history_limit,
                ..ClusterOptions::default()
            };
            match TestCluster::start(options).await {
                Ok(c) => {
                    let c = Arc::new(c);
                    let _ = tx.send(Ok(c.clone()));
                    std::future::pending::<()>().await;
                }
                Err(e) => {
                    let _ = tx.send(Err(anyhow::anyhow!(e)));
                }
            }
        });
    });
    rx.recv().context("server thread")?
}

/// Removes every `x-kubernetes-validations` (CEL rules) from a CRD.
fn strip_cel(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("x-kubernetes-validations");
            m.values_mut().for_each(strip_cel);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cel),
        _ => {}
    }
}

fn per_sec(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let crds = baton_crds::generate::all_crds()?;

    // Memory: 10k Workloads stored, measured as resident-set growth, in-process (no client).
    let mem_cluster = start_server("memory", 1)?;
    mem_cluster.install_crds(&crds)?;
    let before = rss_bytes();
    let mut json_bytes = 0usize;
    for i in 0..10_000 {
        let obj = workload("default", &format!("wl-{i:05}"));
        let stored = mem_cluster.apply_object("kueue.x-k8s.io", "v1beta2", "workloads", obj)?;
        json_bytes += stored.to_string().len();
    }
    let after = rss_bytes();
    let mib = (after.saturating_sub(before)) as f64 / (1024.0 * 1024.0);
    println!(
        "memory: 10k Workloads: RSS +{mib:.1} MiB (stored JSON {:.1} MiB, {} B/object)",
        json_bytes as f64 / 1048576.0,
        json_bytes / 10_000
    );

    // In-process write throughput (store + admission, no HTTP), one thread.
    let direct = start_server("direct", 100_000)?;
    direct.install_crds(&crds)?;
    let t = Instant::now();
    for i in 0..args.objects {
        direct.apply_object(
            "kueue.x-k8s.io",
            "v1beta2",
            "workloads",
            workload("default", &format!("d-{i}")),
        )?;
    }
    println!(
        "in-process creates: {:.0}/s",
        per_sec(args.objects, t.elapsed())
    );
    let t = Instant::now();
    for i in 0..args.objects {
        let mut obj = workload("default", &format!("d-{i}"));
        obj["spec"]["priority"] = json!(200);
        direct.apply_object("kueue.x-k8s.io", "v1beta2", "workloads", obj)?;
    }
    println!(
        "in-process updates: {:.0}/s",
        per_sec(args.objects, t.elapsed())
    );

    // The same without CEL rules: the server's own ceiling (CEL evaluation dominates above).
    let nocel = start_server("nocel", 100_000)?;
    for crd in &crds {
        let mut v = serde_json::to_value(crd)?;
        strip_cel(&mut v);
        nocel.apply_object("apiextensions.k8s.io", "v1", "customresourcedefinitions", v)?;
    }
    let t = Instant::now();
    for i in 0..args.objects {
        nocel.apply_object(
            "kueue.x-k8s.io",
            "v1beta2",
            "workloads",
            workload("default", &format!("n-{i}")),
        )?;
    }
    println!(
        "in-process creates without CEL rules: {:.0}/s",
        per_sec(args.objects, t.elapsed())
    );
    let t = Instant::now();
    for i in 0..args.objects {
        let mut obj = workload("default", &format!("n-{i}"));
        obj["spec"]["priority"] = json!(200);
        nocel.apply_object("kueue.x-k8s.io", "v1beta2", "workloads", obj)?;
    }
    println!(
        "in-process updates without CEL rules: {:.0}/s",
        per_sec(args.objects, t.elapsed())
    );

    // HTTP figures: server on one core, clients on another.
    let cluster = start_server("bench", 100_000)?;
    cluster.install_crds(&crds)?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    client_rt.block_on(async {
        let client = cluster.client()?;
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "Workload"), "workloads");
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);

        let t = Instant::now();
        let results: Vec<kube::Result<DynamicObject>> = stream::iter(0..args.objects)
            .map(|i| {
                let api = api.clone();
                async move {
                    let obj: DynamicObject = serde_json::from_value(workload("default", &format!("wl-{i}"))).map_err(kube::Error::SerdeError)?;
                    api.create(&PostParams::default(), &obj).await
                }
            })
            .buffer_unordered(args.concurrency)
            .collect()
            .await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        println!("HTTP creates: {:.0}/s ({} objects, {} in flight, {failed} failed)", per_sec(args.objects, t.elapsed()), args.objects, args.concurrency);

        let t = Instant::now();
        let results: Vec<kube::Result<DynamicObject>> = stream::iter(0..args.objects)
            .map(|i| {
                let api = api.clone();
                async move {
                    let patch = json!({"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "Bench", "message": format!("{i}"), "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
                    api.patch_status(&format!("wl-{i}"), &PatchParams::default(), &Patch::Merge(patch)).await
                }
            })
            .buffer_unordered(args.concurrency)
            .collect()
            .await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        println!("HTTP status patches: {:.0}/s ({failed} failed)", per_sec(args.objects, t.elapsed()));

        // Watch fan-out: every watcher sees every write.
        let rv = cluster.resource_version().to_string();
        let mut handles = Vec::new();
        for _ in 0..args.watchers {
            let api = api.clone();
            let rv = rv.clone();
            let want = args.fanout_writes;
            handles.push(tokio::spawn(async move {
                let mut s = api.watch(&WatchParams::default().labels("fanout=yes"), &rv).await?.boxed();
                let mut seen = 0;
                while seen < want {
                    match s.next().await {
                        Some(Ok(WatchEvent::Added(_))) => seen += 1,
                        Some(Ok(_)) => {}
                        Some(Err(e)) => return Err(anyhow::anyhow!(e)),
                        None => return Err(anyhow::anyhow!("watch ended after {seen}")),
                    }
                }
                anyhow::Ok(seen)
            }));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = Instant::now();
        let _: Vec<kube::Result<DynamicObject>> = stream::iter(0..args.fanout_writes)
            .map(|i| {
                let api = api.clone();
                async move {
                    let mut obj = workload("default", &format!("fan-{i}"));
                    obj["metadata"]["labels"]["fanout"] = json!("yes");
                    let obj: DynamicObject = serde_json::from_value(obj).map_err(kube::Error::SerdeError)?;
                    api.create(&PostParams::default(), &obj).await
                }
            })
            .buffer_unordered(args.concurrency)
            .collect()
            .await;
        let mut delivered = 0;
        for h in handles {
            delivered += h.await??;
        }
        println!(
            "watch fan-out: {} watchers x {} writes: {:.0} events/s delivered ({:.2}s)",
            args.watchers,
            args.fanout_writes,
            per_sec(delivered, t.elapsed()),
            t.elapsed().as_secs_f64()
        );
        anyhow::Ok(())
    })?;
    Ok(())
}
