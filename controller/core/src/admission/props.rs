//! Properties of the whole admission cycle over random clusters (see `props/strategy.rs`),
//! checked against a naive quota oracle written from DESIGN.md §4 rather than from
//! `quota.rs`: no panic; usage within nominal + borrowing limits and the cohort's lendable
//! quota, both right after the cycle (victims still holding quota) and once the victims are
//! gone and the preemptors run; victims sound and never chosen twice; gates respected;
//! queueing strategies respected; deterministic.

mod cycles;
mod strategy;

use std::collections::{BTreeMap, HashMap, HashSet};

use baton_crds::WorkloadKey;
use baton_crds::cluster_queue::{QueueingStrategy, ReclaimWithinCohort, WithinClusterQueue};
use proptest::prelude::*;

use super::assign::{Assignment, Mode};
use super::cycle::{Decision, Outcome, queue_order, schedule};
use super::model::{PendingModel, Snapshot};
use super::preempt::PreemptReason;
use super::quota::Limits;
use strategy::{Cluster, cluster, now};

impl Cluster {
    fn snapshot(&self) -> Snapshot {
        Snapshot::new(
            self.queues.clone(),
            self.flavors.clone(),
            self.limits.clone(),
            self.admitted.clone(),
            Vec::new(),
        )
    }

    fn run(&self) -> Vec<Decision> {
        schedule(&mut self.snapshot(), &self.pending, now())
    }

    fn pending(&self, key: &WorkloadKey) -> &PendingModel {
        match self.pending.iter().find(|p| p.workload.key == *key) {
            Some(p) => p,
            None => panic!("no pending workload {key}"),
        }
    }

    fn admitted_index(&self, key: &WorkloadKey) -> Option<usize> {
        self.admitted
            .iter()
            .position(|(a, _)| a.workload.key == *key)
    }
}

/// (queue, flavor, resource).
type Pair = (usize, String, String);

/// Usage by (queue, flavor, resource), in milli-units.
#[derive(Clone, Debug, Default)]
struct Ledger(BTreeMap<Pair, i128>);

impl Ledger {
    fn of_admitted(cluster: &Cluster, skip: &HashSet<WorkloadKey>) -> Self {
        let mut ledger = Ledger::default();
        for (a, named) in &cluster.admitted {
            if skip.contains(&a.workload.key) {
                continue;
            }
            for (flavor, resource, amount) in named {
                ledger.add(a.queue, flavor, resource, *amount);
            }
        }
        ledger
    }

    fn add(&mut self, queue: usize, flavor: &str, resource: &str, amount: i128) {
        *self
            .0
            .entry((queue, flavor.to_string(), resource.to_string()))
            .or_default() += amount;
    }

    fn add_assignment(&mut self, queue: usize, assignment: &Assignment) {
        for ps in &assignment.pod_sets {
            for (resource, flavor) in &ps.flavors {
                let amount = ps.usage.get(resource).copied().unwrap_or(0);
                self.add(queue, flavor, resource, amount);
            }
        }
    }

    fn used(&self, queue: usize, flavor: &str, resource: &str) -> i128 {
        self.0
            .get(&(queue, flavor.to_string(), resource.to_string()))
            .copied()
            .unwrap_or(0)
    }
}

/// How far each quota constraint is exceeded (negative: room left), by a readable name.
/// Written from the rules, not from `QuotaState`: a queue without a cohort holds at most its
/// nominal quota; a cohort member at most nominal + borrowingLimit; a cohort's members use,
/// beyond the part of their quota they do not lend, at most what they all lend together.
fn excess(cluster: &Cluster, ledger: &Ledger) -> BTreeMap<String, i128> {
    let limits: HashMap<Pair, Limits> = cluster
        .limits
        .iter()
        .map(|(q, f, r, l)| ((*q, f.clone(), r.clone()), *l))
        .collect();
    let mut out = BTreeMap::new();
    let mut pairs: HashSet<(String, String)> = ledger
        .0
        .keys()
        .map(|(_, f, r)| (f.clone(), r.clone()))
        .collect();
    pairs.extend(limits.keys().map(|(_, f, r)| (f.clone(), r.clone())));
    for (flavor, resource) in &pairs {
        let mut cohorts: BTreeMap<&str, (i128, i128)> = BTreeMap::new();
        for (q, queue) in cluster.queues.iter().enumerate() {
            let used = ledger.used(q, flavor, resource);
            let l = limits
                .get(&(q, flavor.clone(), resource.clone()))
                .copied()
                .unwrap_or_default();
            let guaranteed = l.lending_limit.map_or(0, |lend| (l.nominal - lend).max(0));
            match &queue.cohort {
                None => {
                    out.insert(
                        format!("{} {flavor}/{resource} <= nominal", queue.name),
                        used - l.nominal,
                    );
                }
                Some(cohort) => {
                    if let Some(b) = l.borrowing_limit {
                        out.insert(
                            format!("{} {flavor}/{resource} <= nominal+borrowing", queue.name),
                            used - l.nominal - b,
                        );
                    }
                    let entry = cohorts.entry(cohort).or_default();
                    entry.0 += (used - guaranteed).max(0);
                    entry.1 += l.nominal - guaranteed;
                }
            }
        }
        for (cohort, (beyond, lendable)) in cohorts {
            out.insert(
                format!("cohort {cohort} {flavor}/{resource} <= lendable"),
                beyond - lendable,
            );
        }
    }
    out
}

/// Constraints that the cycle made worse: exceeded after, and by more than before.
fn newly_exceeded(
    before: &BTreeMap<String, i128>,
    after: &BTreeMap<String, i128>,
) -> Vec<(String, i128, i128)> {
    after
        .iter()
        .filter_map(|(name, &a)| {
            let b = before.get(name).copied().unwrap_or(i128::MIN);
            (a > 0 && a > b).then(|| (name.clone(), b, a))
        })
        .collect()
}

fn victims_of(d: &Decision) -> Vec<&WorkloadKey> {
    match &d.outcome {
        Outcome::Preempt { victims, .. } => victims.iter().map(|v| &v.key).collect(),
        _ => Vec::new(),
    }
}

fn queue_of(cluster: &Cluster, d: &Decision) -> usize {
    cluster.pending(&d.key).queue
}

/// Replays the decisions in order on two ledgers: what is held right now (victims keep their
/// quota until their pods are gone) and what will be held once this cycle's preemptions are
/// done (victims gone, preemptors running). Returns, for each admission, the constraints it
/// newly exceeds in either.
fn admissions_beyond_quota(cluster: &Cluster, decisions: &[Decision]) -> Vec<String> {
    let mut now = Ledger::of_admitted(cluster, &HashSet::new());
    let mut later = now.clone();
    let mut gone: HashSet<WorkloadKey> = HashSet::new();
    // The victims waiting preemptors chose in earlier cycles leave whatever this cycle
    // decides (their preemptors wait for them, retrying evictions that did not land): a
    // preemption counts as done until its preemptor is admitted.
    for d in decisions {
        if let Outcome::Waiting { victims } = &d.outcome {
            for key in victims {
                if gone.insert(key.clone())
                    && let Some(i) = cluster.admitted_index(key)
                {
                    let (victim, named) = &cluster.admitted[i];
                    for (flavor, resource, amount) in named {
                        later.add(victim.queue, flavor, resource, -amount);
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    for d in decisions {
        let queue = queue_of(cluster, d);
        let Some(assignment) = &d.assignment else {
            continue;
        };
        let leaving: Vec<WorkloadKey> = match &d.outcome {
            Outcome::Preempt { .. } => victims_of(d).into_iter().cloned().collect(),
            // A waiting preemptor (its assignment is the one once its victims are gone).
            Outcome::Waiting { victims } if assignment.mode != Mode::NoFit => victims.clone(),
            Outcome::Admit => {
                for (name, ledger) in [
                    ("right after the cycle", &mut now),
                    ("once the victims are gone", &mut later),
                ] {
                    let before = excess(cluster, ledger);
                    ledger.add_assignment(queue, assignment);
                    for (constraint, b, a) in newly_exceeded(&before, &excess(cluster, ledger)) {
                        found.push(format!(
                            "admitting {} exceeds {constraint} {name}: {b} -> {a}",
                            d.key
                        ));
                    }
                }
                continue;
            }
            _ => continue,
        };
        for key in leaving {
            if !gone.insert(key.clone()) {
                continue;
            }
            if let Some(i) = cluster.admitted_index(&key) {
                let (victim, named) = &cluster.admitted[i];
                for (flavor, resource, amount) in named {
                    later.add(victim.queue, flavor, resource, -amount);
                }
            }
        }
        later.add_assignment(queue, assignment);
    }
    found
}

proptest! {
    // The default 256 cases (PROPTEST_CASES=N for a longer hunt).

    /// The cycle never admits beyond nominal + borrowing limits nor beyond what the cohort
    /// lends: neither right after it, while the victims still hold their quota, nor once they
    /// are gone and the preemptors run (else a lower-priority workload admitted beside a
    /// preemptor's victims is evicted again by the same preemptor: a livelock).
    #[test]
    fn admissions_stay_within_quota(c in cluster()) {
        let decisions = c.run();
        let beyond = admissions_beyond_quota(&c, &decisions);
        prop_assert!(beyond.is_empty(), "{:#?}\n{:#?}", beyond, decisions);
    }

    /// One decision per pending workload at most, for pending workloads only; a victim is an
    /// admitted workload still running, chosen by one preemptor only, never also admitted.
    #[test]
    fn decisions_and_victims_are_sound(c in cluster()) {
        let decisions = c.run();
        let mut seen = HashSet::new();
        for d in &decisions {
            prop_assert!(seen.insert(d.key.clone()), "two decisions for {}", d.key);
            prop_assert!(c.pending.iter().any(|p| p.workload.key == d.key));
        }
        let admitted: HashSet<&WorkloadKey> = decisions
            .iter()
            .filter(|d| d.outcome == Outcome::Admit)
            .map(|d| &d.key)
            .collect();
        let mut chosen = HashSet::new();
        for d in &decisions {
            let preemptor = c.pending(&d.key);
            for v in victims_of(d) {
                prop_assert!(chosen.insert(v), "{} chosen twice in one cycle", v);
                prop_assert!(!admitted.contains(v), "{} both admitted and a victim", v);
                let i = c.admitted_index(v);
                prop_assert!(i.is_some(), "victim {} is not admitted", v);
                let (victim, _) = &c.admitted[i.unwrap_or_default()];
                prop_assert!(!victim.evicting, "{} is already being evicted", v);
                let neighbours = c.snapshot().neighbourhood(preemptor.queue);
                prop_assert!(neighbours.contains(&victim.queue), "{} is outside the cohort", v);
            }
        }
    }

    /// A victim has a lower priority than its preemptor, except where a policy allows more:
    /// `reclaimWithinCohort: Any`, or `LowerOrNewerEqualPriority` for a newer equal one.
    #[test]
    fn victims_follow_the_preemption_policies(c in cluster()) {
        for d in c.run() {
            let Outcome::Preempt { victims, .. } = &d.outcome else { continue };
            let preemptor = c.pending(&d.key);
            let policy = &c.queues[preemptor.queue].preemption;
            for v in victims {
                let (victim, _) = &c.admitted[c.admitted_index(&v.key).unwrap_or_default()];
                let (vp, pp) = (victim.workload.priority, preemptor.workload.priority);
                let allowed = match v.reason {
                    PreemptReason::InClusterQueue => {
                        victim.queue == preemptor.queue
                            && (vp < pp
                                || (vp == pp
                                    && policy.within_cluster_queue
                                        == WithinClusterQueue::LowerOrNewerEqualPriority
                                    && (victim.workload.created, &victim.workload.key)
                                        > (preemptor.workload.created, &preemptor.workload.key)))
                    }
                    PreemptReason::InCohortReclamation => {
                        victim.queue != preemptor.queue
                            && (vp < pp || policy.reclaim_within_cohort == ReclaimWithinCohort::Any)
                    }
                    PreemptReason::InCohortReclaimWhileBorrowing => {
                        victim.queue != preemptor.queue && vp < pp
                    }
                };
                prop_assert!(allowed, "{} may not preempt {} ({:?})", d.key, v.key, v.reason);
            }
        }
    }

    /// KEP-8303 on the worker: a workload with a Closed gate never preempts, it signals; one
    /// without never signals; and opening the gate changes nothing but that outcome: the same
    /// assignment, the same number of victims.
    #[test]
    fn preemption_only_through_an_open_gate(c in cluster()) {
        let decisions = c.run();
        for d in &decisions {
            let gated = c.pending(&d.key).gate_closed;
            match &d.outcome {
                Outcome::Preempt { victims, .. } => {
                    prop_assert!(!gated, "{} preempted through a Closed gate", d.key);
                    prop_assert!(!victims.is_empty());
                }
                Outcome::Gated { victims, cost, .. } => {
                    prop_assert!(gated, "{} signals without a Closed gate", d.key);
                    prop_assert!(*victims >= 1);
                    prop_assert_eq!(i64::from(cost.victims), *victims as i64);
                }
                _ => {}
            }
        }
        if let Some(first) = decisions.iter().position(|d| matches!(d.outcome, Outcome::Gated { .. })) {
            let mut opened = c.clone();
            let key = decisions[first].key.clone();
            if let Some(p) = opened.pending.iter_mut().find(|p| p.workload.key == key) {
                p.gate_closed = false;
            }
            let after = opened.run();
            prop_assert_eq!(&after[..first], &decisions[..first]);
            let Outcome::Gated { victims, .. } = &decisions[first].outcome else { unreachable!() };
            match &after[first].outcome {
                Outcome::Preempt { victims: chosen, .. } => prop_assert_eq!(chosen.len(), *victims),
                other => prop_assert!(false, "opening {}'s gate gave {:?}", key, other),
            }
            prop_assert_eq!(&after[first].assignment, &decisions[first].assignment);
        }
    }

    /// Queue order and strategies: an inactive queue admits nothing; a StrictFIFO queue
    /// decides a prefix of its queue, all admitted but perhaps the last; a BestEffortFIFO
    /// queue decides every workload, setting aside only those that cannot proceed.
    #[test]
    fn queueing_strategies_are_respected(c in cluster()) {
        let decisions = c.run();
        let by_key: HashMap<&str, &Decision> = decisions.iter().map(|d| (d.key.as_str(), d)).collect();
        for (q, queue) in c.queues.iter().enumerate() {
            let mut members: Vec<&PendingModel> = c.pending.iter().filter(|p| p.queue == q).collect();
            members.sort_by(|a, b| queue_order(a, b));
            let outcomes: Vec<Option<&Decision>> = members
                .iter()
                .map(|p| by_key.get(p.workload.key.as_str()).copied())
                .collect();
            if queue.inactive.is_some() {
                for d in outcomes.iter().flatten() {
                    let pending = matches!(d.outcome, Outcome::Pending { .. });
                    prop_assert!(pending, "inactive {} decided {:?}", queue.name, d.outcome);
                }
            }
            match queue.strategy {
                QueueingStrategy::StrictFIFO => {
                    let decided = outcomes.iter().take_while(|d| d.is_some()).count();
                    prop_assert!(outcomes[decided..].iter().all(Option::is_none), "{} skipped its order", queue.name);
                    prop_assert!(outcomes.is_empty() || decided > 0, "{} decided nothing", queue.name);
                    for d in outcomes.iter().take(decided.saturating_sub(1)).flatten() {
                        prop_assert_eq!(&d.outcome, &Outcome::Admit, "{} passed a blocked head", queue.name);
                    }
                    prop_assert!(outcomes.iter().flatten().all(|d| !d.set_aside));
                }
                QueueingStrategy::BestEffortFIFO => {
                    prop_assert!(outcomes.iter().all(Option::is_some), "{} left a workload undecided", queue.name);
                    for d in outcomes.iter().flatten() {
                        let proceeds = matches!(d.outcome, Outcome::Admit | Outcome::Preempt { .. } | Outcome::Waiting { .. });
                        prop_assert!(!(proceeds && d.set_aside), "{} set aside while proceeding", d.key);
                    }
                }
            }
        }
    }

    /// The same snapshot gives the same decisions, whatever the order of the pending list.
    #[test]
    fn the_cycle_is_deterministic(c in cluster(), seed in any::<u64>()) {
        let first = c.run();
        prop_assert_eq!(&first, &c.run());
        let mut shuffled = c.clone();
        let len = shuffled.pending.len();
        for i in (1..len).rev() {
            shuffled.pending.swap(i, (seed as usize).wrapping_mul(i + 7) % (i + 1));
        }
        prop_assert_eq!(first, shuffled.run());
    }
}
