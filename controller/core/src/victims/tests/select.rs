//! The search: filtering, threshold, reprieve order, gangs, exemption.

use super::super::Verdict::{
    AboveThreshold, BudgetProtected, NotLowerPriority, NotNeeded, Reprieved, Tolerated, Victim,
};
use super::super::{Fit, FlatFit, PodGroup, Request, VictimPolicy, select};
use super::support::{Scene, allowing, at, cand, labels, t0};

#[test]
fn no_candidates_means_no_preemption() {
    let out = Scene::new(10, 1).run();
    assert_eq!(out.victims(), None);
    assert_eq!(out.selection.summary(), "no preemption possible");
}

#[test]
fn a_preemptor_that_already_fits_needs_no_victim() {
    let mut scene = Scene::new(10, 2).with(cand("a", 1), 5);
    scene.free = 2;
    let out = scene.run();
    assert_eq!(out.victims(), Some(vec![]));
    assert_eq!(out.verdict("a"), NotNeeded);
    assert_eq!(out.selection.summary(), "no preemption needed");
}

#[test]
fn not_enough_even_evicting_everything() {
    let out = Scene::new(10, 5)
        .with(cand("a", 1), 2)
        .with(cand("b", 2), 2)
        .with(cand("high", 10), 4)
        .run();
    assert_eq!(out.victims(), None);
    assert_eq!(out.verdict("a"), NotNeeded);
    assert_eq!(out.verdict("b"), NotNeeded);
    assert_eq!(out.verdict("high"), NotLowerPriority);
}

#[test]
fn equal_or_higher_priority_is_never_a_victim_unless_exempt() {
    let out = Scene::new(5, 2)
        .with(cand("equal", 5), 2)
        .with(cand("higher", 7), 2)
        .run();
    assert_eq!(out.victims(), None);
    assert_eq!(out.verdict("equal"), NotLowerPriority);
    assert_eq!(out.verdict("higher"), NotLowerPriority);

    let mut equal = cand("equal", 5);
    equal.priority_exempt = true;
    let mut higher = cand("higher", 7);
    higher.priority_exempt = true;
    let out = Scene::new(5, 2)
        .with(equal, 2)
        .with(higher, 2)
        .with(cand("low", 1), 1)
        .run();
    // Exempt candidates join the threshold search at their own priority: the equal one
    // suffices, so the higher one stays above the threshold.
    assert_eq!(out.victims(), Some(vec!["equal"]));
    assert_eq!(out.verdict("higher"), AboveThreshold);
    assert_eq!(out.verdict("low"), Reprieved);
}

#[test]
fn threshold_is_the_lowest_sufficient_priority() {
    // Eight candidates of priority 1..=8, one unit each; the preemptor needs five.
    let mut scene = Scene::new(100, 5);
    for p in 1..=8 {
        scene = scene.with(cand(&format!("p{p}"), p), 1);
    }
    let out = scene.run();
    assert_eq!(out.victims(), Some(vec!["p5", "p4", "p3", "p2", "p1"]));
    for p in 6..=8 {
        assert_eq!(out.verdict(&format!("p{p}")), AboveThreshold);
    }
}

#[test]
fn threshold_beats_budget_reprieve_order() {
    // "low" breaks a budget, so the reprieve pass would try it first and evict "high"
    // instead; the threshold search keeps "high" out of reach because "low" alone suffices.
    let out = Scene::new(100, 4)
        .with(cand("low", 1), 4)
        .with(cand("high", 2), 4)
        .budget(allowing("low", 0))
        .run();
    assert_eq!(out.victims(), Some(vec!["low"]));
    assert_eq!(out.verdict("high"), AboveThreshold);
    assert_eq!(out.breaking(), vec!["low"]);
    assert_eq!(
        out.selection.summary(),
        "1 victim, 1 over a disruption budget"
    );
}

#[test]
fn reprieve_keeps_higher_priority_first() {
    // "a" alone is not enough, so all three are potential victims. Given back most important
    // first, "y" stays and the preemptor takes "z" and "a"; lowest first would have kept "a"
    // and taken both priority-2 workloads.
    let out = Scene::new(100, 2)
        .with(cand("a", 1), 1)
        .with(cand("y", 2), 1)
        .with(cand("z", 2), 1)
        .run();
    assert_eq!(out.verdict("y"), Reprieved);
    assert_eq!(out.victims(), Some(vec!["z", "a"]));
}

#[test]
fn reprieve_keeps_longer_running_then_key_order() {
    let mut old = cand("old", 1);
    old.admitted_at = at(-600);
    let out = Scene::new(10, 2).with(cand("new", 1), 2).with(old, 2).run();
    assert_eq!(out.victims(), Some(vec!["new"]));
    assert_eq!(out.verdict("old"), Reprieved);

    // Same priority and admission: the key decides ("a" before "b" is given back).
    let out = Scene::new(10, 2)
        .with(cand("b", 1), 2)
        .with(cand("a", 1), 2)
        .run();
    assert_eq!(out.victims(), Some(vec!["b"]));
}

#[test]
fn budget_violating_candidates_are_reprieved_first() {
    // Without budgets "old" (longer running) would be kept and "new" evicted.
    let mut old = cand("old", 1);
    old.admitted_at = at(-600);
    let out = Scene::new(10, 2)
        .with(old, 2)
        .with(cand("new", 1), 2)
        .budget(allowing("new", 0))
        .run();
    assert_eq!(out.verdict("new"), Reprieved);
    assert_eq!(out.victims(), Some(vec!["old"]));
    assert!(out.breaking().is_empty());
}

#[test]
fn budget_walk_is_most_important_first() {
    // One budget over all three allows one disruption: walking most important first, "a"
    // spends it and "b", "c" violate, so they are tried first and "a" is the victim.
    let mut scene = Scene::new(10, 2);
    for name in ["a", "b", "c"] {
        let mut c = cand(name, 1);
        c.pod_sets[0].labels = labels(&[("app", "shared")]);
        scene = scene.with(c, 2);
    }
    let out = scene.budget(allowing("shared", 1)).run();
    assert_eq!(out.victims(), Some(vec!["a"]));
    assert!(out.breaking().is_empty());

    // Needing two of them, one eviction has to break the budget.
    let mut scene = Scene::new(10, 4);
    for name in ["a", "b", "c"] {
        let mut c = cand(name, 1);
        c.pod_sets[0].labels = labels(&[("app", "shared")]);
        scene = scene.with(c, 2);
    }
    let out = scene.budget(allowing("shared", 1)).run();
    assert_eq!(out.victims(), Some(vec!["a", "c"]));
    assert_eq!(out.breaking(), vec!["c"]);
}

#[test]
fn tolerating_candidates_are_skipped_until_their_period_ends() {
    let mut sticky = cand("sticky", 1);
    sticky.admitted_at = t0();
    sticky.policy = VictimPolicy {
        minimum_preemptable_priority: 1000,
        toleration_seconds: 600,
        allow_disruption_by_priority_at_least: None,
    };
    let scene = |now| {
        Scene::new(10, 2)
            .with(sticky.clone(), 2)
            .with(cand("plain", 2), 2)
            .at(now)
    };
    let early = scene(at(300)).run();
    assert_eq!(early.verdict("sticky"), Tolerated);
    assert_eq!(early.victims(), Some(vec!["plain"]));
    assert_eq!(early.selection.summary(), "1 victim (1 tolerating spared)");

    // After the period the lower-priority "sticky" is the natural victim.
    let late = scene(at(600)).run();
    assert_eq!(late.victims(), Some(vec!["sticky"]));
    assert_eq!(late.verdict("plain"), AboveThreshold);

    // A preemptor at the class's minimum is never tolerated.
    let mut strong = scene(at(300));
    strong.preemptor = 1000;
    assert_eq!(strong.run().victims(), Some(vec!["sticky"]));
}

#[test]
fn forever_tolerating_candidates_can_make_preemption_impossible() {
    let mut sticky = cand("sticky", 1);
    sticky.policy.minimum_preemptable_priority = 50;
    sticky.policy.toleration_seconds = -1;
    let out = Scene::new(10, 2).with(sticky, 2).at(at(100_000_000)).run();
    assert_eq!(out.victims(), None);
    assert_eq!(out.verdict("sticky"), Tolerated);
    assert_eq!(
        out.selection.summary(),
        "no preemption possible (1 tolerating)"
    );
}

#[test]
fn gangs_are_evicted_whole() {
    // One workload with a driver and four workers: a single victim index whatever the
    // pod sets, and the budget sees all four worker pods go at once.
    let mut gang = cand("gang", 1);
    gang.pod_sets = vec![
        PodGroup {
            labels: labels(&[("app", "gang"), ("role", "driver")]),
            count: 1,
        },
        PodGroup {
            labels: labels(&[("app", "gang"), ("role", "worker")]),
            count: 4,
        },
    ];
    let workers = super::support::budget(
        "workers",
        super::support::selector(&[("role", "worker")]),
        None,
        super::support::int(3),
    );
    let out = Scene::new(10, 5)
        .with(gang, 5)
        .with(cand("single", 2), 1)
        .budget(workers)
        .run();
    assert_eq!(out.victims(), Some(vec!["gang"]));
    assert_eq!(out.breaking(), vec!["gang"]);
}

/// A Fit that counts how it is used, around a FlatFit.
struct Counting {
    inner: FlatFit,
    removes: usize,
    restores: usize,
    checks: std::cell::Cell<usize>,
}

impl Fit for Counting {
    fn remove(&mut self, candidate: usize) {
        self.removes += 1;
        self.inner.remove(candidate);
    }
    fn restore(&mut self, candidate: usize) {
        self.restores += 1;
        self.inner.restore(candidate);
    }
    fn fits(&self) -> bool {
        self.checks.set(self.checks.get() + 1);
        self.inner.fits()
    }
}

#[test]
fn the_fit_is_used_incrementally_and_left_balanced() {
    let n = 1000;
    let candidates: Vec<_> = (0..n)
        .map(|i| cand(&format!("c{i:04}"), (i % 50) as i32))
        .collect();
    let mut inner = FlatFit::new(vec![n as i64], vec![100]);
    for _ in 0..n {
        inner.push_candidate(&[1]);
    }
    let mut fit = Counting {
        inner,
        removes: 0,
        restores: 0,
        checks: std::cell::Cell::new(0),
    };
    let request = Request {
        preemptor_priority: 100,
        candidates: &candidates,
        bystanders: &[],
        budgets: &[],
        now: at(0),
    };
    let selection = select(&request, &mut fit);
    assert_eq!(selection.victims.as_ref().map(Vec::len), Some(100));
    assert_eq!(fit.removes, fit.restores);
    assert_eq!(fit.inner.removed_count(), 0);
    assert_eq!(fit.inner.misuse(), 0);
    // Remove all, search moves (geometric, at most 2n), reprieve (one each): linear.
    assert!(fit.removes <= 4 * n, "{} removes", fit.removes);
    // One check per reprieve plus a logarithmic search and the initial checks.
    assert!(fit.checks.get() <= n + 20, "{} checks", fit.checks.get());
    assert!(
        selection
            .verdicts
            .iter()
            .all(|v| matches!(v, Victim | Reprieved | AboveThreshold)),
    );
    assert!(!selection.verdicts.contains(&BudgetProtected));
}
