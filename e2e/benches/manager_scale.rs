//! Manager scale benchmark (issue 23): the real `baton manager` binary against testbed
//! clusters (in this process) with the calibrated API-server cost model on each cluster, over
//! shapes of workers × workloads × dispatcher.
//!
//! Build the binary in the same profile first, then run:
//!
//! ```text
//! export CARGO_TARGET_DIR=...   # the same for both commands
//! cargo build --release -p baton && cargo bench -p baton-e2e --bench manager_scale
//! ```
//!
//! Shapes (each list comma-separated; every combination runs, in order):
//!
//! - `BATON_SCALE_WORKERS` (default `3,10`), `BATON_SCALE_WORKLOADS` (default `1000`),
//!   `BATON_SCALE_DISPATCH` (default `AllAtOnce,Incremental`; Incremental with the manager's
//!   default rounds: 3 clusters per round, 5 min per round);
//! - `BATON_SCALE_PHASES` (default `throughput,pending,gate`);
//! - `BATON_SCALE_RATE` (default 50): the gate phase's submissions per second;
//!   `BATON_SCALE_GATE_WORKLOADS` (default: the shape's workloads, at most 1,000): how many it
//!   submits (at 50/s, 1,000 take 20 s);
//! - `BATON_BENCH_COST` (default here `per-cluster`: each testbed server its own budget of
//!   the calibrated kube-apiserver; `shared`, `off`);
//! - `BATON_SCALE_TRY_OVER_CAP=1`: run shapes past the CRDs' cluster caps anyway (to see the
//!   refusal); by default they are skipped with the reason printed. The caps are read from
//!   our CRDs: 100 clusters in a MultiKueueConfig and 100 `nominatedClusterNames` (upstream
//!   Kueue: 20), so every shape up to 100 workers runs. The testbed starts 51 clusters in
//!   under 3 s.
//! - `BATON_SCALE_KEEP_LOGS=<dir>`: copy each phase's manager log there (they go with the
//!   environment otherwise).
//!
//! Each shape runs three phases, each on fresh clusters and a fresh manager:
//!
//! - throughput: all workloads submitted at once (32 in flight), workers admit at once;
//!   workloads/s from the first submission to the last Admitted on the manager; the
//!   pipeline's API writes per workload (the manager cluster, and the workers' mean and max;
//!   the stand-in workers' own writes are not counted); the manager's peak RSS (`VmHWM`) and
//!   CPU seconds (utime+stime) per 1,000 workloads; reconcile latency p50/p99 from the
//!   manager's `baton_reconcile_duration_seconds` histogram (bucket resolution: the bound of
//!   the bucket that holds the quantile; a reconcile's time includes its API calls); the
//!   watches the manager holds (counted by the testbed: open watch streams not of the
//!   benchmark's client; 12 on the manager cluster and 2 per worker).
//! - pending: the same submission, but the workers admit nothing, so every replica stays
//!   pending and the manager caches workloads × replicas per workload (× workers with
//!   AllAtOnce, × min(workers, 3) with Incremental). Once the manager reports them all
//!   created and no cluster has served a request for 6 s: (manager RSS − its idle RSS,
//!   measured after it became ready and before submitting) per cached replica and per
//!   workload (each is the whole difference divided; it holds the manager Workloads too).
//! - gate: workloads submitted at `BATON_SCALE_RATE`/s, every worker signals
//!   `QuotaReservationBlocked` at once and admits when its gate opens; gate-open latency p99
//!   from the first signal written to the gate seen open on that worker. When the paced rate
//!   is past what the shape's throughput phase reached, this is queueing.
//!
//! Lines beginning with two spaces are the phases' details; the table is printed again at
//! the end.
//!
//! How long shapes took (wall clock, binary built; the 2-core machine shared with other
//! builds, load average 2–10); `W`, `N`, `D`, `P` stand for `BATON_SCALE_WORKERS`,
//! `_WORKLOADS`, `_DISPATCH`, `_PHASES`:
//!
//! - the defaults (3 and 10 workers × 1,000, both dispatchers, all phases): 4–4.5 min;
//! - `W=20` (× 1,000, both dispatchers, all phases): 3.6 min;
//! - `W=10 N=10000 D=AllAtOnce P=pending`, the issue's memory shape (100,000 pending
//!   replicas): 2.2 min; with `P=throughput`: 5–6 min (10,000 admissions at 27–33/s);
//! - `W=3 N=50000 D=AllAtOnce P=pending` (150,000 replicas; testbed side 0.9 GiB, the
//!   manager 4.5 GiB in the first round, before its caches were compacted): 5.4 min; with `P=throughput`: 8.4 min (103 workloads/s: the benchmark's own
//!   submission, 184 creates/s, sets the pace);
//! - `W=50 P=throughput,gate` (× 1,000, both dispatchers): 4.7 min (AllAtOnce 3.9 min of it).
//!
//! The largest shapes a developer can run: one phase at a time, as above. Memory is the
//! limit on this 24 GiB machine, on the testbed side more than the manager's: `W=20 N=50000
//! D=AllAtOnce P=pending` (1,000,000 replicas) took 7.4 min and held 3.1 GiB on the testbed
//! side, the manager (the image's build) 334 MiB at its peak and 297 MiB once quiet
//! (2026-11-28, load 2.2; the README's benchmark section has the other shapes). Run the
//! manager as the image runs it: the harness sets `MIMALLOC_PURGE_DELAY=0` as the
//! `Dockerfile` does.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baton_e2e::api_work::{self, BENCH_CLIENT, ClusterWork, CostMode, writes_and_reads};
use baton_e2e::bench::{
    ProcessStats, Times, Worker, bench_client, bucket_difference, bucket_quantile, cost_on,
    histogram_buckets, latencies, machine_load, percentile, process_stats, settle, stand_in,
    submit_all, watch_admitted,
};
use baton_e2e::harness::process::{BatonProcess, metric_value};
use baton_e2e::multikueue::Env;
use tokio::task::JoinHandle;

const MIB: f64 = 1024.0 * 1024.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dispatch {
    AllAtOnce,
    Incremental,
}

/// The manager's default `dispatcher.incremental.clustersPerRound`.
const INCREMENTAL_ROUND: usize = 3;

impl Dispatch {
    fn parse(s: &str) -> anyhow::Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "allatonce" => Ok(Dispatch::AllAtOnce),
            "incremental" => Ok(Dispatch::Incremental),
            other => anyhow::bail!("BATON_SCALE_DISPATCH: unknown dispatcher {other:?}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dispatch::AllAtOnce => "AllAtOnce",
            Dispatch::Incremental => "Incremental",
        }
    }

    /// The replicas each workload has while no worker admits it (within the first round).
    fn replicas(self, workers: usize) -> usize {
        match self {
            Dispatch::AllAtOnce => workers,
            Dispatch::Incremental => workers.min(INCREMENTAL_ROUND),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Shape {
    workers: usize,
    workloads: usize,
    dispatch: Dispatch,
}

impl Shape {
    fn manager_config(&self) -> String {
        format!(
            "singleClusterPreemptionTimeout: 5m\ngcInterval: 0s\nworkerClient: {{qps: 5000, burst: 5000}}\ndispatcher: {{name: {}}}\n",
            self.dispatch.name()
        )
    }
}

struct Settings {
    shapes: Vec<Shape>,
    phases: Vec<String>,
    rate: u32,
    gate_workloads: Option<usize>,
    cost: CostMode,
    try_over_cap: bool,
}

fn list<T>(
    var: &str,
    default: &str,
    parse: impl Fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let value = std::env::var(var).unwrap_or_else(|_| default.to_string());
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse)
        .collect()
}

fn number(var: &'static str) -> impl Fn(&str) -> anyhow::Result<usize> {
    move |s| {
        s.replace('_', "")
            .parse()
            .map_err(|e| anyhow::anyhow!("{var}: {s:?}: {e}"))
    }
}

impl Settings {
    /// From the environment; `benching` false (`cargo test --benches`) makes the defaults tiny.
    fn from_env(benching: bool) -> anyhow::Result<Self> {
        let (workers, workloads, dispatch) = if benching {
            ("3,10", "1000", "AllAtOnce,Incremental")
        } else {
            ("3", "20", "AllAtOnce")
        };
        let workers = list(
            "BATON_SCALE_WORKERS",
            workers,
            number("BATON_SCALE_WORKERS"),
        )?;
        let workloads = list(
            "BATON_SCALE_WORKLOADS",
            workloads,
            number("BATON_SCALE_WORKLOADS"),
        )?;
        let dispatch = list("BATON_SCALE_DISPATCH", dispatch, Dispatch::parse)?;
        let mut shapes = Vec::new();
        for &w in &workers {
            for &n in &workloads {
                for &d in &dispatch {
                    shapes.push(Shape {
                        workers: w,
                        workloads: n,
                        dispatch: d,
                    });
                }
            }
        }
        let phases = list("BATON_SCALE_PHASES", "throughput,pending,gate", |s| {
            let s = s.to_ascii_lowercase();
            anyhow::ensure!(
                ["throughput", "pending", "gate"].contains(&s.as_str()),
                "BATON_SCALE_PHASES: unknown phase {s:?}"
            );
            Ok(s)
        })?;
        let rate = std::env::var("BATON_SCALE_RATE")
            .ok()
            .map(|v| v.parse::<u32>())
            .transpose()?
            .unwrap_or(50);
        let gate_workloads = std::env::var("BATON_SCALE_GATE_WORKLOADS")
            .ok()
            .map(|v| number("BATON_SCALE_GATE_WORKLOADS")(&v))
            .transpose()?;
        let cost = match std::env::var("BATON_BENCH_COST") {
            Ok(v) => CostMode::parse(Some(&v)),
            Err(_) => CostMode::PerCluster,
        };
        Ok(Settings {
            shapes,
            phases,
            rate,
            gate_workloads,
            cost,
            try_over_cap: std::env::var("BATON_SCALE_TRY_OVER_CAP").is_ok_and(|v| v == "1"),
        })
    }

    fn runs(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }
}

/// The most clusters our CRDs accept where a shape needs them all: a MultiKueueConfig's
/// `spec.clusters` and (AllAtOnce) a Workload's `status.nominatedClusterNames`.
fn cluster_caps() -> anyhow::Result<(Option<u64>, Option<u64>)> {
    let crds = baton_crds::generate::all_crds()?;
    let max_items = |plural: &str, path: &[&str]| -> Option<u64> {
        let crd = crds.iter().find(|c| c.spec.names.plural == plural)?;
        let mut v = serde_json::to_value(&crd.spec.versions.first()?.schema).ok()?;
        v = v.get("openAPIV3Schema")?.clone();
        for p in path {
            v = v.get("properties")?.get(p)?.clone();
        }
        v.get("maxItems")?.as_u64()
    };
    Ok((
        max_items("multikueueconfigs", &["spec", "clusters"]),
        max_items("workloads", &["status", "nominatedClusterNames"]),
    ))
}

/// Why the CRDs refuse `shape`, if they do.
fn over_cap(shape: &Shape, caps: (Option<u64>, Option<u64>)) -> Option<String> {
    let w = shape.workers as u64;
    let mut why = Vec::new();
    if let Some(cap) = caps.0.filter(|c| w > *c) {
        why.push(format!(
            "MultiKueueConfig spec.clusters is capped at {cap} (crds/src/multikueue.rs)"
        ));
    }
    if let Some(cap) = caps
        .1
        .filter(|c| shape.dispatch.replicas(shape.workers) as u64 > *c)
    {
        why.push(format!(
            "Workload status.nominatedClusterNames is capped at {cap} (crds/src/workload.rs)"
        ));
    }
    (!why.is_empty()).then(|| format!("{} workers: {}", shape.workers, why.join("; ")))
}

/// A fresh environment and manager for one phase.
struct Running {
    /// Before `env`: fields drop in order, and the manager goes before its clusters.
    manager: BatonProcess,
    env: Env,
    tasks: Vec<JoinHandle<()>>,
    /// The manager's figures once ready and quiet, before any workload.
    idle: ProcessStats,
    /// `<workers>x<workloads>-<dispatch>-<phase>`, for the kept log's name.
    label: String,
}

impl Running {
    /// What the manager logged about its worker connections: (connections made, counting
    /// every relist of a worker's replicas; replica watch failures it rode out).
    fn connection_log(&self) -> (usize, usize) {
        let log = self.manager.log_text();
        (
            log.matches("worker cluster connected").count(),
            log.matches("replica watch failed").count(),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // The environment's directory, the log with it, goes with the environment.
        if let Some(dir) = std::env::var_os("BATON_SCALE_KEEP_LOGS") {
            let to = std::path::Path::new(&dir).join(format!("manager-{}.log", self.label));
            match std::fs::copy(&self.manager.log, &to) {
                Ok(_) => println!("  manager log kept: {}", to.display()),
                Err(e) => eprintln!("  cannot keep the manager log at {}: {e}", to.display()),
            }
        }
    }
}

/// Starts the clusters and the manager, and the stand-in workers when `worker` is given;
/// returns once the manager is connected to every worker, ready and quiet.
async fn start(
    shape: &Shape,
    phase: &str,
    cost: CostMode,
    worker: Option<(Worker, Times, Times)>,
) -> anyhow::Result<Running> {
    let began = Instant::now();
    let mut env = Env::start(shape.workers).await?;
    let clusters_up = began.elapsed();
    // The manager reserves quota first: sized so that it never holds the pipeline back.
    let quota = (2 * shape.workloads).max(100_000);
    env.size_manager_queue(u32::try_from(quota)?).await?;
    cost_on(&env, cost);
    let manager = env.start_manager(&shape.manager_config())?;
    let mut tasks = Vec::new();
    if let Some((mode, signalled, opened)) = worker {
        for i in 1..=shape.workers {
            tasks.push(stand_in(&env, i, mode, signalled.clone(), opened.clone()));
        }
    }
    wait_ready(&manager, shape.workers, Duration::from_secs(120)).await?;
    settle(&env, Duration::from_secs(1), Duration::from_secs(30)).await;
    let idle = process_stats(manager.id()).unwrap_or_default();
    println!(
        "  {} clusters up in {:.1}s, manager ready and quiet {:.1}s later; idle RSS {:.1} MiB",
        shape.workers + 1,
        clusters_up.as_secs_f64(),
        (began.elapsed() - clusters_up).as_secs_f64(),
        idle.rss as f64 / MIB
    );
    Ok(Running {
        env,
        manager,
        tasks,
        idle,
        label: format!(
            "{}x{}-{}-{phase}",
            shape.workers,
            shape.workloads,
            shape.dispatch.name()
        ),
    })
}

/// Waits until the manager reports its caches synced and every worker connected.
async fn wait_ready(
    manager: &BatonProcess,
    workers: usize,
    deadline: Duration,
) -> anyhow::Result<()> {
    let end = Instant::now() + deadline;
    loop {
        if manager.log_text().contains("caches synced; ready") {
            let text = manager.metrics();
            let connected = (1..=workers)
                .filter(|i| {
                    metric_value(
                        &text,
                        &format!("baton_worker_cluster_connected{{cluster=\"worker-{i}\"}}"),
                    ) == Some(1.0)
                })
                .count();
            if connected == workers {
                return Ok(());
            }
            if Instant::now() >= end {
                anyhow::bail!(
                    "the manager connected {connected} of {workers} workers in {deadline:?} (log: {})",
                    manager.log.display()
                );
            }
        } else if Instant::now() >= end {
            anyhow::bail!(
                "the manager was not ready within {deadline:?} (log: {})",
                manager.log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until `count` workloads are in `times`, at most `deadline`; returns how many are.
async fn wait_for(times: &Times, count: usize, deadline: Duration) -> usize {
    let end = Instant::now() + deadline;
    loop {
        let n = times.lock().expect("lock").len();
        if n >= count || Instant::now() >= end {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How long a phase waits, after submitting, for `units` admissions (or, pending, replica
/// creations): 2 min plus 50 ms each, at least 20 per second (10 workers × 10,000 workloads
/// reached 27 per second).
fn phase_deadline(units: usize) -> Duration {
    Duration::from_secs(120) + Duration::from_millis(50) * u32::try_from(units).unwrap_or(u32::MAX)
}

/// The manager's watches, as the testbed counts open streams not of the benchmark's client.
#[derive(Debug, Default, Clone)]
struct Watches {
    manager_cluster: usize,
    per_worker: Vec<usize>,
    /// "resource n" on the manager cluster and on worker-1.
    detail: String,
}

impl Watches {
    fn total(&self) -> usize {
        self.manager_cluster + self.per_worker.iter().sum::<usize>()
    }

    /// On each worker: `2`, or `1–2` when they differ (a watch being restarted).
    fn per_worker(&self) -> String {
        let min = self.per_worker.iter().min().copied().unwrap_or(0);
        let max = self.per_worker.iter().max().copied().unwrap_or(0);
        if min == max {
            format!("{min}")
        } else {
            format!("{min}–{max}")
        }
    }
}

fn watches(env: &Env) -> Watches {
    let mut out = Watches::default();
    let mut detail = Vec::new();
    for (cluster, tc) in api_work::testbeds(env) {
        let mut by_resource: BTreeMap<String, usize> = BTreeMap::new();
        for ((client, resource), n) in tc.open_watches().snapshot() {
            if client != BENCH_CLIENT {
                *by_resource.entry(resource).or_default() += n;
            }
        }
        let n: usize = by_resource.values().sum();
        if cluster == "manager" || cluster == "worker-1" {
            let parts: Vec<String> = by_resource
                .iter()
                .map(|(r, n)| format!("{r} {n}"))
                .collect();
            detail.push(format!("{cluster}: {}", parts.join(", ")));
        }
        if cluster == "manager" {
            out.manager_cluster = n;
        } else {
            out.per_worker.push(n);
        }
    }
    out.detail = detail.join("; ");
    out
}

/// The pipeline's (not the benchmark's) writes per workload: the manager cluster, and the
/// workers' mean and max.
fn writes_per_workload(work: &api_work::Snapshot, workloads: usize) -> (f64, f64, f64) {
    let per = |n: u64| n as f64 / workloads.max(1) as f64;
    let mut manager = 0.0;
    let mut workers = Vec::new();
    for (cluster, counts) in work {
        let (w, _) = writes_and_reads(&ClusterWork::of(counts).pipeline);
        if cluster == "manager" {
            manager = per(w);
        } else {
            workers.push(per(w));
        }
    }
    let mean = workers.iter().sum::<f64>() / workers.len().max(1) as f64;
    let max = workers.iter().copied().fold(0.0, f64::max);
    (manager, mean, max)
}

const RECONCILE: &str = "baton_reconcile_duration_seconds";

#[derive(Debug, Default, Clone)]
struct Throughput {
    rate: f64,
    writes: (f64, f64, f64),
    peak_rss: u64,
    cpu_per_1k: f64,
    reconcile: (Option<f64>, Option<f64>),
    watches: Watches,
    note: Option<String>,
}

async fn throughput(shape: &Shape, cost: CostMode) -> anyhow::Result<Throughput> {
    let n = shape.workloads;
    let mut run = start(
        shape,
        "throughput",
        cost,
        Some((Worker::Admit, Times::default(), Times::default())),
    )
    .await?;
    let (admitted, watching) = watch_admitted(&run.env);
    run.tasks.push(watching);
    let env = &run.env;
    let metrics_before = run.manager.metrics();
    let buckets_before = histogram_buckets(&metrics_before, RECONCILE);
    let before = api_work::snapshot(env);
    let start = Instant::now();
    let submitted = Times::default();
    submit_all(env, n, None, start, &submitted).await;
    let submit_time = start.elapsed();
    let got = wait_for(&admitted, n, phase_deadline(n)).await;
    let last = admitted
        .lock()
        .expect("lock")
        .values()
        .max()
        .map(|t| t.duration_since(start))
        .unwrap_or_else(|| start.elapsed());
    let after = settle(env, Duration::from_secs(2), Duration::from_secs(60)).await;
    let stats = process_stats(run.manager.id()).unwrap_or_default();
    let metrics_after = run.manager.metrics();
    let buckets = bucket_difference(
        &buckets_before,
        &histogram_buckets(&metrics_after, RECONCILE),
    );
    let grew = |series: &str| {
        metric_value(&metrics_after, series).unwrap_or(0.0)
            - metric_value(&metrics_before, series).unwrap_or(0.0)
    };
    let (reconcile_busy, cycles, cycles_busy) = (
        grew("baton_reconcile_duration_seconds_sum"),
        grew("baton_worker_scheduling_cycle_duration_seconds_count"),
        grew("baton_worker_scheduling_cycle_duration_seconds_sum"),
    );
    let lat = latencies(&submitted, &admitted);
    let work = api_work::between(&before, &after);
    let out = Throughput {
        rate: got as f64 / last.as_secs_f64(),
        writes: writes_per_workload(&work, got),
        peak_rss: stats.peak_rss,
        cpu_per_1k: (stats.cpu_seconds - run.idle.cpu_seconds) / (got.max(1) as f64 / 1000.0),
        reconcile: (
            bucket_quantile(&buckets, 0.5),
            bucket_quantile(&buckets, 0.99),
        ),
        watches: watches(env),
        note: None,
    };
    let reconciles = buckets.last().map(|b| b.1).unwrap_or(0);
    println!(
        "  throughput: admitted {got}/{n} in {:.2}s (submission took {:.2}s): {:.1} workloads/s; submit→admitted p50 {:?} p99 {:?}; {reconciles} reconciles ({:.1} per workload); manager CPU {:.1}s, peak RSS {:.1} MiB",
        last.as_secs_f64(),
        submit_time.as_secs_f64(),
        out.rate,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        reconciles as f64 / got.max(1) as f64,
        stats.cpu_seconds - run.idle.cpu_seconds,
        stats.peak_rss as f64 / MIB,
    );
    println!(
        "  manager time: reconciles {reconcile_busy:.1}s in all (wall clock, API calls included); admission loop {cycles:.0} cycles, {cycles_busy:.1}s deciding ({:.2} ms per cycle, every cycle over all workloads)",
        cycles_busy * 1000.0 / cycles.max(1.0)
    );
    print_connections(&run, shape.workers);
    println!(
        "  watches held by the manager: {} ({} on the manager cluster, {} per worker) — {}",
        out.watches.total(),
        out.watches.manager_cluster,
        out.watches.per_worker(),
        out.watches.detail
    );
    let bench_writes: u64 = work
        .values()
        .map(|c| writes_and_reads(&ClusterWork::of(c).bench).0)
        .sum();
    println!(
        "  pipeline writes per workload: manager {:.2}, workers mean {:.2} max {:.2}; the benchmark's own {:.2}",
        out.writes.0,
        out.writes.1,
        out.writes.2,
        bench_writes as f64 / got.max(1) as f64
    );
    print_requests(&work, got);
    let note = (got < n).then(|| format!("throughput: only {got} of {n} workloads were admitted"));
    Ok(Throughput { note, ..out })
}

#[derive(Debug, Default, Clone)]
struct Pending {
    replicas: usize,
    per_replica: f64,
    per_workload: f64,
    note: Option<String>,
}

/// The replicas the manager reports created (`baton_replicas_created_total`, all clusters).
fn replicas_created(manager: &BatonProcess) -> usize {
    manager
        .metrics()
        .lines()
        .filter(|l| l.starts_with("baton_replicas_created_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as usize
}

async fn pending(shape: &Shape, cost: CostMode) -> anyhow::Result<Pending> {
    let n = shape.workloads;
    let expected = n * shape.dispatch.replicas(shape.workers);
    let run = start(shape, "pending", cost, None).await?;
    let env = &run.env;
    let start = Instant::now();
    submit_all(env, n, None, start, &Times::default()).await;
    let end = start + phase_deadline(expected);
    let mut created = replicas_created(&run.manager);
    while created < expected && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(500)).await;
        created = replicas_created(&run.manager);
    }
    let all_created = start.elapsed();
    // The dispatch note of a workload not admitted within 5 s comes after its replicas.
    settle(env, Duration::from_secs(6), Duration::from_secs(120)).await;
    let stats = process_stats(run.manager.id()).unwrap_or_default();
    let grown = stats.rss as f64 - run.idle.rss as f64;
    let out = Pending {
        replicas: created,
        per_replica: grown / created.max(1) as f64,
        per_workload: grown / n as f64,
        note: None,
    };
    println!(
        "  pending: {created}/{expected} replicas created in {:.1}s ({:.0}/s); quiet after {:.1}s; manager RSS {:.1} MiB (idle {:.1}, peak {:.1}): {:.0} bytes per cached replica, {:.0} per workload",
        all_created.as_secs_f64(),
        created as f64 / all_created.as_secs_f64(),
        start.elapsed().as_secs_f64(),
        stats.rss as f64 / MIB,
        run.idle.rss as f64 / MIB,
        stats.peak_rss as f64 / MIB,
        out.per_replica,
        out.per_workload,
    );
    print_replica_size(env).await;
    print_connections(&run, shape.workers);
    let note = (created < expected)
        .then(|| format!("pending: only {created} of {expected} replicas were created"));
    Ok(Pending { note, ..out })
}

/// The requests per workload by verb and resource, of the manager cluster and worker-1 (the
/// other workers look like worker-1).
fn print_requests(work: &api_work::Snapshot, workloads: usize) {
    let mut shown = false;
    for line in api_work::report(work, workloads) {
        if let Some(cluster) = line.trim_start().split(':').next()
            && !line.starts_with("      ")
        {
            shown = cluster == "manager" || cluster == "worker-1";
        }
        if shown {
            println!("{line}");
        }
    }
}

fn print_connections(run: &Running, workers: usize) {
    let (connections, watch_failures) = run.connection_log();
    println!(
        "  manager log: {connections} worker connections for {workers} workers (each relist of a worker's replicas counts one), {watch_failures} replica watch failures ridden out",
    );
}

/// How large one replica is as the API serves it (JSON), and its managedFields part: what
/// the manager's cache holds per replica, before deserialisation.
async fn print_replica_size(env: &Env) {
    let api: kube::Api<baton_crds::workload::Workload> = kube::Api::namespaced(
        bench_client(env.testbed_worker(1), env.worker_client(1)),
        &env.namespace,
    );
    if let Ok(Some(replica)) = api.get_opt("wl-00000").await {
        println!(
            "  one replica as served: {} bytes of JSON, of which managedFields {} bytes",
            json_len(&replica),
            json_len(&replica.metadata.managed_fields),
        );
    }
}

fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0)
}

#[derive(Debug, Default, Clone)]
struct Gate {
    workloads: usize,
    p50: Duration,
    p99: Duration,
    note: Option<String>,
}

async fn gate(shape: &Shape, settings: &Settings) -> anyhow::Result<Gate> {
    let count = settings.gate_workloads.unwrap_or(shape.workloads.min(1000));
    let (signalled, opened) = (Times::default(), Times::default());
    let mut run = start(
        shape,
        "gate",
        settings.cost,
        Some((
            Worker::SignalThenAdmitWhenOpen,
            signalled.clone(),
            opened.clone(),
        )),
    )
    .await?;
    let (admitted, watching) = watch_admitted(&run.env);
    run.tasks.push(watching);
    let env = &run.env;
    let start = Instant::now();
    submit_all(env, count, Some(settings.rate), start, &Times::default()).await;
    let got = wait_for(&admitted, count, Duration::from_secs(120)).await;
    let gate = latencies(&signalled, &opened);
    let out = Gate {
        workloads: gate.len(),
        p50: percentile(&gate, 0.5),
        p99: percentile(&gate, 0.99),
        note: None,
    };
    println!(
        "  gate, paced at {}/s: {got}/{count} admitted in {:.1}s; gate latency (first signal written → gate open seen on the worker) over {}: p50 {:?} p90 {:?} p99 {:?} max {:?}",
        settings.rate,
        start.elapsed().as_secs_f64(),
        gate.len(),
        out.p50,
        percentile(&gate, 0.9),
        out.p99,
        gate.last().copied().unwrap_or_default(),
    );
    print_connections(&run, shape.workers);
    let note =
        (got < count).then(|| format!("gate: only {got} of {count} workloads were admitted"));
    Ok(Gate { note, ..out })
}

#[derive(Default)]
struct Row {
    shape: Option<Shape>,
    load: String,
    throughput: Option<Throughput>,
    pending: Option<Pending>,
    gate: Option<Gate>,
    took: Duration,
    notes: Vec<String>,
}

const HEADER: &str = "| workers | workloads | dispatch | workloads/s | writes/wl manager | writes/wl worker mean / max | manager peak RSS MiB | manager CPU s / 1k wl | reconcile p50 / p99 (bucket bound) | watches (manager cluster + per worker) | pending: bytes / cached replica | bytes / workload | gate-open p99 (paced) | took | load at start |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

fn ms(bound: Option<f64>) -> String {
    match bound {
        None => "–".into(),
        Some(b) if b.is_infinite() => "> max bucket".into(),
        Some(b) => format!("≤ {}", b * 1000.0),
    }
}

impl Row {
    fn line(&self) -> String {
        let Some(s) = self.shape else {
            return String::new();
        };
        let dash = || "–".to_string();
        let t = self.throughput.as_ref();
        let p = self.pending.as_ref();
        let mut line = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0}s | {} |",
            s.workers,
            s.workloads,
            s.dispatch.name(),
            t.map(|t| format!("{:.1}", t.rate)).unwrap_or_else(dash),
            t.map(|t| format!("{:.2}", t.writes.0)).unwrap_or_else(dash),
            t.map(|t| format!("{:.2} / {:.2}", t.writes.1, t.writes.2))
                .unwrap_or_else(dash),
            t.map(|t| format!("{:.0}", t.peak_rss as f64 / MIB))
                .unwrap_or_else(dash),
            t.map(|t| format!("{:.2}", t.cpu_per_1k))
                .unwrap_or_else(dash),
            t.map(|t| format!("{} / {} ms", ms(t.reconcile.0), ms(t.reconcile.1)))
                .unwrap_or_else(dash),
            t.map(|t| format!(
                "{} ({} + {} each)",
                t.watches.total(),
                t.watches.manager_cluster,
                t.watches.per_worker()
            ))
            .unwrap_or_else(dash),
            p.map(|p| format!("{:.0} ({} replicas)", p.per_replica, p.replicas))
                .unwrap_or_else(dash),
            p.map(|p| format!("{:.0}", p.per_workload))
                .unwrap_or_else(dash),
            self.gate
                .as_ref()
                .map(|g| format!(
                    "{:.1} ms (p50 {:.1}, n={})",
                    g.p99.as_secs_f64() * 1000.0,
                    g.p50.as_secs_f64() * 1000.0,
                    g.workloads
                ))
                .unwrap_or_else(dash),
            self.took.as_secs_f64(),
            self.load,
        );
        for note in &self.notes {
            // API errors repeat their status three times: the first 400 characters say it.
            let note: String = note.chars().take(400).collect();
            line.push_str(&format!(
                "\n  note ({} × {} {}): {note}",
                s.workers,
                s.workloads,
                s.dispatch.name()
            ));
        }
        line
    }
}

async fn run_shape(shape: Shape, settings: &Settings, caps: (Option<u64>, Option<u64>)) -> Row {
    let began = Instant::now();
    let mut row = Row {
        shape: Some(shape),
        load: machine_load().0,
        ..Row::default()
    };
    println!(
        "shape: {} workers × {} workloads, {} (load {})",
        shape.workers,
        shape.workloads,
        shape.dispatch.name(),
        row.load
    );
    if let Some(why) = over_cap(&shape, caps) {
        if settings.try_over_cap {
            println!("  past the CRDs' caps, tried anyway: {why}");
        } else {
            println!("  skipped: {why}");
            row.notes.push(format!("skipped: {why}"));
            return row;
        }
    }
    if settings.runs("throughput") {
        match throughput(&shape, settings.cost).await {
            Ok(t) => {
                row.notes.extend(t.note.clone());
                row.throughput = Some(t);
            }
            Err(e) => row.notes.push(format!("throughput: {e:#}")),
        }
        print_testbed_memory();
    }
    if settings.runs("pending") {
        match pending(&shape, settings.cost).await {
            Ok(p) => {
                row.notes.extend(p.note.clone());
                row.pending = Some(p);
            }
            Err(e) => row.notes.push(format!("pending: {e:#}")),
        }
        print_testbed_memory();
    }
    if settings.runs("gate") {
        match gate(&shape, settings).await {
            Ok(g) => {
                row.notes.extend(g.note.clone());
                row.gate = Some(g);
            }
            Err(e) => row.notes.push(format!("gate: {e:#}")),
        }
        print_testbed_memory();
    }
    row.took = began.elapsed();
    row
}

/// The testbed side (this process: every cluster, the stand-ins, the benchmark's clients).
fn print_testbed_memory() {
    if let Some(s) = process_stats(std::process::id()) {
        println!(
            "  testbed side (this process): RSS {:.0} MiB, peak {:.0} MiB, CPU {:.0}s so far",
            s.rss as f64 / MIB,
            s.peak_rss as f64 / MIB,
            s.cpu_seconds
        );
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // `cargo test --benches` runs this with --bench absent: keep that quick.
    let benching = std::env::args().any(|a| a == "--bench");
    let settings = Settings::from_env(benching)?;
    let (load, cores) = machine_load();
    println!(
        "manager scale: cost model {:?} (BATON_BENCH_COST), gate phase at {}/s; machine: {cores} cores, load average {load}",
        settings.cost, settings.rate
    );
    let caps = cluster_caps()?;
    let mut rows = Vec::new();
    for shape in settings.shapes.clone() {
        let row = run_shape(shape, &settings, caps).await;
        println!("{HEADER}\n{}", row.line());
        rows.push(row);
    }
    let (load, _) = machine_load();
    println!("\nall shapes (load average at the end {load}):\n{HEADER}");
    for row in &rows {
        println!("{}", row.line());
    }
    Ok(())
}
