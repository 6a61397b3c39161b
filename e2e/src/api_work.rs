//! The API work a benchmark phase costs, from the testbed's request counters, and the
//! throughput limit the cost model puts on it: with the model's capacity (server workers) and
//! the measured requests per workload, a machine can admit at most
//! `workers / (mean held time of one workload's requests)` workloads per second — on one
//! shared budget all clusters' requests count together; with a budget per cluster the busiest
//! cluster decides.
//!
//! Pure summaries over counter snapshots; the shell parts (switching the model on, reading the
//! counters) take the environment.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_testbed::server::TestCluster;
use baton_testbed::server::cost::{Budget, CostClass, CostProfile};
use baton_testbed::server::request_counts::{RequestKind, difference};

use crate::multikueue::Env;

/// The User-Agent product of a benchmark's own clients: requests counted under it are the
/// benchmark's (submission, stand-in workers), all others the pipeline's.
pub const BENCH_CLIENT: &str = "baton-bench";

/// How a benchmark uses the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostMode {
    Off,
    /// One budget for all clusters, as the API servers of one machine share its CPUs.
    Shared,
    /// A budget per cluster.
    PerCluster,
}

impl CostMode {
    /// From an environment variable's value: `off`, `per-cluster`, or anything else (unset
    /// included) for the shared machine.
    pub fn parse(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some("off" | "0" | "false") => CostMode::Off,
            Some("per-cluster") => CostMode::PerCluster,
            _ => CostMode::Shared,
        }
    }
}

/// Counter snapshots of every testbed cluster, by cluster name (`manager`, `worker-<i>`).
pub type Snapshot = BTreeMap<String, BTreeMap<RequestKind, u64>>;

/// The environment's testbed servers by cluster name (empty on real clusters).
pub fn testbeds(env: &Env) -> Vec<(String, Arc<TestCluster>)> {
    let mut all = Vec::new();
    if let Some(tc) = &env.clusters.manager().testbed {
        all.push(("manager".to_string(), tc.clone()));
    }
    for (i, w) in env.clusters.workers().iter().enumerate() {
        if let Some(tc) = &w.testbed {
            all.push((format!("worker-{}", i + 1), tc.clone()));
        }
    }
    all
}

/// Switches the model on for every testbed cluster of `env`; returns the server workers
/// each budget has, or `None` when off (or on real clusters).
pub fn apply_cost(env: &Env, mode: CostMode, profile: &CostProfile) -> Option<usize> {
    let clusters = testbeds(env);
    if mode == CostMode::Off || clusters.is_empty() {
        return None;
    }
    let shared = Budget::for_profile(profile);
    for (_, tc) in &clusters {
        let budget = match mode {
            CostMode::Shared => shared.clone(),
            _ => Budget::for_profile(profile),
        };
        tc.cost().enable(profile.clone(), budget);
    }
    Some(profile.workers)
}

pub fn snapshot(env: &Env) -> Snapshot {
    testbeds(env)
        .into_iter()
        .map(|(name, tc)| (name, tc.request_counts().snapshot()))
        .collect()
}

/// The requests between two snapshots.
pub fn between(before: &Snapshot, after: &Snapshot) -> Snapshot {
    after
        .iter()
        .map(|(cluster, counts)| {
            let empty = BTreeMap::new();
            let old = before.get(cluster).unwrap_or(&empty);
            (cluster.clone(), difference(old, counts))
        })
        .collect()
}

/// Requests of one cluster by (verb, resource), the benchmark's own and the pipeline's apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterWork {
    pub pipeline: BTreeMap<(String, String), u64>,
    pub bench: BTreeMap<(String, String), u64>,
}

impl ClusterWork {
    pub fn of(counts: &BTreeMap<RequestKind, u64>) -> Self {
        let mut work = ClusterWork::default();
        for (k, n) in counts {
            let side = if k.client == BENCH_CLIENT {
                &mut work.bench
            } else {
                &mut work.pipeline
            };
            *side
                .entry((k.verb.clone(), k.resource.clone()))
                .or_default() += n;
        }
        work
    }
}

/// `(writes, reads)` among `counts`: reads are gets and lists (watch starts apart).
pub fn writes_and_reads(counts: &BTreeMap<(String, String), u64>) -> (u64, u64) {
    let mut out = (0, 0);
    for ((verb, _), n) in counts {
        match class_of(verb) {
            CostClass::Write => out.0 += n,
            CostClass::Read | CostClass::List => out.1 += n,
            _ => {}
        }
    }
    out
}

fn class_of(verb: &str) -> CostClass {
    RequestKind {
        client: String::new(),
        verb: verb.into(),
        resource: String::new(),
    }
    .cost_class()
}

/// Worker-seconds of held service time that `counts` cost on average.
fn held_seconds(profile: &CostProfile, counts: &BTreeMap<RequestKind, u64>) -> f64 {
    counts
        .iter()
        .map(|(k, n)| *n as f64 * profile.service(k.cost_class()).mean_held().as_secs_f64())
        .sum()
}

/// The most workloads per second the modelled machine admits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// From writes alone: write capacity over writes per workload.
    pub writes_only: f64,
    /// From every request's held time (writes, reads, lists, watch starts, discovery).
    pub all_requests: f64,
}

/// The limits that `work` (requests of a phase, every client) over `admitted` workloads
/// puts on throughput, with `workers` server workers per budget.
pub fn limits(
    profile: &CostProfile,
    mode: CostMode,
    workers: usize,
    work: &Snapshot,
    admitted: usize,
) -> Limits {
    let admitted = admitted.max(1) as f64;
    let write_capacity = profile.capacity(CostClass::Write, workers);
    let writes = |counts: &BTreeMap<RequestKind, u64>| -> f64 {
        counts
            .iter()
            .filter(|(k, _)| k.is_write())
            .map(|(_, n)| *n as f64)
            .sum::<f64>()
            / admitted
    };
    let held = |counts: &BTreeMap<RequestKind, u64>| held_seconds(profile, counts) / admitted;
    let rate = |capacity: f64, per_workload: f64| {
        if per_workload > 0.0 {
            capacity / per_workload
        } else {
            f64::INFINITY
        }
    };
    match mode {
        CostMode::Shared | CostMode::Off => Limits {
            writes_only: rate(write_capacity, work.values().map(writes).sum()),
            all_requests: rate(workers as f64, work.values().map(held).sum()),
        },
        CostMode::PerCluster => Limits {
            writes_only: work
                .values()
                .map(|c| rate(write_capacity, writes(c)))
                .fold(f64::INFINITY, f64::min),
            all_requests: work
                .values()
                .map(|c| rate(workers as f64, held(c)))
                .fold(f64::INFINITY, f64::min),
        },
    }
}

/// Lines that show the work per admitted workload: per cluster, the pipeline's writes and
/// reads by verb and resource, then the benchmark's own.
pub fn report(work: &Snapshot, admitted: usize) -> Vec<String> {
    let per = |n: u64| n as f64 / admitted.max(1) as f64;
    let mut lines = Vec::new();
    let (mut all_w, mut all_r, mut bench_w, mut bench_r) = (0, 0, 0, 0);
    for (cluster, counts) in work {
        let cw = ClusterWork::of(counts);
        let (w, r) = writes_and_reads(&cw.pipeline);
        let (bw, br) = writes_and_reads(&cw.bench);
        all_w += w;
        all_r += r;
        bench_w += bw;
        bench_r += br;
        lines.push(format!(
            "    {cluster}: pipeline {:.2} writes + {:.2} reads per workload; benchmark's own {:.2} writes + {:.2} reads",
            per(w),
            per(r),
            per(bw),
            per(br)
        ));
        let mut rows: Vec<_> = cw.pipeline.iter().collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for ((verb, resource), n) in rows {
            lines.push(format!("      {:>7.3}  {verb} {resource}  ({n})", per(*n)));
        }
    }
    lines.push(format!(
        "    all clusters: pipeline {:.2} writes + {:.2} reads per workload; benchmark's own {:.2} writes + {:.2} reads",
        per(all_w),
        per(all_r),
        per(bench_w),
        per(bench_r)
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_testbed::server::cost::Service;
    use std::time::Duration;

    fn kind(client: &str, verb: &str, resource: &str) -> RequestKind {
        RequestKind {
            client: client.into(),
            verb: verb.into(),
            resource: resource.into(),
        }
    }

    /// Writes cost 2 ms, gets 1 ms, nothing else costs.
    fn profile() -> CostProfile {
        let free = Service::fixed(Duration::ZERO, Duration::ZERO);
        CostProfile {
            workers: 2,
            write: Service::fixed(Duration::from_millis(2), Duration::ZERO),
            read: Service::fixed(Duration::from_millis(1), Duration::ZERO),
            list: free,
            watch: free,
            other: free,
            watch_delay: Duration::ZERO,
        }
    }

    fn work() -> Snapshot {
        let mut m = BTreeMap::new();
        m.insert(kind("-", "update", "workloads/status"), 200);
        m.insert(kind("-", "get", "workloads"), 100);
        m.insert(kind(BENCH_CLIENT, "create", "workloads"), 100);
        let mut w = BTreeMap::new();
        w.insert(kind("-", "create", "workloads"), 100);
        w.insert(kind("-", "watch", "workloads"), 3);
        Snapshot::from([("manager".into(), m), ("worker-1".into(), w)])
    }

    #[test]
    fn modes_parse_with_shared_by_default() {
        assert_eq!(CostMode::parse(None), CostMode::Shared);
        assert_eq!(CostMode::parse(Some("shared")), CostMode::Shared);
        assert_eq!(CostMode::parse(Some("off")), CostMode::Off);
        assert_eq!(CostMode::parse(Some("0")), CostMode::Off);
        assert_eq!(CostMode::parse(Some("per-cluster")), CostMode::PerCluster);
    }

    #[test]
    fn a_shared_budget_counts_every_cluster_together() {
        // 4 writes per workload at 1,000 writes/s; 4×2 ms + 1 ms = 9 ms of 2 workers.
        let l = limits(&profile(), CostMode::Shared, 2, &work(), 100);
        assert!((l.writes_only - 250.0).abs() < 1e-6, "{l:?}");
        assert!((l.all_requests - 2.0 / 0.009).abs() < 1e-6, "{l:?}");
    }

    #[test]
    fn budgets_per_cluster_are_limited_by_the_busiest() {
        // The manager: 3 writes and 1 get per workload (7 ms); worker-1: 1 write (2 ms).
        let l = limits(&profile(), CostMode::PerCluster, 2, &work(), 100);
        assert!((l.writes_only - 1000.0 / 3.0).abs() < 1e-6, "{l:?}");
        assert!((l.all_requests - 2.0 / 0.007).abs() < 1e-6, "{l:?}");
        let idle = limits(&profile(), CostMode::PerCluster, 2, &Snapshot::new(), 1);
        assert!(idle.writes_only.is_infinite());
    }

    #[test]
    fn the_report_separates_pipeline_and_benchmark_work() {
        let lines = report(&work(), 100);
        assert!(lines[0].contains("manager: pipeline 2.00 writes + 1.00 reads"));
        assert!(lines[0].contains("benchmark's own 1.00 writes + 0.00 reads"));
        // Largest first.
        assert!(lines[1].contains("update workloads/status"), "{lines:?}");
        assert!(
            lines
                .last()
                .unwrap()
                .contains("pipeline 3.00 writes + 1.00 reads")
        );
        let cw = ClusterWork::of(&work()["worker-1"]);
        assert_eq!(writes_and_reads(&cw.pipeline), (100, 0));
        assert!(cw.bench.is_empty());
    }
}
