//! Synthetic workload mixes: a documented spec (YAML, every field optional) and a seeded
//! generator, so the same spec and seed always give the same trace.
//!
//! Arrivals are a Poisson process whose rate makes the offered load (CPU-seconds asked per
//! second over the workers' total CPUs) a level drawn uniformly from `load` for every
//! `loadPeriod` seconds. High-priority workloads always go through the manager; a share of
//! the low-priority ones (`localShare`) is submitted directly on one worker (picked in
//! proportion to its size), like each cluster's own work.

use serde::Deserialize;

use super::rng::Rng;
use super::trace::{MAX_WORKERS, Trace, TraceError, TraceWorkload, WorkerSpec};

/// An inclusive range.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    const fn new(min: f64, max: f64) -> Self {
        Self { min, max }
    }
    fn mean(&self) -> f64 {
        (self.min + self.max) / 2.0
    }
}

/// The worker clusters: `count` of them, sizes spread evenly over
/// `cpus × (1 ± heterogeneity)` (0: all equal).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkersSpec {
    pub count: usize,
    pub cpus: f64,
    pub heterogeneity: f64,
}

/// A synthetic mix. The defaults are the documented `default` mix.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    pub workloads: usize,
    pub seed: u64,
    pub workers: WorkersSpec,
    /// Offered load, as a share of the workers' total CPUs.
    pub load: Range,
    /// Seconds each load level lasts.
    pub load_period: f64,
    pub high_priority_share: f64,
    pub high_priority: i32,
    /// Low priorities, drawn uniformly.
    pub low_priorities: Vec<i32>,
    pub local_share: f64,
    pub pods: Range,
    pub cpus_per_pod: Range,
    pub run_seconds: Range,
    pub stop_seconds: Range,
}

impl Default for Spec {
    fn default() -> Self {
        Self {
            workloads: 10_000,
            seed: 1,
            workers: WorkersSpec {
                count: 5,
                cpus: 64.0,
                heterogeneity: 0.5,
            },
            load: Range::new(0.7, 0.9),
            load_period: 600.0,
            high_priority_share: 0.1,
            high_priority: 1000,
            low_priorities: vec![100, 200],
            local_share: 0.5,
            pods: Range::new(1.0, 8.0),
            cpus_per_pod: Range::new(1.0, 4.0),
            run_seconds: Range::new(60.0, 1800.0),
            stop_seconds: Range::new(5.0, 60.0),
        }
    }
}

/// Reads a spec: `default`, or a YAML file.
pub fn load_spec(spec: &str) -> Result<Spec, TraceError> {
    if spec == "default" {
        return Ok(Spec::default());
    }
    let text = std::fs::read_to_string(spec).map_err(|source| TraceError::Read {
        path: spec.to_string(),
        source,
    })?;
    let parsed: Spec =
        serde_saphyr::from_str(&text).map_err(|e| TraceError::Yaml(e.to_string()))?;
    Ok(parsed)
}

/// The worker sizes of a spec, in whole CPUs.
pub fn worker_sizes(spec: &WorkersSpec) -> Vec<f64> {
    let n = spec.count;
    (0..n)
        .map(|i| {
            let spread = if n > 1 {
                2.0 * i as f64 / (n - 1) as f64 - 1.0
            } else {
                0.0
            };
            (spec.cpus * (1.0 + spec.heterogeneity * spread))
                .round()
                .max(1.0)
        })
        .collect()
}

fn check(spec: &Spec) -> Result<(), TraceError> {
    let bad = |field: &str, why: &str| Err(TraceError::Other(format!("spec field {field}: {why}")));
    let w = &spec.workers;
    if w.count == 0 || w.count > MAX_WORKERS {
        return bad("workers.count", "must be between 1 and 64");
    }
    if !(0.0..1.0).contains(&w.heterogeneity) || w.cpus <= 0.0 {
        return bad(
            "workers",
            "cpus must be positive and heterogeneity in [0, 1)",
        );
    }
    for (field, r) in [
        ("load", spec.load),
        ("pods", spec.pods),
        ("cpusPerPod", spec.cpus_per_pod),
        ("runSeconds", spec.run_seconds),
        ("stopSeconds", spec.stop_seconds),
    ] {
        if !(r.min.is_finite() && r.max.is_finite() && 0.0 <= r.min && r.min <= r.max) {
            return bad(field, "needs 0 ≤ min ≤ max");
        }
    }
    if spec.load.max <= 0.0 || spec.pods.min < 1.0 || spec.cpus_per_pod.min <= 0.0 {
        return bad("load/pods/cpusPerPod", "must be positive");
    }
    if spec.load_period <= 0.0 {
        return bad("loadPeriod", "must be positive");
    }
    for (field, p) in [
        ("highPriorityShare", spec.high_priority_share),
        ("localShare", spec.local_share),
    ] {
        if !(0.0..=1.0).contains(&p) {
            return bad(field, "must be between 0 and 1");
        }
    }
    if spec.low_priorities.is_empty() {
        return bad("lowPriorities", "needs at least one priority");
    }
    let smallest = worker_sizes(w).into_iter().fold(f64::MAX, f64::min);
    if spec.pods.max.floor() * spec.cpus_per_pod.max > smallest {
        return bad(
            "pods/cpusPerPod",
            &format!("the largest workload must fit on the smallest worker ({smallest} CPUs)"),
        );
    }
    Ok(())
}

/// Generates the trace of `spec` with `seed`.
pub fn generate(spec: &Spec, seed: u64) -> Result<Trace, TraceError> {
    check(spec)?;
    let mut rng = Rng::new(seed);
    let sizes = worker_sizes(&spec.workers);
    let total: f64 = sizes.iter().sum();
    let workers: Vec<WorkerSpec> = sizes
        .iter()
        .enumerate()
        .map(|(i, cpus)| WorkerSpec {
            name: format!("worker-{}", i + 1),
            cpu_milli: (cpus * 1000.0) as i64,
        })
        .collect();
    // Mean CPU-seconds of one workload: pods, CPUs per pod and run time are independent.
    let pods_mean = (spec.pods.min.floor() + spec.pods.max.floor()) / 2.0;
    let work = pods_mean * spec.cpus_per_pod.mean() * spec.run_seconds.mean();
    let mut t = 0.0f64;
    let mut level_until = 0.0f64;
    let mut mean_gap = 1.0f64;
    let mut workloads = Vec::with_capacity(spec.workloads);
    for i in 0..spec.workloads {
        while t >= level_until {
            let level = rng.uniform(spec.load.min, spec.load.max).max(1e-3);
            mean_gap = work / (level * total);
            level_until += spec.load_period;
        }
        t += rng.exponential(mean_gap);
        let high = rng.chance(spec.high_priority_share);
        let priority = if high {
            spec.high_priority
        } else {
            let k = rng.between(0, spec.low_priorities.len() as u64 - 1) as usize;
            spec.low_priorities[k]
        };
        let cluster = if !high && rng.chance(spec.local_share) {
            let mut pick = rng.uniform(0.0, total);
            let mut chosen = sizes.len() - 1;
            for (k, size) in sizes.iter().enumerate() {
                if pick < *size {
                    chosen = k;
                    break;
                }
                pick -= size;
            }
            Some(chosen)
        } else {
            None
        };
        let pods = rng.between(spec.pods.min as u64, spec.pods.max as u64) as u32;
        let per_pod = rng.uniform(spec.cpus_per_pod.min, spec.cpus_per_pod.max);
        // Whole CPUs per pod, as most requests are.
        let per_pod_milli =
            (per_pod.round().max(1.0) as i64).min(spec.cpus_per_pod.max.ceil() as i64) * 1000;
        workloads.push(TraceWorkload {
            name: format!("{}-{i}", if high { "high" } else { "low" }),
            arrival: (t * 1000.0) as u64,
            cpu_milli: per_pod_milli * i64::from(pods),
            pods,
            priority,
            run: (rng.uniform(spec.run_seconds.min, spec.run_seconds.max) * 1000.0) as u64,
            stop: (rng.uniform(spec.stop_seconds.min, spec.stop_seconds.max) * 1000.0) as u64,
            cluster,
        });
    }
    Ok(Trace { workers, workloads })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Spec {
        Spec {
            workloads: 500,
            ..Spec::default()
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_trace_and_another_seed_another() {
        let a = generate(&small(), 42).unwrap();
        let b = generate(&small(), 42).unwrap();
        let c = generate(&small(), 43).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn the_default_mix_has_what_its_documentation_says() {
        let trace = generate(&Spec::default(), 1).unwrap();
        let sizes: Vec<i64> = trace.workers.iter().map(|w| w.cpu_milli / 1000).collect();
        assert_eq!(sizes, [32, 48, 64, 80, 96], "5 heterogeneous workers");
        assert_eq!(trace.workloads.len(), 10_000);
        let high = trace
            .workloads
            .iter()
            .filter(|w| w.priority == 1000)
            .count();
        assert!(
            (800..1200).contains(&high),
            "about 10% high priority: {high}"
        );
        assert!(
            trace
                .workloads
                .iter()
                .all(|w| (5_000..=60_000).contains(&w.stop))
        );
        assert!(
            trace
                .workloads
                .windows(2)
                .all(|p| p[0].arrival <= p[1].arrival)
        );
        // Offered load: CPU-seconds asked over CPU-seconds available until the last arrival.
        let asked: f64 = trace
            .workloads
            .iter()
            .map(|w| w.cpu_milli as f64 / 1000.0 * w.run as f64 / 1000.0)
            .sum();
        let span = trace.workloads.last().unwrap().arrival as f64 / 1000.0;
        let load = asked / (span * 320.0);
        assert!((0.7..0.9).contains(&load), "offered load {load}");
    }

    #[test]
    fn a_spec_that_cannot_fit_is_refused() {
        let spec = Spec {
            cpus_per_pod: Range::new(1.0, 16.0),
            ..small()
        };
        let err = generate(&spec, 1).unwrap_err().to_string();
        assert!(err.contains("pods/cpusPerPod"), "{err}");
    }

    #[test]
    fn spec_files_override_the_defaults_field_by_field() {
        let spec: Spec = serde_saphyr::from_str("workloads: 20\nhighPriorityShare: 0.5\n").unwrap();
        assert_eq!(spec.workloads, 20);
        assert_eq!(spec.high_priority_share, 0.5);
        assert_eq!(spec.workers.count, 5);
    }
}
