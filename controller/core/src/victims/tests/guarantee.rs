//! The KEP-4664 hard guarantee (`allow-disruption-by-priority-greater-than-or-equal`).

use super::super::Verdict::{BudgetProtected, Reprieved, Tolerated, Victim};
use super::super::{Candidate, PodGroup};
use super::support::{Scene, allowing, budget, cand, int, labels, selector};

/// A candidate whose budgets may only be broken by preemptors at or above `threshold`.
fn guarded(name: &str, priority: i32, threshold: i32) -> Candidate {
    let mut c = cand(name, priority);
    c.policy.allow_disruption_by_priority_at_least = Some(threshold);
    c
}

fn shared(mut c: Candidate) -> Candidate {
    c.pod_sets[0].labels = labels(&[("app", "shared")]);
    c
}

#[test]
fn below_the_threshold_a_budget_is_never_broken() {
    let out = Scene::new(50, 2)
        .with(guarded("g", 1, 100), 2)
        .budget(allowing("g", 0))
        .run();
    assert_eq!(out.verdict("g"), BudgetProtected);
    assert_eq!(out.victims(), None);
    assert_eq!(
        out.selection.summary(),
        "no preemption possible (1 budget-protected)"
    );
}

#[test]
fn at_or_above_the_threshold_the_budget_may_be_broken() {
    for preemptor in [100, 150] {
        let out = Scene::new(preemptor, 2)
            .with(guarded("g", 1, 100), 2)
            .budget(allowing("g", 0))
            .run();
        assert_eq!(out.victims(), Some(vec!["g"]), "preemptor {preemptor}");
        assert_eq!(out.breaking(), vec!["g"], "preemptor {preemptor}");
    }
}

#[test]
fn protected_candidates_are_skipped_for_others() {
    let out = Scene::new(50, 2)
        .with(guarded("g", 1, 100), 2)
        .with(cand("plain", 3), 2)
        .budget(allowing("g", 0))
        .run();
    assert_eq!(out.verdict("g"), BudgetProtected);
    assert_eq!(out.victims(), Some(vec!["plain"]));
    assert_eq!(
        out.selection.summary(),
        "1 victim (1 budget-protected spared)"
    );
}

#[test]
fn a_budget_with_room_does_not_protect() {
    let out = Scene::new(50, 2)
        .with(guarded("g", 1, 100), 2)
        .budget(allowing("g", 1))
        .run();
    assert_eq!(out.victims(), Some(vec!["g"]));
    assert!(out.breaking().is_empty());
}

#[test]
fn a_guarded_candidate_no_budget_covers_is_not_protected() {
    let out = Scene::new(50, 2)
        .with(guarded("g", 1, 100), 2)
        .budget(allowing("someone-else", 0))
        .run();
    assert_eq!(out.victims(), Some(vec!["g"]));
}

#[test]
fn toleration_is_reported_before_protection() {
    let mut g = guarded("g", 1, 100);
    g.policy.minimum_preemptable_priority = 100;
    g.policy.toleration_seconds = -1;
    let out = Scene::new(50, 2).with(g, 2).budget(allowing("g", 0)).run();
    assert_eq!(out.verdict("g"), Tolerated);
}

#[test]
fn guarded_candidates_share_an_allowance_least_important_first() {
    // One disruption allowed between two guarded candidates: the less important one ("g2",
    // by key) stays evictable, "g1" is protected.
    let scene = |demand| {
        Scene::new(50, demand)
            .with(shared(guarded("g1", 1, 100)), 2)
            .with(shared(guarded("g2", 1, 100)), 2)
            .budget(allowing("shared", 1))
    };
    let out = scene(2).run();
    assert_eq!(out.verdict("g1"), BudgetProtected);
    assert_eq!(out.victims(), Some(vec!["g2"]));
    // Needing both would break the budget: impossible below the threshold.
    assert_eq!(scene(4).run().victims(), None);
}

#[test]
fn unguarded_candidates_under_the_same_budget_count_against_it() {
    // The rule is conservative: "u" could be evicted under the shared budget, so its pod is
    // reserved and the guarded "g" cannot also be, even though "u" alone is not enough.
    let scene = |allowed| {
        Scene::new(50, 4)
            .with(shared(guarded("g", 2, 100)), 4)
            .with(shared(cand("u", 1)), 1)
            .budget(allowing("shared", allowed))
    };
    let tight = scene(1).run();
    assert_eq!(tight.verdict("g"), BudgetProtected);
    assert_eq!(tight.victims(), None);

    // With room for both, "g" is evictable and "u" is given back.
    let roomy = scene(2).run();
    assert_eq!(roomy.victims(), Some(vec!["g"]));
    assert_eq!(roomy.verdict("u"), Reprieved);
    assert!(roomy.breaking().is_empty());
}

#[test]
fn every_budget_of_a_guarded_gang_must_have_room() {
    let mut g = guarded("gang", 1, 100);
    g.pod_sets = vec![
        PodGroup {
            labels: labels(&[("role", "driver")]),
            count: 1,
        },
        PodGroup {
            labels: labels(&[("role", "worker")]),
            count: 3,
        },
    ];
    let drivers = budget("drivers", selector(&[("role", "driver")]), None, int(1));
    let scene = |workers_unavailable| {
        Scene::new(50, 2)
            .with(g.clone(), 2)
            .budget(drivers.clone())
            .budget(budget(
                "workers",
                selector(&[("role", "worker")]),
                None,
                int(workers_unavailable),
            ))
    };
    assert_eq!(scene(2).run().verdict("gang"), BudgetProtected);
    let out = scene(3).run();
    assert_eq!(out.verdict("gang"), Victim);
    assert!(out.breaking().is_empty());
}

#[test]
fn bystanders_give_a_budget_room() {
    // minAvailable 2 over the "g" pods: with two running bystander pods, "g" may go.
    let scene = |bystander_pods| {
        Scene::new(50, 2)
            .with(guarded("g", 1, 100), 2)
            .bystander("g", bystander_pods)
            .budget(budget("g-pdb", selector(&[("app", "g")]), int(2), None))
    };
    assert_eq!(scene(1).run().verdict("g"), BudgetProtected);
    assert_eq!(scene(2).run().victims(), Some(vec!["g"]));
}
