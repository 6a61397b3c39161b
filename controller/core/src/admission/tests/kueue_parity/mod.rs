//! Kueue parity: upstream Kueue's own test tables, ported case by case with upstream's test
//! names (kubernetes-sigs/kueue at ff69552: `pkg/scheduler/preemption/preemption_test.go`
//! `TestPreemption`, `pkg/scheduler/scheduler_test.go` `TestSchedule`). Each case states
//! upstream's expectation as a short outcome (`render`); a case Baton decides otherwise on
//! purpose carries Baton's decision and why (the operator guide's table of deliberate
//! differences). `kueue_parity_summary` prints the count.
//!
//! `LEFT_OUT` lists the cases not ported, by name, with the reason: features Baton does not
//! model (hierarchical cohorts, partial admission, elastic workload slices, admission checks,
//! LimitRanges, namespace selectors and LocalQueue resolution, API write errors); any
//! expressible case not ported yet would be listed as such (none is).

mod preemption;
mod schedule;
mod schedule_cohorts;
mod schedule_fit;
mod world;

/// One ported case.
pub struct Case {
    /// Upstream's test name.
    pub name: &'static str,
    /// Runs Baton's core on the case and renders the outcome.
    pub run: fn() -> String,
    /// Upstream's expectation, rendered the same way.
    pub want: &'static str,
    /// A deliberate difference: Baton's outcome and why.
    pub deliberate: Option<(&'static str, &'static str)>,
}

const NOT_MODELLED: &str = "not expressible: a feature Baton does not model";
const NOT_YET: &str = "expressible, not ported yet";

/// Upstream cases not ported, with the reason.
pub const LEFT_OUT: &[(&str, &str)] = &[
    ("long range preemption", "hierarchical cohorts"),
    (
        "workload fits in single clusterQueue, with check state ready",
        "admission checks",
    ),
    (
        "workload fits in single clusterQueue, with check state pending",
        "admission checks",
    ),
    (
        "pending admission check with nofit and fit flavors",
        "admission checks",
    ),
    (
        "skip workload with missing or deleted ClusterQueue (NoFit)",
        "LocalQueue resolution (shell)",
    ),
    (
        "workload should not fit in nonexistent clusterQueue",
        "LocalQueue resolution (shell)",
    ),
    (
        "failed to match clusterQueue selector",
        "namespace selectors (shell)",
    ),
    ("error during admission", "API write errors (shell)"),
    (
        "hierarchical cohort respects lending limit when borrowing",
        "hierarchical cohorts",
    ),
    (
        "hierarchical cohort allows borrowing up to lending limit",
        "hierarchical cohorts",
    ),
    (
        "in a hierarchical cohort, workload borrowing less is scheduled first",
        "hierarchical cohorts",
    ),
    (
        "PreemptionOverBorrowing preference: select fitting second flavor over first flavor with no preemption candidates",
        "hierarchical cohorts",
    ),
    (
        "partial admission single variable pod set",
        "partial admission",
    ),
    (
        "partial admission single variable pod set, preempt first",
        "partial admission",
    ),
    (
        "partial admission single variable pod set, preempt with partial admission",
        "partial admission",
    ),
    (
        "partial admission multiple variable pod sets",
        "partial admission",
    ),
    (
        "partial admission disabled, multiple variable pod sets",
        "partial admission",
    ),
    (
        "container does not satisfy limitRange constraints",
        "LimitRanges",
    ),
    (
        "container resource requests exceed limits",
        "pod spec validation",
    ),
    (
        "workload-slice fits in single clusterQueue",
        "elastic workload slices",
    ),
];

/// Checks one case: equal to upstream, or exactly the documented difference.
pub fn check(case: &Case) -> Result<bool, String> {
    let got = (case.run)();
    match case.deliberate {
        None if got == case.want => Ok(true),
        None => Err(format!(
            "{}: upstream wants `{}`, Baton decided `{got}`",
            case.name, case.want
        )),
        Some((baton, _)) if got == baton => Ok(false),
        Some((baton, _)) => Err(format!(
            "{}: the documented difference says Baton decides `{baton}` (upstream `{}`), it decided `{got}`",
            case.name, case.want
        )),
    }
}

/// Declares cases: a `#[test]` per case (named after upstream's case) and the table.
macro_rules! cases {
    ($( $id:ident: $name:literal => $want:literal $(, differs $baton:literal because $why:literal)?; $body:block )*) => {
        $( fn $id() -> String $body )*
        pub const CASES: &[super::Case] = &[
            $( super::Case {
                name: $name,
                run: $id,
                want: $want,
                deliberate: super::cases!(@deliberate $($baton, $why)?),
            }, )*
        ];
        mod each {
            $( #[test]
            fn $id() {
                let case = super::CASES.iter().find(|c| c.name == $name);
                match case.map(super::super::check) {
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("{e}"),
                    None => panic!("case not in the table"),
                }
            } )*
        }
    };
    (@deliberate) => { None };
    (@deliberate $baton:literal, $why:literal) => { Some(($baton, $why)) };
}
pub(crate) use cases;

#[test]
fn kueue_parity_summary() {
    let all: Vec<&Case> = preemption::CASES
        .iter()
        .chain(schedule::CASES)
        .chain(schedule_cohorts::CASES)
        .chain(schedule_fit::CASES)
        .collect();
    let mut agree = 0;
    let mut deliberate = 0;
    let mut failures = Vec::new();
    for case in &all {
        match check(case) {
            Ok(true) => agree += 1,
            Ok(false) => deliberate += 1,
            Err(e) => failures.push(e),
        }
    }
    eprintln!(
        "kueue parity: {agree} of {} upstream cases, {deliberate} deliberate differences",
        all.len()
    );
    let not_modelled = LEFT_OUT.iter().filter(|(_, why)| *why != NOT_YET).count();
    eprintln!(
        "  left out: {not_modelled} ({NOT_MODELLED}), {} ({NOT_YET})",
        LEFT_OUT.len() - not_modelled
    );
    for case in all.iter().filter(|c| c.deliberate.is_some()) {
        if let Some((baton, why)) = case.deliberate {
            eprintln!(
                "  differs: {}: upstream `{}`, Baton `{baton}`: {why}",
                case.name, case.want
            );
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn no_case_is_both_ported_and_left_out() {
    let ported = preemption::CASES
        .iter()
        .chain(schedule::CASES)
        .chain(schedule_cohorts::CASES)
        .chain(schedule_fit::CASES);
    for case in ported {
        assert!(
            LEFT_OUT.iter().all(|(name, _)| *name != case.name),
            "{}",
            case.name
        );
    }
}
