//! Memory an admission cycle's snapshot takes at scale: `cargo bench -p baton --bench
//! cycle_memory`.
//!
//! Holds 50,000 manager Workloads with quota reserved (the fixture the cache benchmark
//! reads, as the manager caches it), then builds the admission loop's snapshot from them as
//! every cycle does, and prints the resident growth the build caused, per workload: when no
//! workload waits, and when one waits in a queue that never preempts (the admitted ones are
//! their usage alone), and when one waits in a queue that preempts within itself (they are
//! kept as models, for victims). The manager runs a cycle whenever one of its Workloads
//! changes, so this is held on top of its caches through much of a burst (issue 23). Peak
//! resident memory is reset before each build (`/proc/self/clear_refs`); the machine's load
//! is printed with the figures.

use std::sync::Arc;
use std::time::Instant;

use baton::admission::build::{Objects, build};
use baton::manager::shell::stores::stripped_manager_workload;
use baton_crds::{ClusterQueue, LocalQueue, ResourceFlavor, Workload};

mod common;

const WORKLOADS: usize = 50_000;

/// The manager's allocator, as in `main.rs`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> anyhow::Result<Arc<T>> {
    Ok(Arc::new(serde_json::from_value(value)?))
}

/// Builds the snapshot of `objects` and prints what the build held and peaked at.
fn measure(what: &str, objects: &Objects<'_>) {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = common::status_kb("VmRSS:");
    let started = Instant::now();
    let built = build(objects);
    let took = started.elapsed();
    let held = common::status_kb("VmRSS:").saturating_sub(before);
    let models = built.snapshot.admitted.len();
    drop(built);
    let peak = common::status_kb("VmHWM:").saturating_sub(before);
    println!(
        "{WORKLOADS} admitted workloads, {what} ({models} kept as models): the build took \
         {:.0} ms, held {} bytes per admitted workload when done, peaked at {}",
        took.as_secs_f64() * 1000.0,
        held * 1024 / WORKLOADS as u64,
        peak * 1024 / WORKLOADS as u64
    );
}

fn main() -> anyhow::Result<()> {
    let fixture = include_str!("fixtures/manager-workload.json");
    let workloads: Vec<Arc<Workload>> = (0..WORKLOADS)
        .map(|n| {
            let mut wl: Workload = serde_json::from_str(fixture)?;
            wl.metadata.name = Some(format!("wl-{n:06}"));
            Ok(Arc::new(stripped_manager_workload(wl)))
        })
        .collect::<anyhow::Result<_>>()?;
    let queue = |preemption: serde_json::Value| {
        object::<ClusterQueue>(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {"namespaceSelector": {}, "preemption": preemption, "resourceGroups": [{"coveredResources": ["cpu"],
            "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": 100000}]}]}]}}))
    };
    let cq = queue(serde_json::json!({}))?;
    let preempting = queue(serde_json::json!({"withinClusterQueue": "LowerPriority"}))?;
    let lq = object::<LocalQueue>(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": "default"},
        "spec": {"clusterQueue": "cluster-queue"}}))?;
    let flavor = object::<ResourceFlavor>(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"}, "spec": {}}))?;
    println!("{}", common::machine());
    let (cqs, lqs, flavors) = ([cq], [lq], [flavor]);
    let preempting = [preempting];
    let objects = |workloads, cluster_queues| Objects {
        workloads,
        cluster_queues,
        local_queues: &lqs,
        flavors: &flavors,
        workload_classes: &[],
        pod_classes: &[],
        budgets: &[],
        namespaces: &[],
    };
    measure("none waits", &objects(&workloads, &cqs));
    let mut waiting: Workload = serde_json::from_str(fixture)?;
    waiting.metadata.name = Some("waiting".into());
    waiting.status = None;
    let mut with_waiting = workloads.clone();
    with_waiting.push(Arc::new(stripped_manager_workload(waiting)));
    // It may not preempt: the admitted workloads are their usage alone.
    measure(
        "one waits in a queue that never preempts",
        &objects(&with_waiting, &cqs),
    );
    // It may: they are kept as models (victims).
    measure(
        "one waits in a queue that preempts",
        &objects(&with_waiting, &preempting),
    );
    Ok(())
}
