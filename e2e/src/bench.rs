//! What the manager benchmarks (`benches/manager.rs`, `benches/manager_scale.rs`) share: the
//! benchmark's own clients, submission, the stand-in workers, waiting for quiet, the API work
//! report, and readings of the manager process (its `/metrics`, its `/proc` figures).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, Workload};
use baton_testbed::server::TestCluster;
use baton_testbed::server::cost::CostProfile;
use chrono::Utc;
use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;

use crate::api_work::{self, BENCH_CLIENT, CostMode};
use crate::harness::process::BatonProcess;
use crate::multikueue::Env;

/// What a stand-in worker scheduler does with the replicas on its cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worker {
    /// Admit every replica at once.
    Admit,
    /// Signal gated at once; admit when the gate opens.
    SignalThenAdmitWhenOpen,
}

/// When something happened to each workload, by name.
pub type Times = Arc<Mutex<HashMap<String, Instant>>>;

/// A client whose requests the testbed counts as the benchmark's own (`BENCH_CLIENT`), or
/// `fallback` on real clusters.
pub fn bench_client(testbed: Option<&TestCluster>, fallback: Client) -> Client {
    let Some(tc) = testbed else {
        return fallback;
    };
    let tagged = tc.client_config().ok().and_then(|mut config| {
        let header = (
            "user-agent".parse().ok()?,
            format!("{BENCH_CLIENT}/1").parse().ok()?,
        );
        config.headers.push(header);
        Client::try_from(config).ok()
    });
    tagged.unwrap_or(fallback)
}

pub fn manager_bench_client(env: &Env) -> Client {
    bench_client(
        env.clusters.manager().testbed.as_deref(),
        env.manager_client(),
    )
}

/// A Workload of one pod of one CPU (as `Env::submit`), submitted with the benchmark's client.
pub async fn submit(api: &Api<Workload>, namespace: &str, name: &str) -> anyhow::Result<()> {
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
pub const SUBMIT_CONCURRENCY: usize = 32;

/// Creates `count` Workloads (`wl-00000`, ...), `SUBMIT_CONCURRENCY` at a time, paced at
/// `rate` per second when given; records when each was sent.
pub async fn submit_all(
    env: &Env,
    count: usize,
    rate: Option<u32>,
    start: Instant,
    submitted: &Times,
) {
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

/// The cost model as the benchmark asks; returns the workers per budget.
pub fn cost_on(env: &Env, mode: CostMode) -> Option<usize> {
    api_work::apply_cost(env, mode, &CostProfile::kube_apiserver())
}

/// Waits until no testbed cluster has served a request for `quiet` (work trailing the last
/// admission, e.g. removing the losers' replicas), at most `deadline`.
pub async fn settle(env: &Env, quiet: Duration, deadline: Duration) -> api_work::Snapshot {
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
pub fn print_work(
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

/// A stand-in worker scheduler: reacts to replicas on worker cluster `i`; `signalled` gets
/// when a replica's first gated signal was written, `opened` when its gate was seen open.
/// Ends when its watch fails (the cluster is gone) or when the handle is aborted.
pub fn stand_in(
    env: &Env,
    i: usize,
    mode: Worker,
    signalled: Times,
    opened: Times,
) -> JoinHandle<()> {
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
    })
}

/// Records when each manager Workload was first seen Admitted on a cluster (the manager's
/// watch, with the benchmark's client). Ends when its watch fails or the handle is aborted.
pub fn watch_admitted(env: &Env) -> (Times, JoinHandle<()>) {
    let admitted: Times = Arc::default();
    let api: Api<Workload> = Api::namespaced(manager_bench_client(env), &env.namespace);
    let seen = admitted.clone();
    let task = tokio::spawn(async move {
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
                seen.lock()
                    .expect("lock")
                    .entry(wl.name_any())
                    .or_insert_with(Instant::now);
            }
        }
    });
    (admitted, task)
}

/// The `p` quantile (0..=1) of sorted durations, nearest rank; zero when empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// The time from each workload's entry in `from` to its entry in `to`, sorted.
pub fn latencies(from: &Times, to: &Times) -> Vec<Duration> {
    let from = from.lock().expect("lock").clone();
    let to = to.lock().expect("lock").clone();
    let mut out: Vec<Duration> = to
        .iter()
        .filter_map(|(name, at)| from.get(name).map(|s| at.saturating_duration_since(*s)))
        .collect();
    out.sort();
    out
}

/// Reads the manager's `/metrics` and prints reconcile figures.
pub fn print_manager_metrics(manager: &BatonProcess) {
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

/// The cumulative buckets of histogram `name` in an OpenMetrics text: (upper bound, count),
/// in the order exported (ascending, `+Inf` last).
pub fn histogram_buckets(text: &str, name: &str) -> Vec<(f64, u64)> {
    let prefix = format!("{name}_bucket{{");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let le = rest.split("le=\"").nth(1)?.split('"').next()?;
            let bound = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            let count = rest.split("} ").nth(1)?.split_whitespace().next()?;
            Some((bound, count.parse::<f64>().ok()? as u64))
        })
        .collect()
}

/// The buckets of `after` less those of `before` (the observations in between); `before`
/// may be empty (nothing observed yet).
pub fn bucket_difference(before: &[(f64, u64)], after: &[(f64, u64)]) -> Vec<(f64, u64)> {
    after
        .iter()
        .map(|(le, n)| {
            let old = before
                .iter()
                .find(|(b, _)| b == le)
                .map(|(_, m)| *m)
                .unwrap_or(0);
            (*le, n.saturating_sub(old))
        })
        .collect()
}

/// The upper bound of the bucket that holds the `q` quantile of cumulative `buckets` (so
/// the quantile is at most this: bucket resolution); `None` without observations.
pub fn bucket_quantile(buckets: &[(f64, u64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    buckets.iter().find(|(_, n)| *n >= rank).map(|(le, _)| *le)
}

/// What `/proc` tells of a process: resident memory now and at its peak, CPU time used.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessStats {
    /// `VmRSS`, bytes.
    pub rss: u64,
    /// `VmHWM` (the peak resident set), bytes.
    pub peak_rss: u64,
    /// utime + stime, seconds.
    pub cpu_seconds: f64,
}

/// The stats of process `pid` (`None` when it is gone or `/proc` is not there).
pub fn process_stats(pid: u32) -> Option<ProcessStats> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_process_stats(&status, &stat, clock_ticks())
}

/// Parses `/proc/<pid>/status` and `/proc/<pid>/stat` (`ticks`: clock ticks per second).
pub fn parse_process_stats(status: &str, stat: &str, ticks: f64) -> Option<ProcessStats> {
    let kib = |field: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(field))?;
        let n: u64 = line[field.len()..]
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(n * 1024)
    };
    // The command name may hold spaces and parentheses: fields are counted after the last `)`;
    // the first of them is field 3 (state), utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some(ProcessStats {
        rss: kib("VmRSS:")?,
        peak_rss: kib("VmHWM:")?,
        cpu_seconds: (utime + stime) / ticks,
    })
}

/// Clock ticks per second (`getconf CLK_TCK`; 100, Linux's value, when it cannot be asked).
pub fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|t: &f64| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// The machine's load averages (1, 5, 15 minutes) and the cores this process may use.
pub fn machine_load() -> (String, usize) {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (load, cores)
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: &str = "# TYPE baton_reconcile_duration_seconds histogram\n\
        baton_reconcile_duration_seconds_sum 1.5\n\
        baton_reconcile_duration_seconds_count 100\n\
        baton_reconcile_duration_seconds_bucket{le=\"0.0005\"} 10\n\
        baton_reconcile_duration_seconds_bucket{le=\"0.001\"} 60\n\
        baton_reconcile_duration_seconds_bucket{le=\"0.002\"} 98\n\
        baton_reconcile_duration_seconds_bucket{le=\"0.004\"} 99\n\
        baton_reconcile_duration_seconds_bucket{le=\"+Inf\"} 100\n\
        baton_other_bucket{le=\"1\"} 5\n";

    #[test]
    fn quantiles_come_from_the_bucket_that_holds_them() {
        let b = histogram_buckets(METRICS, "baton_reconcile_duration_seconds");
        assert_eq!(b.len(), 5);
        assert_eq!(b[0], (0.0005, 10));
        assert_eq!(b[4], (f64::INFINITY, 100));
        assert_eq!(bucket_quantile(&b, 0.5), Some(0.001));
        assert_eq!(bucket_quantile(&b, 0.98), Some(0.002));
        assert_eq!(bucket_quantile(&b, 0.99), Some(0.004));
        assert_eq!(bucket_quantile(&b, 1.0), Some(f64::INFINITY));
        assert_eq!(bucket_quantile(&[], 0.5), None);
    }

    #[test]
    fn a_phase_counts_only_its_own_observations() {
        let after = histogram_buckets(METRICS, "baton_reconcile_duration_seconds");
        let before = vec![
            (0.0005, 10),
            (0.001, 10),
            (0.002, 10),
            (0.004, 10),
            (f64::INFINITY, 10),
        ];
        let d = bucket_difference(&before, &after);
        assert_eq!(d[0], (0.0005, 0));
        assert_eq!(d[4], (f64::INFINITY, 90));
        // 50 of the 90 fall at or below 1 ms: the median is in that bucket.
        assert_eq!(bucket_quantile(&d, 0.5), Some(0.001));
        assert_eq!(bucket_difference(&[], &after), after);
    }

    #[test]
    fn process_figures_are_read_from_proc() {
        let status = "Name:\tbaton\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n";
        let stat = "4242 (bat on) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 8";
        let s = parse_process_stats(status, stat, 100.0).unwrap();
        assert_eq!(s.rss, 10 * 1024 * 1024);
        assert_eq!(s.peak_rss, 20 * 1024 * 1024);
        assert!((s.cpu_seconds - 3.0).abs() < 1e-9, "{s:?}");
        assert_eq!(parse_process_stats("", stat, 100.0), None);
    }

    #[test]
    fn the_nearest_rank_percentile() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&d, 0.5), Duration::from_millis(51));
        assert_eq!(percentile(&d, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }
}
