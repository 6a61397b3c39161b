//! Kueue parity: upstream Kueue's own test tables, ported case by case with upstream's test
//! names (kubernetes-sigs/kueue at ff69552: `pkg/scheduler/preemption/preemption_test.go`
//! `TestPreemption`, `pkg/scheduler/scheduler_test.go` `TestSchedule`). Each case states
//! upstream's expectation as a short outcome (`render`); a case Baton decides otherwise on
//! purpose carries Baton's decision and why (the operator guide's table of deliberate
//! differences). `kueue_parity_summary` prints the count.
//!
//! Left out (not expressible: features Baton does not model): hierarchical cohorts
//! (`Cohort` objects with parents), fair sharing, topology-aware scheduling, DRA, partial
//! admission and elastic workload slices, admission-check controllers, LimitRanges, namespace
//! selectors and missing LocalQueues (the shell resolves queues), API write errors and
//! event/metric assertions. `EXCLUDED` lists them by name.

mod preemption;
mod schedule;
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
    let all: Vec<&Case> = preemption::CASES.iter().chain(schedule::CASES).collect();
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
