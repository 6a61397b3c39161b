//! Properties over random snapshots, checked against independent, naive oracles.

use baton_crds::WorkloadKey;
use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;

use super::super::{
    Budget, Bystander, Candidate, Fit, FlatFit, PodGroup, Request, Selection, Verdict,
    VictimPolicy, select,
};
use super::support::{at, expression, labels};

const NAMESPACES: [&str; 2] = ["a", "b"];
const APPS: [&str; 3] = ["x", "y", "z"];

#[derive(Clone, Debug)]
struct World {
    preemptor: i32,
    candidates: Vec<(Candidate, Vec<i64>)>,
    bystanders: Vec<Bystander>,
    budgets: Vec<Budget>,
    free: Vec<i64>,
    background: Vec<i64>,
    demand: Vec<i64>,
    now: DateTime<Utc>,
}

fn pod_group() -> impl Strategy<Value = PodGroup> {
    (0..APPS.len(), 0..4_i32).prop_map(|(app, count)| PodGroup {
        labels: labels(&[("app", APPS[app])]),
        count,
    })
}

fn candidate() -> impl Strategy<Value = (Candidate, Vec<i64>)> {
    (
        (0..8_i32, 0..200_i64, 0..NAMESPACES.len()),
        prop::collection::vec(pod_group(), 1..=2),
        (
            prop_oneof![Just(None), (0..12_i32).prop_map(Some)],
            prop_oneof![Just(-1_i64), Just(0), Just(30), Just(120)],
            prop_oneof![3 => Just(None), 1 => (0..10_i32).prop_map(Some)],
        ),
        prop::bool::weighted(0.15),
        prop::collection::vec(0..5_i64, 2),
    )
        .prop_map(
            |((priority, admitted, ns), pod_sets, (minimum, seconds, allow), exempt, usage)| {
                let mut policy = VictimPolicy::default_for(priority);
                if let Some(minimum) = minimum {
                    policy.minimum_preemptable_priority = minimum;
                }
                policy.toleration_seconds = seconds;
                policy.allow_disruption_by_priority_at_least = allow;
                let candidate = Candidate {
                    // Set once the candidates are numbered.
                    key: WorkloadKey::new(NAMESPACES[ns], ""),
                    namespace: NAMESPACES[ns].to_string(),
                    priority,
                    admitted_at: at(admitted),
                    policy,
                    pod_sets,
                    priority_exempt: exempt,
                    tier: 0,
                };
                (candidate, usage)
            },
        )
}

fn amount() -> impl Strategy<Value = Option<IntOrString>> {
    prop_oneof![
        (0..4_i32).prop_map(|n| Some(IntOrString::Int(n))),
        (0..=100_i32).prop_map(|p| Some(IntOrString::String(format!("{p}%")))),
        Just(Some(IntOrString::String("bad".to_string()))),
    ]
}

fn budget() -> impl Strategy<Value = Budget> {
    (
        0..NAMESPACES.len(),
        0..4_usize,
        0..APPS.len(),
        prop::bool::ANY,
        amount(),
    )
        .prop_map(|(ns, shape, app, use_min, amount)| {
            let selector = match shape {
                0 => LabelSelector::default(),
                1 => LabelSelector {
                    match_expressions: Some(vec![expression("app", "NotIn", &[APPS[app]])]),
                    match_labels: None,
                },
                _ => LabelSelector {
                    match_labels: Some(labels(&[("app", APPS[app])])),
                    match_expressions: None,
                },
            };
            let (min_available, max_unavailable) = if use_min {
                (amount, None)
            } else {
                (None, amount)
            };
            Budget {
                namespace: NAMESPACES[ns].to_string(),
                name: format!("pdb-{shape}-{app}"),
                selector,
                min_available,
                max_unavailable,
            }
        })
}

fn bystander() -> impl Strategy<Value = Bystander> {
    (0..NAMESPACES.len(), pod_group()).prop_map(|(ns, group)| Bystander {
        namespace: NAMESPACES[ns].to_string(),
        pod_sets: vec![group],
    })
}

fn world() -> impl Strategy<Value = World> {
    (
        1..10_i32,
        prop::collection::vec(candidate(), 0..24),
        prop::collection::vec(bystander(), 0..4),
        prop::collection::vec(budget(), 0..4),
        (
            prop::collection::vec(0..3_i64, 2),
            prop::collection::vec(0..3_i64, 2),
            prop::collection::vec(0..12_i64, 2),
            0..300_i64,
        ),
    )
        .prop_map(
            |(preemptor, mut candidates, bystanders, budgets, (free, background, demand, now))| {
                for (index, (candidate, _)) in candidates.iter_mut().enumerate() {
                    candidate.key = WorkloadKey::new(&candidate.namespace, &format!("w{index:02}"));
                }
                World {
                    preemptor,
                    candidates,
                    bystanders,
                    budgets,
                    free,
                    background,
                    demand,
                    now: at(now),
                }
            },
        )
}

impl World {
    fn fit(&self) -> FlatFit {
        let mut capacity = self.free.clone();
        for (dim, slot) in capacity.iter_mut().enumerate() {
            *slot += self.background[dim];
            *slot += self.candidates.iter().map(|(_, u)| u[dim]).sum::<i64>();
        }
        let mut fit = FlatFit::new(capacity, self.demand.clone());
        fit.add_background(&self.background);
        for (_, usage) in &self.candidates {
            fit.push_candidate(usage);
        }
        fit
    }

    fn candidates(&self) -> Vec<Candidate> {
        self.candidates.iter().map(|(c, _)| c.clone()).collect()
    }

    fn decide(&self) -> (Selection, FlatFit) {
        let candidates = self.candidates();
        let mut fit = self.fit();
        let request = Request {
            preemptor_priority: self.preemptor,
            candidates: &candidates,
            bystanders: &self.bystanders,
            budgets: &self.budgets,
            now: self.now,
        };
        (select(&request, &mut fit), fit)
    }

    /// The same world with the candidates in another order.
    fn shuffled(&self, mut seed: u64) -> World {
        let mut copy = self.clone();
        for i in (1..copy.candidates.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            copy.candidates.swap(i, (seed % (i as u64 + 1)) as usize);
        }
        copy
    }
}

/// Naive `policy/v1` matching, written independently of the module's selector.
fn selects(budget: &Budget, namespace: &str, group: &PodGroup) -> bool {
    if budget.namespace != namespace || group.count <= 0 {
        return false;
    }
    let labels_ok = budget
        .selector
        .match_labels
        .as_ref()
        .is_none_or(|wanted| wanted.iter().all(|(k, v)| group.labels.get(k) == Some(v)));
    let expressions_ok = budget
        .selector
        .match_expressions
        .as_ref()
        .is_none_or(|all| {
            all.iter().all(|e| {
                let values = e.values.clone().unwrap_or_default();
                let value = group.labels.get(&e.key);
                match e.operator.as_str() {
                    "NotIn" => value.is_none_or(|v| !values.contains(v)),
                    "In" => value.is_some_and(|v| values.contains(v)),
                    _ => false,
                }
            })
        });
    labels_ok && expressions_ok
}

fn pods_under(budget: &Budget, namespace: &str, groups: &[PodGroup]) -> i64 {
    groups
        .iter()
        .filter(|g| selects(budget, namespace, g))
        .map(|g| i64::from(g.count))
        .sum()
}

/// Naive allowance: every selected admitted pod is healthy; unreadable budgets allow nothing.
fn allowed(world: &World, budget: &Budget) -> i64 {
    let healthy: i64 = world
        .candidates
        .iter()
        .map(|(c, _)| pods_under(budget, &c.namespace, &c.pod_sets))
        .chain(
            world
                .bystanders
                .iter()
                .map(|b| pods_under(budget, &b.namespace, &b.pod_sets)),
        )
        .sum();
    let resolve = |amount: &IntOrString| match amount {
        IntOrString::Int(n) => Some(i64::from(*n)),
        IntOrString::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map(|p| (p * healthy + 99) / 100),
    };
    let desired = match (&budget.min_available, &budget.max_unavailable) {
        (Some(min), None) => resolve(min),
        (None, Some(max)) => resolve(max).map(|m| (healthy - m).max(0)),
        _ => None,
    };
    desired.map_or(0, |d| (healthy - d).max(0))
}

fn tolerates(c: &Candidate, preemptor: i32, now: DateTime<Utc>) -> bool {
    preemptor < c.policy.minimum_preemptable_priority
        && (c.policy.toleration_seconds < 0
            || now < c.admitted_at + TimeDelta::seconds(c.policy.toleration_seconds))
}

fn victim_keys(world: &World, selection: &Selection) -> Option<Vec<WorkloadKey>> {
    selection.victims.as_ref().map(|v| {
        let mut keys: Vec<WorkloadKey> = v
            .iter()
            .map(|&i| world.candidates[i].0.key.clone())
            .collect();
        keys.sort();
        keys
    })
}

fn verdicts_by_key(world: &World, selection: &Selection) -> BTreeMap<WorkloadKey, Verdict> {
    world
        .candidates
        .iter()
        .zip(&selection.verdicts)
        .map(|((c, _), v)| (c.key.clone(), *v))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn victims_are_sound_minimal_and_deterministic(world in world(), seed in 1..u64::MAX) {
        let (selection, fit) = world.decide();
        let n = world.candidates.len();
        prop_assert_eq!(fit.removed_count(), 0);
        prop_assert_eq!(fit.misuse(), 0);
        prop_assert_eq!(selection.verdicts.len(), n);

        // Verdicts that do not depend on the search match the rules exactly.
        for ((c, _), verdict) in world.candidates.iter().zip(&selection.verdicts) {
            let outranks = !c.priority_exempt && c.priority >= world.preemptor;
            prop_assert_eq!(*verdict == Verdict::NotLowerPriority, outranks, "{}", c.key);
            if !outranks {
                prop_assert_eq!(
                    *verdict == Verdict::Tolerated,
                    tolerates(c, world.preemptor, world.now),
                    "{}", c.key
                );
            }
        }

        match &selection.victims {
            None => {
                // Evicting every candidate the rules allow would not have been enough.
                let mut fresh = world.fit();
                let allowed_ones: Vec<usize> = (0..n)
                    .filter(|&i| !matches!(
                        selection.verdicts[i],
                        Verdict::NotLowerPriority | Verdict::Tolerated | Verdict::BudgetProtected
                    ))
                    .collect();
                for &i in &allowed_ones {
                    fresh.remove(i);
                }
                prop_assert!(!fresh.fits());
                prop_assert!(selection.verdicts.iter().all(|v| *v != Verdict::Victim));
            }
            Some(victims) => {
                for (i, verdict) in selection.verdicts.iter().enumerate() {
                    prop_assert_eq!(*verdict == Verdict::Victim, victims.contains(&i));
                }
                // The victims make the preemptor fit.
                let mut fresh = world.fit();
                for &v in victims {
                    fresh.remove(v);
                }
                prop_assert!(fresh.fits());
                // Each one is needed: giving any single one back breaks the fit.
                for &v in victims {
                    fresh.restore(v);
                    prop_assert!(!fresh.fits(), "victim {} was not needed", v);
                    fresh.remove(v);
                }
                for &v in victims {
                    let c = &world.candidates[v].0;
                    prop_assert!(c.priority_exempt || c.priority < world.preemptor);
                    prop_assert!(!tolerates(c, world.preemptor, world.now));
                    // KEP-4664: a guarded victim's budgets hold, counting every victim.
                    if c.policy.guards_budgets_against(world.preemptor) {
                        for budget in &world.budgets {
                            if pods_under(budget, &c.namespace, &c.pod_sets) == 0 {
                                continue;
                            }
                            let evicted: i64 = victims
                                .iter()
                                .map(|&w| {
                                    let w = &world.candidates[w].0;
                                    pods_under(budget, &w.namespace, &w.pod_sets)
                                })
                                .sum();
                            prop_assert!(
                                evicted <= allowed(&world, budget),
                                "{} breaks {} ({} > {})",
                                c.key, budget.name, evicted, allowed(&world, budget)
                            );
                        }
                    }
                }
                for b in &selection.budget_breaking {
                    prop_assert!(victims.contains(b));
                    let c = &world.candidates[*b].0;
                    prop_assert!(!c.policy.guards_budgets_against(world.preemptor));
                }
            }
        }

        // Same snapshot in another order: same decision.
        let other = world.shuffled(seed);
        let (again, _) = other.decide();
        prop_assert_eq!(victim_keys(&world, &selection), victim_keys(&other, &again));
        prop_assert_eq!(verdicts_by_key(&world, &selection), verdicts_by_key(&other, &again));
        prop_assert_eq!(selection.summary(), again.summary());
    }
}
