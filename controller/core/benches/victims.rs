//! One victim-selection decision over 100, 1,000 and 10,000 admitted candidates (DESIGN.md §4):
//! mixed priorities, a few disruption budgets (some guarded by KEP-4664 classes) and some
//! tolerating classes. Target: at most 1 ms at 10,000.

use baton_crds::WorkloadKey;
use std::collections::BTreeMap;
use std::hint::black_box;

use baton_core::victims::{
    Budget, Bystander, Candidate, FlatFit, PodGroup, Request, VictimPolicy, select,
};
use chrono::{DateTime, TimeDelta, Utc};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

const NAMESPACES: usize = 20;
const APPS: usize = 7;
const PREEMPTOR: i32 = 15;

/// A deterministic xorshift generator: the same world every run, no extra dependency.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn group(app: u64, role: &str, count: i32) -> PodGroup {
    let labels = BTreeMap::from([
        ("app".to_string(), format!("app-{app}")),
        ("role".to_string(), role.to_string()),
    ]);
    PodGroup { labels, count }
}

struct World {
    candidates: Vec<Candidate>,
    bystanders: Vec<Bystander>,
    budgets: Vec<Budget>,
    fit: FlatFit,
    now: DateTime<Utc>,
}

fn world(n: usize) -> World {
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15 ^ n as u64);
    let now = DateTime::from_timestamp(1_750_000_000, 0).unwrap_or_default();
    let mut candidates = Vec::with_capacity(n);
    let mut usages = Vec::with_capacity(n);
    for i in 0..n {
        let namespace = format!("ns-{}", dice.below(NAMESPACES as u64));
        let priority = dice.below(20) as i32;
        let mut policy = VictimPolicy::default_for(priority);
        match dice.below(20) {
            // A tenth tolerate preemptors below 1000 for an hour.
            0 | 1 => {
                policy.minimum_preemptable_priority = 1000;
                policy.toleration_seconds = 3600;
            }
            // A tenth guard their budgets against everything below 100.
            2 | 3 => policy.allow_disruption_by_priority_at_least = Some(100),
            _ => {}
        }
        let app = dice.below(APPS as u64);
        let mut pod_sets = vec![group(app, "worker", 1 + dice.below(8) as i32)];
        if dice.below(3) == 0 {
            pod_sets.push(group(app, "driver", 1));
        }
        candidates.push(Candidate {
            key: WorkloadKey::new(&namespace, &format!("w{i:05}")),
            namespace,
            priority,
            admitted_at: now - TimeDelta::seconds(dice.below(7200) as i64),
            policy,
            pod_sets,
            priority_exempt: dice.below(50) == 0,
            tier: 0,
        });
        usages.push([1 + dice.below(8) as i64, 1 + dice.below(32) as i64]);
    }
    let bystanders = (0..n / 10)
        .map(|_| Bystander {
            namespace: format!("ns-{}", dice.below(NAMESPACES as u64)),
            pod_sets: vec![group(dice.below(APPS as u64), "worker", 2)],
        })
        .collect();
    let budgets = vec![
        budget("ns-0", by_app(0), Some(pct("50%")), None),
        budget(
            "ns-1",
            LabelSelector::default(),
            None,
            Some(IntOrString::Int(5)),
        ),
        budget("ns-2", by_app(3), Some(IntOrString::Int(2)), None),
        budget(
            "ns-3",
            workers_not_in(&["app-1", "app-2"]),
            None,
            Some(pct("20%")),
        ),
        budget("ns-4", by_app(5), None, Some(IntOrString::Int(0))),
    ];
    let used: [i64; 2] = usages
        .iter()
        .fold([0, 0], |acc, u| [acc[0] + u[0], acc[1] + u[1]]);
    // A full pool and a preemptor wanting a twentieth of it: hundreds of victims at 10,000.
    let mut fit = FlatFit::new(used.to_vec(), vec![used[0] / 20, used[1] / 20]);
    for usage in &usages {
        fit.push_candidate(usage);
    }
    World {
        candidates,
        bystanders,
        budgets,
        fit,
        now,
    }
}

fn pct(text: &str) -> IntOrString {
    IntOrString::String(text.to_string())
}

fn by_app(app: u64) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("app".to_string(), format!("app-{app}"))])),
        match_expressions: None,
    }
}

fn workers_not_in(apps: &[&str]) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("role".to_string(), "worker".to_string())])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "app".to_string(),
            operator: "NotIn".to_string(),
            values: Some(apps.iter().map(|a| a.to_string()).collect()),
        }]),
    }
}

fn budget(
    namespace: &str,
    selector: LabelSelector,
    min_available: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
) -> Budget {
    Budget {
        namespace: namespace.to_string(),
        name: format!("{namespace}-pdb"),
        selector,
        min_available,
        max_unavailable,
    }
}

fn decisions(c: &mut Criterion) {
    let mut group = c.benchmark_group("victims/select");
    for n in [100, 1_000, 10_000] {
        let mut world = world(n);
        let request = Request {
            preemptor_priority: PREEMPTOR,
            candidates: &world.candidates,
            bystanders: &world.bystanders,
            budgets: &world.budgets,
            now: world.now,
        };
        // Print the shape once so the figures can be read against what was decided.
        let first = select(&request, &mut world.fit);
        println!(
            "n={n}: {} ({} budget problems)",
            first.summary(),
            first.budget_problems.len()
        );
        group.throughput(Throughput::Elements(n as u64));
        // `select` leaves the Fit balanced, so one model serves every iteration.
        group.bench_with_input(BenchmarkId::from_parameter(n), &request, |b, request| {
            b.iter(|| select(black_box(request), &mut world.fit))
        });
    }
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
