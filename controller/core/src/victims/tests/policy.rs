//! Annotation parsing and the toleration rule.

use std::collections::BTreeMap;

use super::super::{
    ALLOW_DISRUPTION_BY_PRIORITY, ANNOTATION_PREFIX, MINIMUM_PREEMPTABLE_PRIORITY,
    TOLERATION_SECONDS, VictimPolicy, policy_from_annotations,
};
use super::support::{at, t0};

fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn annotation_keys_share_the_prefix() {
    for key in [
        MINIMUM_PREEMPTABLE_PRIORITY,
        TOLERATION_SECONDS,
        ALLOW_DISRUPTION_BY_PRIORITY,
    ] {
        assert!(key.starts_with(ANNOTATION_PREFIX), "{key}");
    }
}

#[test]
fn no_annotations_give_the_defaults() {
    let (policy, problems) = policy_from_annotations(100, &BTreeMap::new());
    assert_eq!(policy, VictimPolicy::default_for(100));
    assert_eq!(policy.minimum_preemptable_priority, 101);
    assert_eq!(policy.toleration_seconds, 0);
    assert_eq!(policy.allow_disruption_by_priority_at_least, None);
    assert!(problems.is_empty());
}

#[test]
fn default_minimum_saturates_at_the_top_priority() {
    assert_eq!(
        VictimPolicy::default_for(i32::MAX).minimum_preemptable_priority,
        i32::MAX
    );
}

#[test]
fn valid_annotations_are_read() {
    let (policy, problems) = policy_from_annotations(
        8000,
        &annotations(&[
            (MINIMUM_PREEMPTABLE_PRIORITY, "10000"),
            (TOLERATION_SECONDS, "-1"),
            (ALLOW_DISRUPTION_BY_PRIORITY, "2000000000"),
            ("unrelated.example.com/thing", "whatever"),
        ]),
    );
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        policy,
        VictimPolicy {
            minimum_preemptable_priority: 10000,
            toleration_seconds: -1,
            allow_disruption_by_priority_at_least: Some(2_000_000_000),
        }
    );
}

#[test]
fn malformed_annotations_fall_back_and_are_reported() {
    // (annotation, value, words the message must contain)
    let table: &[(&str, &str, &str)] = &[
        (MINIMUM_PREEMPTABLE_PRIORITY, "ten", "not an integer"),
        (MINIMUM_PREEMPTABLE_PRIORITY, "", "not an integer"),
        (MINIMUM_PREEMPTABLE_PRIORITY, "1e3", "not an integer"),
        (MINIMUM_PREEMPTABLE_PRIORITY, "3000000000", "out of range"),
        (TOLERATION_SECONDS, "1.5", "not an integer"),
        (TOLERATION_SECONDS, " 60", "not an integer"),
        (TOLERATION_SECONDS, "99999999999999999999", "out of range"),
        (
            ALLOW_DISRUPTION_BY_PRIORITY,
            "2000000001",
            "exceeds the maximum",
        ),
        (ALLOW_DISRUPTION_BY_PRIORITY, "high", "not an integer"),
        (
            "preemption-toleration.scheduling.x-k8s.io/toleration-second",
            "60",
            "unknown",
        ),
    ];
    for (annotation, value, words) in table {
        let (policy, problems) = policy_from_annotations(5, &annotations(&[(annotation, value)]));
        assert_eq!(policy, VictimPolicy::default_for(5), "{annotation}={value}");
        assert_eq!(problems.len(), 1, "{annotation}={value}");
        let problem = &problems[0];
        assert_eq!(problem.annotation, *annotation);
        assert!(problem.message.contains(annotation), "{}", problem.message);
        assert!(
            problem.message.contains(&format!("{value:?}")),
            "{}",
            problem.message
        );
        assert!(problem.message.contains(words), "{}", problem.message);
    }
}

#[test]
fn one_bad_annotation_does_not_spoil_the_others() {
    let (policy, problems) = policy_from_annotations(
        5,
        &annotations(&[
            (MINIMUM_PREEMPTABLE_PRIORITY, "50"),
            (TOLERATION_SECONDS, "soon"),
            (ALLOW_DISRUPTION_BY_PRIORITY, "40"),
        ]),
    );
    assert_eq!(policy.minimum_preemptable_priority, 50);
    assert_eq!(policy.toleration_seconds, 0);
    assert_eq!(policy.allow_disruption_by_priority_at_least, Some(40));
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].annotation, TOLERATION_SECONDS);
}

fn policy(minimum: i32, seconds: i64) -> VictimPolicy {
    VictimPolicy {
        minimum_preemptable_priority: minimum,
        toleration_seconds: seconds,
        allow_disruption_by_priority_at_least: None,
    }
}

#[test]
fn toleration_table() {
    // (minimum, seconds, preemptor, now, tolerates) for a victim admitted at t0.
    let table = [
        // Default class (value 100): never tolerates, not even at the admission instant.
        (101, 0, 101, t0(), false),
        (101, 0, 101, at(-10), false),
        // Within the period: tolerated; at its end and after: not.
        (1000, 600, 500, at(0), true),
        (1000, 600, 500, at(599), true),
        (1000, 600, 500, at(600), false),
        (1000, 600, 500, at(7200), false),
        // Negative: forever.
        (1000, -1, 500, at(10_000_000), true),
        (1000, -30, 999, at(10_000_000), true),
        // A preemptor at or above the minimum is never tolerated.
        (1000, -1, 1000, at(0), false),
        (1000, 600, 2000, at(0), false),
        // A period too long to represent never ends (and does not panic).
        (1000, i64::MAX, 500, at(10_000_000), true),
    ];
    for (minimum, seconds, preemptor, now, expected) in table {
        assert_eq!(
            policy(minimum, seconds).tolerates(preemptor, t0(), now),
            expected,
            "minimum {minimum}, seconds {seconds}, preemptor {preemptor}, now {now}"
        );
    }
}

#[test]
fn budget_guarantee_holds_only_below_the_threshold() {
    let mut guarded = VictimPolicy::default_for(10);
    assert!(!guarded.guards_budgets_against(0));
    guarded.allow_disruption_by_priority_at_least = Some(1000);
    assert!(guarded.guards_budgets_against(999));
    assert!(!guarded.guards_budgets_against(1000));
    assert!(!guarded.guards_budgets_against(5000));
}
