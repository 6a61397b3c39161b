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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, Workload};
use baton_e2e::api_work::{self, BENCH_CLIENT, CostMode};
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::multikueue::Env;
use baton_testbed::server::TestCluster;
use baton_testbed::server::cost::CostProfile;
use chrono::Utc;
use futures::StreamExt;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};

#[derive(Clone, Copy, PartialEq)]
enum Worker {
    /// Admit every replica at once.
    Admit,
    /// Signal gated at once; admit when the gate opens.
    SignalThenAdmitWhenOpen,
}

type Times = Arc<Mutex<HashMap<String, Instant>>>;

/// A client whose requests the testbed counts as the benchmark's own (`BENCH_CLIENT`), or
/// `fallback` on real clusters.
fn bench_client(testbed: Option<&TestCluster>, fallback: Client) -> Client {
    let Some(tc) = testbed else {
        return fallback;
    };
    let tagged = tc.client_config().ok().and_then(|mut config| {
        let agent = axum::http::HeaderValue::from_str(&format!("{BENCH_CLIENT}/1")).ok()?;
        config.headers.push((axum::http::header::USER_AGENT, agent));
        Client::try_from(config).ok()
    });
    tagged.unwrap_or(fallback)
}

fn manager_bench_client(env: &Env) -> Client {
    bench_client(
        env.clusters.manager().testbed.as_deref(),
        env.manager_client(),
    )
}

/// A Workload of one pod of one CPU (as `Env::submit`), submitted with the benchmark's client.
async fn submit(api: &Api<Workload>, namespace: &str, name: &str) -> anyhow::Result<()> {
    let wl: Workload = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }))?;
    api.create(&PostParams::default(), &wl).await?;
    Ok(())
}

/// Submissions in flight at once.
const SUBMIT_CONCURRENCY: usize = 32;

/// Creates `count` Workloads, `SUBMIT_CONCURRENCY` at a time, paced at `rate` per second
/// when given; records when each was sent.
async fn submit_all(env: &Env, count: usize, rate: Option<u32>, start: Instant, submitted: &Times) {
    let api: Api<Workload> = Api::namespaced(manager_bench_client(env), &env.namespace);
    let pace = rate.map(|r| Duration::from_secs_f64(1.0 / f64::from(r.max(1))));
    futures::stream::iter(0..count)
        .then(|n| async move {
            if let Some(pace) = pace {
                let due = start + pace.mul_f64(n as f64);
                tokio::time::sleep_until(due.into()).await;
            }
            n
        })
        .map(|n| {
            let (api, namespace) = (&api, &env.namespace);
            let submitted = submitted.clone();
            async move {
                let name = format!("wl-{n:05}");
                submitted
                    .lock()
                    .expect("lock")
                    .insert(name.clone(), Instant::now());
                submit(api, namespace, &name).await
            }
        })
        .buffer_unordered(SUBMIT_CONCURRENCY)
        .for_each(|r| async move {
            if let Err(e) = r {
                eprintln!("submit failed: {e}");
            }
        })
        .await;
}

/// The cost model as the environment variable asks; returns the workers per budget.
fn cost_on(env: &Env, mode: CostMode) -> Option<usize> {
    api_work::apply_cost(env, mode, &CostProfile::kube_apiserver())
}

/// Waits until no testbed cluster has served a request for `quiet` (work trailing the last
/// admission, e.g. removing the losers' replicas), at most `deadline`.
async fn settle(env: &Env, quiet: Duration, deadline: Duration) -> api_work::Snapshot {
    let end = Instant::now() + deadline;
    let mut last = api_work::snapshot(env);
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = api_work::snapshot(env);
        // Open watches send bookmarks but make no requests: equal counts mean no work.
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet || Instant::now() >= end {
            return last;
        }
    }
}

/// Prints the requests per admitted workload and the machine's limit they imply.
fn print_work(
    mode: CostMode,
    workers: Option<usize>,
    work: &api_work::Snapshot,
    admitted: usize,
    achieved: f64,
) {
    if work.is_empty() {
        return;
    }
    println!(
        "  API requests per admitted workload (pipeline = not {BENCH_CLIENT}; watch starts not counted as reads):"
    );
    for line in api_work::report(work, admitted) {
        println!("{line}");
    }
    if let Some(workers) = workers {
        let profile = CostProfile::kube_apiserver();
        let l = api_work::limits(&profile, mode, workers, work, admitted);
        println!(
            "  machine limit ({mode:?} budget of {workers} server workers): {:.1} workloads/s from writes alone, {:.1} from all requests; achieved {achieved:.1} = {:.0}% of the latter",
            l.writes_only,
            l.all_requests,
            100.0 * achieved / l.all_requests
        );
    }
}

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

/// A stand-in worker scheduler: reacts to replicas on one worker cluster.
fn stand_in(env: &Env, i: usize, mode: Worker, signalled: Times, opened: Times) {
    let client = bench_client(env.testbed_worker(i), env.worker_client(i));
    let api: Api<Workload> = Api::all(client.clone());
    let env_workers: Api<Workload> = Api::namespaced(client, &env.namespace);
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(replica)) = events.next().await {
            let name = replica.name_any();
            let status = replica.status.clone().unwrap_or_default();
            let reserved = status
                .conditions
                .iter()
                .any(|c| c.type_ == "QuotaReserved" && c.status == "True");
            let blocked = status
                .conditions
                .iter()
                .any(|c| c.type_ == "QuotaReservationBlocked");
            let open = gate_state(&replica, MULTIKUEUE_GATE) == Some(GateState::Open);
            if reserved {
                continue;
            }
            let api = env_workers.clone();
            let (signalled, opened) = (signalled.clone(), opened.clone());
            tokio::spawn(async move {
                let write = |f: Box<dyn Fn(&mut baton_crds::workload::WorkloadStatus) + Send>| {
                    let api = api.clone();
                    let name = name.clone();
                    async move {
                        for _ in 0..10 {
                            let Ok(mut current) = api.get(&name).await else {
                                return false;
                            };
                            f(current.status.get_or_insert_with(Default::default));
                            match api
                                .replace_status(&name, &Default::default(), &current)
                                .await
                            {
                                Ok(_) => return true,
                                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                                Err(_) => return false,
                            }
                        }
                        false
                    }
                };
                let admit = || {
                    write(Box::new(|s| {
                        let now = Utc::now();
                        for (t, r) in [("QuotaReserved", "QuotaReserved"), ("Admitted", "Admitted")]
                        {
                            baton_crds::conditions::set_condition(
                                &mut s.conditions,
                                baton_crds::conditions::NewCondition::new(
                                    t,
                                    baton_crds::conditions::ConditionStatus::True,
                                    r,
                                    "stand-in",
                                ),
                                now,
                            );
                        }
                        s.admission = Some(baton_crds::workload::Admission {
                            cluster_queue: "cluster-queue".into(),
                            pod_set_assignments: vec![baton_crds::workload::PodSetAssignment {
                                name: "main".into(),
                                count: Some(1),
                                ..Default::default()
                            }],
                        });
                    }))
                };
                match mode {
                    Worker::Admit => {
                        admit().await;
                    }
                    Worker::SignalThenAdmitWhenOpen if open => {
                        opened
                            .lock()
                            .expect("lock")
                            .entry(name.clone())
                            .or_insert_with(Instant::now);
                        admit().await;
                    }
                    Worker::SignalThenAdmitWhenOpen if !blocked => {
                        let ok = write(Box::new(|s| {
                            baton_crds::conditions::set_condition(
                                &mut s.conditions,
                                baton_crds::conditions::NewCondition::new(
                                    "QuotaReservationBlocked",
                                    baton_crds::conditions::ConditionStatus::True,
                                    "PreemptionGated",
                                    "stand-in",
                                ),
                                Utc::now(),
                            );
                        }))
                        .await;
                        if ok {
                            signalled
                                .lock()
                                .expect("lock")
                                .entry(name.clone())
                                .or_insert_with(Instant::now);
                        }
                    }
                    Worker::SignalThenAdmitWhenOpen => {}
                }
            });
        }
    });
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
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

    let admitted: Times = Arc::default();
    {
        let api: Api<Workload> = Api::namespaced(manager_bench_client(&env), &env.namespace);
        let admitted = admitted.clone();
        tokio::spawn(async move {
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(wl)) = events.next().await {
                let done = wl.status.as_ref().is_some_and(|s| {
                    s.cluster_name.is_some()
                        && s.conditions
                            .iter()
                            .any(|c| c.type_ == "Admitted" && c.status == "True")
                });
                if done {
                    admitted
                        .lock()
                        .expect("lock")
                        .entry(wl.name_any())
                        .or_insert_with(Instant::now);
                }
            }
        });
    }

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
    let admitted = admitted.lock().expect("lock").clone();
    let submitted = submitted.lock().expect("lock").clone();
    let mut latencies: Vec<Duration> = admitted
        .iter()
        .filter_map(|(name, at)| submitted.get(name).map(|s| at.duration_since(*s)))
        .collect();
    latencies.sort();
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
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    );
    if mode == Worker::SignalThenAdmitWhenOpen {
        let signalled = signalled.lock().expect("lock").clone();
        let opened = opened.lock().expect("lock").clone();
        let mut gate: Vec<Duration> = opened
            .iter()
            .filter_map(|(name, at)| {
                signalled
                    .get(name)
                    .map(|s| at.saturating_duration_since(*s))
            })
            .collect();
        gate.sort();
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

/// Reads the manager's `/metrics` and prints reconcile figures.
fn print_manager_metrics(manager: &BatonProcess) {
    let body = manager.metrics();
    if body.is_empty() {
        eprintln!(
            "  (cannot read the manager's metrics; log: {})",
            manager.log.display()
        );
        return;
    }
    let value = |name: &str| -> f64 {
        body.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let count = value("baton_reconcile_duration_seconds_count");
    let sum = value("baton_reconcile_duration_seconds_sum");
    println!(
        "  manager: {count} reconciles, mean {:.2} ms each, {:.1} s busy in total",
        if count > 0.0 {
            sum / count * 1000.0
        } else {
            0.0
        },
        sum
    );
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
