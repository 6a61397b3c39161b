//! Disruption budget arithmetic, selectors and coverage.

use baton_crds::WorkloadKey;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::super::budgets::{BudgetBook, allowed_disruptions};
use super::super::selector::Selector;
use super::super::{Bystander, PodGroup, Request};
use super::support::{NS, at, budget, cand, expression, int, labels, percent, selector};

#[test]
fn allowance_table() {
    // (minAvailable, maxUnavailable, healthy, allowed)
    let table: Vec<(Option<IntOrString>, Option<IntOrString>, i64, i64)> = vec![
        (int(3), None, 5, 2),
        (int(5), None, 5, 0),
        (int(7), None, 5, 0),
        (int(0), None, 5, 5),
        // 50% of 5 = 2.5, rounded up to 3 kept.
        (percent("50%"), None, 5, 2),
        (percent("100%"), None, 5, 0),
        (percent("0%"), None, 5, 5),
        (percent("1%"), None, 5, 4),
        (None, int(2), 5, 2),
        (None, int(0), 5, 0),
        (None, int(10), 5, 5),
        // 30% of 5 = 1.5, rounded up to 2 unavailable: 3 kept.
        (None, percent("30%"), 5, 2),
        (None, percent("1%"), 5, 1),
        (None, percent("100%"), 5, 5),
        (None, percent("0%"), 5, 0),
        // Nothing selected: nothing to disrupt.
        (int(1), None, 0, 0),
        (None, percent("50%"), 0, 0),
        // Neither field: the controller keeps nothing.
        (None, None, 4, 4),
    ];
    for (min, max, healthy, expected) in table {
        let b = budget("b", LabelSelector::default(), min.clone(), max.clone());
        assert_eq!(
            allowed_disruptions(&b, healthy),
            Ok(expected),
            "min {min:?} max {max:?} healthy {healthy}"
        );
    }
}

#[test]
fn unreadable_budgets_are_errors_not_panics() {
    let table: Vec<(Option<IntOrString>, Option<IntOrString>, &str)> = vec![
        (percent("half"), None, "not a percentage"),
        (percent("50"), None, "not a percentage"),
        (percent("150%"), None, "not a percentage"),
        (percent("-5%"), None, "not a percentage"),
        (percent("%"), None, "not a percentage"),
        (None, percent("5.5%"), "not a percentage"),
        (int(-1), None, "negative"),
        (None, int(-3), "negative"),
        (int(1), int(1), "both"),
    ];
    for (min, max, words) in table {
        let b = budget("b", LabelSelector::default(), min.clone(), max.clone());
        match allowed_disruptions(&b, 5) {
            Err(why) => assert!(why.contains(words), "{why}"),
            Ok(n) => panic!("min {min:?} max {max:?} accepted as {n}"),
        }
    }
}

#[test]
fn selector_table() {
    let pod = labels(&[("app", "web"), ("tier", "front")]);
    let bare = labels(&[]);
    // (selector, matches pod, matches an unlabelled pod)
    let table = vec![
        (LabelSelector::default(), true, true),
        (
            LabelSelector {
                match_labels: Some(labels(&[])),
                match_expressions: Some(vec![]),
            },
            true,
            true,
        ),
        (selector(&[("app", "web")]), true, false),
        (selector(&[("app", "web"), ("tier", "back")]), false, false),
        (with(expression("app", "In", &["db", "web"])), true, false),
        (with(expression("app", "In", &["db"])), false, false),
        (with(expression("app", "NotIn", &["db"])), true, true),
        (with(expression("app", "NotIn", &["web"])), false, true),
        (with(expression("tier", "Exists", &[])), true, false),
        (with(expression("tier", "DoesNotExist", &[])), false, true),
    ];
    for (sel, on_pod, on_bare) in table {
        let parsed = match Selector::parse(&sel) {
            Ok(parsed) => parsed,
            Err(why) => panic!("{sel:?}: {why}"),
        };
        assert_eq!(parsed.matches(&pod), on_pod, "{sel:?}");
        assert_eq!(parsed.matches(&bare), on_bare, "{sel:?}");
    }
}

fn with(
    requirement: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement,
) -> LabelSelector {
    LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![requirement]),
    }
}

#[test]
fn invalid_selectors_are_rejected() {
    for requirement in [
        expression("app", "In", &[]),
        expression("app", "NotIn", &[]),
        expression("app", "Exists", &["x"]),
        expression("app", "DoesNotExist", &["x"]),
        expression("app", "in", &["x"]),
        expression("app", "Gt", &["1"]),
    ] {
        assert!(
            Selector::parse(&with(requirement.clone())).is_err(),
            "{requirement:?}"
        );
    }
}

#[test]
fn coverage_counts_pods_per_namespace_including_bystanders() {
    let mut web = cand("web", 1);
    // A gang: two pod sets, one selected by the budget.
    web.pod_sets = vec![
        PodGroup {
            labels: labels(&[("app", "web"), ("role", "driver")]),
            count: 1,
        },
        PodGroup {
            labels: labels(&[("app", "web"), ("role", "worker")]),
            count: 4,
        },
    ];
    let mut elsewhere = cand("web", 1);
    elsewhere.namespace = "other".to_string();
    elsewhere.key = WorkloadKey::new("other", "web");
    let candidates = vec![web, elsewhere, cand("db", 1)];
    let bystanders = vec![Bystander {
        namespace: NS.to_string(),
        pod_sets: vec![PodGroup {
            labels: labels(&[("app", "web"), ("role", "worker")]),
            count: 2,
        }],
    }];
    let budgets = vec![
        // 6 workers selected (4 + 2 bystanders); keep 4: 2 may go.
        budget("workers", selector(&[("role", "worker")]), int(4), None),
        // Covers no candidate: never evaluated, so its bad value is not reported.
        budget("unused", selector(&[("app", "none")]), percent("bad"), None),
        // Covers one candidate and cannot be read: reported, allows nothing.
        budget("broken", selector(&[("app", "db")]), percent("lots"), None),
        budget(
            "bad-selector",
            with(expression("app", "Exists", &["x"])),
            None,
            None,
        ),
    ];
    let request = Request {
        preemptor_priority: 10,
        candidates: &candidates,
        bystanders: &bystanders,
        budgets: &budgets,
        now: at(0),
    };
    let book = BudgetBook::new(&request);
    let hits: Vec<(usize, i64)> = book.hits(0).iter().map(|h| (h.budget, h.pods)).collect();
    assert_eq!(hits, vec![(0, 4)]);
    assert!(book.hits(1).is_empty(), "budgets are namespaced");
    let hits: Vec<(usize, i64)> = book.hits(2).iter().map(|h| (h.budget, h.pods)).collect();
    assert_eq!(hits, vec![(2, 1)]);
    assert_eq!(book.allowance()[0], 2);
    assert_eq!(book.allowance()[2], 0);
    let problems: Vec<(String, String)> = book
        .into_problems()
        .into_iter()
        .map(|p| (p.name, p.message))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert_eq!(problems[0].0, "bad-selector");
    assert!(
        problems[0].1.contains("values must be empty"),
        "{problems:?}"
    );
    assert_eq!(problems[1].0, "broken");
    assert!(
        problems[1].1.contains("allows no disruption"),
        "{problems:?}"
    );
}
