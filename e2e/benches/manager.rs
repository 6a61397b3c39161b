//! Manager benchmarks on the testbed, through the real `baton manager` binary (build it in the
//! same profile first: `cargo build --release -p baton && cargo bench -p baton-e2e --bench manager`).
//!
//! - throughput: 1,000 Workloads through 1 manager + 3 workers whose admission is played by a
//!   fast stand-in (each worker admits every replica at once); reports workloads/s from
//!   submission to Admitted on the manager.
//! - gate latency: 1,000 Workloads × 3 workers where every worker signals
//!   `QuotaReservationBlocked` at once; reports the time from the first signal being written to
//!   the gate being open on that worker (p50/p99).
//!
//! - submission: how fast the benchmark's own client creates the Workloads (no manager).
//!
//! The testbed's API server cost model is on (`BATON_BENCH_COST`: `shared`, the default, one
//! budget for all four clusters as on one machine; `per-cluster`; `off`). Each phase prints
//! the API requests per admitted workload by cluster, verb and resource (from the testbed's
//! counters; the benchmark's own clients apart) and the machine's limit from them.
//! `BATON_BENCH_WORKLOADS` overrides the count.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_e2e::api_work::{self, CostMode};
use baton_e2e::bench::{
    SUBMIT_CONCURRENCY, Times, Worker, cost_on, latencies, percentile, print_manager_metrics,
    print_work, settle, stand_in, submit_all, watch_admitted,
};
use baton_e2e::multikueue::Env;
use baton_testbed::server::cost::CostProfile;

/// How fast the benchmark's client creates `count` Workloads with no manager running.
async fn submission(count: usize, mode: CostMode) -> anyhow::Result<()> {
    let env = Env::start(3).await?;
    cost_on(&env, mode);
    let submitted: Times = Arc::default();
    let start = Instant::now();
    submit_all(&env, count, None, start, &submitted).await;
    let took = start.elapsed();
    println!(
        "  {count} creates in {:.2}s: {:.0} creates/s ({SUBMIT_CONCURRENCY} in flight)",
        took.as_secs_f64(),
        count as f64 / took.as_secs_f64()
    );
    Ok(())
}

/// `rate`: submissions per second, or `None` for all at once (32 in flight).
async fn run(count: usize, mode: Worker, rate: Option<u32>, cost: CostMode) -> anyhow::Result<()> {
    let mut env = Env::start(3).await?;
    // The manager reserves quota first: sized so that it never holds the pipeline back.
    env.size_manager_queue(100_000).await?;
    let workers = cost_on(&env, cost);
    let manager = env.start_manager("singleClusterPreemptionTimeout: 5m\ngcInterval: 0s\nworkerClient: {qps: 5000, burst: 5000}\n")?;
    let signalled: Times = Arc::default();
    let opened: Times = Arc::default();
    for i in 1..=3 {
        stand_in(&env, i, mode, signalled.clone(), opened.clone());
    }
    // Wait until the manager is connected to the workers.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (admitted, _watching) = watch_admitted(&env);

    let before = api_work::snapshot(&env);
    let start = Instant::now();
    let submitted: Times = Arc::default();
    submit_all(&env, count, rate, start, &submitted).await;
    let submit_time = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(300);
    while admitted.lock().expect("lock").len() < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let total = start.elapsed();
    let after = settle(&env, Duration::from_secs(2), Duration::from_secs(30)).await;
    let waits = latencies(&submitted, &admitted);
    let admitted = admitted.lock().expect("lock").clone();
    let last = admitted
        .values()
        .max()
        .map(|t| t.duration_since(start))
        .unwrap_or(total);
    println!(
        "  admitted {}/{count} in {:.2}s (submission took {:.2}s): {:.1} workloads/s; submit→admitted p50 {:?} p99 {:?}",
        admitted.len(),
        last.as_secs_f64(),
        submit_time.as_secs_f64(),
        admitted.len() as f64 / last.as_secs_f64(),
        percentile(&waits, 0.5),
        percentile(&waits, 0.99),
    );
    if mode == Worker::SignalThenAdmitWhenOpen {
        let gate = latencies(&signalled, &opened);
        println!(
            "  gate latency (first signal written → gate open seen on the worker) over {} workloads: p50 {:?} p90 {:?} p99 {:?} max {:?}",
            gate.len(),
            percentile(&gate, 0.5),
            percentile(&gate, 0.9),
            percentile(&gate, 0.99),
            gate.last().copied().unwrap_or_default(),
        );
    }
    print_manager_metrics(&manager);
    print_work(
        cost,
        workers,
        &api_work::between(&before, &after),
        admitted.len(),
        admitted.len() as f64 / last.as_secs_f64(),
    );
    anyhow::ensure!(
        admitted.len() == count,
        "only {} of {count} workloads were admitted",
        admitted.len()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo test --benches` runs this with --bench absent: keep that quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let count: usize = std::env::var("BATON_BENCH_WORKLOADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if benching { 1000 } else { 20 });
    let cost = CostMode::parse(std::env::var("BATON_BENCH_COST").ok().as_deref());
    println!(
        "API server cost model: {cost:?} (BATON_BENCH_COST=shared|per-cluster|off); {:?}",
        CostProfile::kube_apiserver()
    );
    println!("submission: the benchmark's client alone creates {count} workloads (no manager)");
    submission(count, cost).await?;
    println!(
        "manager throughput: {count} workloads submitted at once, 1 manager + 3 workers (stand-in workers admit at once)"
    );
    run(count, Worker::Admit, None, cost).await?;
    println!(
        "gate latency, paced: {count} workloads at 50/s x 3 workers, every worker signals at once"
    );
    run(count, Worker::SignalThenAdmitWhenOpen, Some(50), cost).await?;
    println!(
        "gate latency, burst: {count} workloads submitted at once x 3 workers (queueing included)"
    );
    run(count, Worker::SignalThenAdmitWhenOpen, None, cost).await?;
    Ok(())
}
