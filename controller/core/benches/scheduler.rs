//! The scheduling core in process, in the shape of upstream Kueue's scheduler baseline:
//! 5 cohorts × 6 ClusterQueues, 15,000 workloads of three sizes and priorities.
//!
//! Prints, for 1,000 and 10,000 pending workloads, the time of one cycle and the admission
//! decisions per second, then a drain of all 15,000 (cycles until every workload was admitted,
//! admitted work finishing as it goes). Run: `cargo bench -p baton --bench scheduler`.

use baton_crds::WorkloadKey;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use baton_core::admission::cycle::{Outcome, schedule};
use baton_core::admission::model::{
    AdmittedInput, AdmittedModel, FlavorModel, GroupModel, LimitInput, PendingModel, PodSetModel,
    QueueModel, Snapshot, WorkloadModel,
};
use baton_core::admission::quota::Limits;
use baton_core::victims::VictimPolicy;
use baton_crds::cluster_queue::{
    ClusterQueuePreemption, FlavorFungibility, QueueingStrategy, ReclaimWithinCohort,
    WithinClusterQueue,
};
use baton_crds::quantity::Resources;
use chrono::{DateTime, TimeZone, Utc};

const COHORTS: usize = 5;
const QUEUES_PER_COHORT: usize = 6;
const QUEUES: usize = COHORTS * QUEUES_PER_COHORT;
/// CPUs per queue: the cohort holds 6 × this.
const NOMINAL_CPUS: i128 = 200;
/// The drain stops here if work still waits (it never should).
const MAX_DRAIN_CYCLES: i64 = 2_000;

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + seconds, 0)
        .single()
        .unwrap_or_default()
}

fn queues() -> (Vec<QueueModel>, Vec<LimitInput>) {
    let mut models = Vec::new();
    let mut limits = Vec::new();
    for q in 0..QUEUES {
        models.push(QueueModel {
            name: format!("cq-{q}"),
            cohort: Some(format!("cohort-{}", q / QUEUES_PER_COHORT)),
            strategy: QueueingStrategy::BestEffortFIFO,
            groups: vec![GroupModel {
                covered: vec!["cpu".into()],
                flavors: vec!["default".into()],
            }],
            fungibility: FlavorFungibility::default(),
            preemption: ClusterQueuePreemption {
                within_cluster_queue: WithinClusterQueue::LowerPriority,
                reclaim_within_cohort: ReclaimWithinCohort::Any,
                ..Default::default()
            },
            inactive: None,
        });
        limits.push((
            q,
            "default".into(),
            "cpu".into(),
            Limits {
                nominal: NOMINAL_CPUS * 1000,
                borrowing_limit: None,
                lending_limit: None,
            },
        ));
    }
    (models, limits)
}

/// Workload `i`: sizes 1, 5 and 20 CPUs, priorities 50, 100 and 200 (Kueue's small, medium
/// and large classes), spread over the queues.
fn workload(i: usize) -> (WorkloadModel, usize) {
    let (cpus, priority) = match i % 10 {
        0..=5 => (1, 50),
        6..=8 => (5, 100),
        _ => (20, 200),
    };
    let mut total = Resources::new();
    total.add("cpu", cpus * 1000);
    (
        WorkloadModel {
            key: WorkloadKey::new("ns", &format!("wl-{i:05}")),
            namespace: "ns".into(),
            priority,
            created: at(i as i64),
            pod_sets: vec![PodSetModel {
                name: "main".into(),
                count: 1,
                total,
                ..Default::default()
            }],
            policy: VictimPolicy::default_for(priority),
        },
        (i * 7) % QUEUES,
    )
}

fn snapshot(admitted: &[AdmittedInput]) -> Snapshot {
    let (models, limits) = queues();
    let flavors = HashMap::from([("default".to_string(), FlavorModel::default())]);
    Snapshot::new(models, flavors, limits, admitted.to_vec(), Vec::new())
}

fn pending(range: std::ops::Range<usize>) -> Vec<PendingModel> {
    range
        .map(|i| {
            let (workload, queue) = workload(i);
            PendingModel {
                workload,
                queue,
                gate_closed: false,
                victims_in_flight: Vec::new(),
                yields_to: None,
                held: None,
            }
        })
        .collect()
}

/// Times one cycle over `n` pending workloads on an empty cluster (median of `runs`).
fn one_cycle(n: usize, runs: usize) -> (Duration, usize) {
    let work = pending(0..n);
    let mut times = Vec::new();
    let mut decisions = 0;
    for _ in 0..runs {
        let mut snap = snapshot(&[]);
        let started = Instant::now();
        let result = schedule(&mut snap, &work, at(100_000));
        times.push(started.elapsed());
        decisions = result.len();
    }
    times.sort();
    (times[times.len() / 2], decisions)
}

fn main() {
    println!(
        "scheduler core: {COHORTS} cohorts x {QUEUES_PER_COHORT} ClusterQueues, {NOMINAL_CPUS} CPUs each"
    );
    for n in [1_000, 10_000] {
        let (median, decisions) = one_cycle(n, 7);
        println!(
            "cycle over {n:>6} pending: median {:>8.2} ms, {decisions} decisions, {:>10.0} decisions/s",
            median.as_secs_f64() * 1e3,
            decisions as f64 / median.as_secs_f64()
        );
    }

    // Preemption: every queue full of 1-CPU low-priority work, then high-priority 5-CPU
    // workloads arrive; each one needs five victims.
    for n in [100, 1_000] {
        let full: Vec<AdmittedInput> = (0..QUEUES * NOMINAL_CPUS as usize)
            .map(|i| {
                let (mut w, _) = workload(i * 10); // i*10 % 10 == 0: a 1-CPU, priority-50 workload
                w.key = WorkloadKey::new("ns", &format!("low-{i:05}"));
                (
                    AdmittedModel {
                        workload: w,
                        queue: i % QUEUES,
                        usage: Vec::new(),
                        admitted_at: at(0),
                        evicting: false,
                    },
                    vec![("default".into(), "cpu".into(), 1000)],
                )
            })
            .collect();
        let high: Vec<PendingModel> = pending(0..n * 10)
            .into_iter()
            .filter(|p| p.workload.priority == 100)
            .take(n)
            .enumerate()
            .map(|(k, mut p)| {
                p.workload.priority = 500;
                p.queue = k % QUEUES;
                p
            })
            .collect();
        let mut times = Vec::new();
        let mut victims = 0;
        for _ in 0..5 {
            let mut snap = snapshot(&full);
            let started = Instant::now();
            let decisions = schedule(&mut snap, &high, at(100_000));
            times.push(started.elapsed());
            if std::env::var_os("BENCH_TRACE").is_some() {
                let mut kinds: HashMap<String, usize> = HashMap::new();
                for d in &decisions {
                    let kind = format!("{:?}", d.outcome);
                    *kinds.entry(kind.chars().take(300).collect()).or_default() += 1;
                }
                eprintln!("{kinds:?}");
            }
            victims = decisions
                .iter()
                .map(|d| match &d.outcome {
                    Outcome::Preempt { victims, .. } => victims.len(),
                    _ => 0,
                })
                .sum();
        }
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "preemption cycle, {n:>5} preemptors over {} admitted: median {:>8.2} ms ({victims} victims, {:.0} preemption decisions/s)",
            full.len(),
            median.as_secs_f64() * 1e3,
            n as f64 / median.as_secs_f64()
        );
    }

    // Drain: 15,000 workloads arrive at once; each cycle admits what fits, preempts where
    // it may, and then half of the admitted work finishes, freeing quota for the next cycle.
    let total = 15_000;
    let mut waiting = pending(0..total);
    let mut admitted: Vec<AdmittedInput> = Vec::new();
    let mut cycles = 0;
    let mut admissions = 0;
    let mut preemptions = 0;
    let mut core_time = Duration::ZERO;
    let mut build_time = Duration::ZERO;
    while !waiting.is_empty() && cycles < MAX_DRAIN_CYCLES {
        cycles += 1;
        let started = Instant::now();
        let mut snap = snapshot(&admitted);
        build_time += started.elapsed();
        let started = Instant::now();
        let decisions = schedule(&mut snap, &waiting, at(100_000 + cycles));
        core_time += started.elapsed();
        if std::env::var_os("BENCH_TRACE").is_some() {
            eprintln!(
                "cycle {cycles}: waiting {} admitted {} took {:?}",
                waiting.len(),
                admitted.len(),
                started.elapsed()
            );
        }
        let mut admitted_now = std::collections::HashSet::new();
        let mut evicted = std::collections::HashSet::new();
        for d in &decisions {
            match &d.outcome {
                Outcome::Admit => {
                    admitted_now.insert(d.key.clone());
                }
                Outcome::Preempt { victims, .. } => {
                    preemptions += victims.len();
                    evicted.extend(victims.iter().map(|v| v.key.clone()));
                }
                _ => {}
            }
        }
        // Finished and evicted work leaves; evicted work queues again.
        let mut keep = Vec::new();
        for (i, a) in admitted.into_iter().enumerate() {
            if evicted.contains(&a.0.workload.key) {
                waiting.push(PendingModel {
                    workload: a.0.workload.clone(),
                    queue: a.0.queue,
                    gate_closed: false,
                    victims_in_flight: Vec::new(),
                    yields_to: None,
                    held: None,
                });
            } else if i % 2 == 0 {
                keep.push(a);
            }
        }
        admitted = keep;
        let (now_admitted, still): (Vec<_>, Vec<_>) = waiting
            .into_iter()
            .partition(|p| admitted_now.contains(&p.workload.key));
        waiting = still;
        admissions += now_admitted.len();
        for p in now_admitted {
            let cpu = p.workload.pod_sets[0].total.get("cpu");
            admitted.push((
                AdmittedModel {
                    workload: p.workload,
                    queue: p.queue,
                    usage: Vec::new(),
                    admitted_at: at(100_000 + cycles),
                    evicting: false,
                },
                vec![("default".into(), "cpu".into(), cpu)],
            ));
        }
    }
    println!(
        "drain of {total}: {cycles} cycles, {admissions} admissions, {preemptions} preemptions; core {:.1} ms ({:.0} admissions/s), snapshot builds {:.1} ms",
        core_time.as_secs_f64() * 1e3,
        admissions as f64 / core_time.as_secs_f64(),
        build_time.as_secs_f64() * 1e3
    );
}
