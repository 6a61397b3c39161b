//! Calibration of the testbed's API server cost model (`baton_testbed::server::cost`):
//! ConfigMap creates from 1, 8 and 32 concurrent connections against a testbed cluster with
//! the calibrated model on, printed next to the same measurement on a real kube-apiserver
//! (v1.36.2 with etcd, on this 2-core machine).
//!
//! `cargo bench -p baton-e2e --bench apiserver_cost`; `BATON_BENCH_SECONDS` sets how long each
//! row runs (default 5 s).

use std::time::{Duration, Instant};

use baton_testbed::server::TestCluster;
use baton_testbed::server::cost::{CostClass, CostProfile};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

/// A measured row: connections, creates/s, p50 and p99 latency in ms.
struct Row {
    connections: usize,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// What a real kube-apiserver did on this machine (issue 15).
const REAL: [Row; 3] = [
    Row {
        connections: 1,
        per_second: 215.0,
        p50_ms: 3.9,
        p99_ms: 12.0,
    },
    Row {
        connections: 8,
        per_second: 730.0,
        p50_ms: 9.6,
        p99_ms: 27.0,
    },
    Row {
        connections: 32,
        per_second: 834.0,
        p50_ms: 32.0,
        p99_ms: 68.0,
    },
];

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// Creates ConfigMaps from `connections` clients (one connection each) for `length`.
async fn measure(
    cluster: &TestCluster,
    connections: usize,
    length: Duration,
) -> anyhow::Result<Row> {
    let start = Instant::now();
    let end = start + length;
    let tasks = (0..connections).map(|c| {
        let client = cluster.client_without_retries();
        async move {
            let api: Api<ConfigMap> = Api::namespaced(client?, "default");
            let mut latencies = Vec::new();
            let mut n = 0usize;
            while Instant::now() < end {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("cm-{connections}-{c}-{n}")},
                    "data": {"key": "value"},
                }))?;
                let sent = Instant::now();
                api.create(&PostParams::default(), &cm).await?;
                latencies.push(sent.elapsed());
                n += 1;
            }
            anyhow::Ok(latencies)
        }
    });
    let mut all = Vec::new();
    let mut results = futures::stream::iter(tasks).buffer_unordered(connections);
    while let Some(latencies) = results.next().await {
        all.extend(latencies?);
    }
    let elapsed = start.elapsed();
    all.sort();
    Ok(Row {
        connections,
        per_second: all.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: percentile_ms(&all, 0.5),
        p99_ms: percentile_ms(&all, 0.99),
    })
}

fn print_profile(p: &CostProfile) {
    println!(
        "model: {} server workers (FIFO); per request: held log-normal(median, sigma) on a worker, then a wait without one",
        p.workers
    );
    for (name, class) in [
        ("write", CostClass::Write),
        ("get", CostClass::Read),
        ("list", CostClass::List),
        ("watch start", CostClass::Watch),
        ("other", CostClass::Other),
    ] {
        let s = p.service(class);
        println!(
            "  {name:<11} held {:?} (sigma {}), wait {:?} (sigma {}); capacity {:.0}/s",
            s.held,
            s.held_spread,
            s.wait,
            s.wait_spread,
            p.capacity(class, p.workers)
        );
    }
    println!("  watch events delayed {:?}", p.watch_delay);
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo test --benches` runs this with --bench absent: keep that quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let seconds: f64 = std::env::var("BATON_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 5.0 } else { 0.3 });
    let profile = CostProfile::kube_apiserver();
    print_profile(&profile);
    let cluster = TestCluster::start_named("calibration").await?;
    cluster.cost().enable_alone(profile);
    println!("ConfigMap creates, {seconds} s per row: model (testbed) vs real kube-apiserver");
    println!(
        "  {:>5} | {:>9} {:>8} {:>8} | {:>9} {:>8} {:>8}",
        "conns", "model/s", "p50 ms", "p99 ms", "real/s", "p50 ms", "p99 ms"
    );
    for real in &REAL {
        let m = measure(&cluster, real.connections, Duration::from_secs_f64(seconds)).await?;
        println!(
            "  {:>5} | {:>9.0} {:>8.1} {:>8.1} | {:>9.0} {:>8.1} {:>8.1}",
            m.connections,
            m.per_second,
            m.p50_ms,
            m.p99_ms,
            real.per_second,
            real.p50_ms,
            real.p99_ms
        );
    }
    Ok(())
}
