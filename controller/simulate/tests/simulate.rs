//! `baton simulate` against known outcomes: the KEP-8303 scenario as the sandbox measures it
//! (e2e/tests/testbed_sandbox.rs), the waste causes, and the LeastDisruption target on a
//! cut of the documented default mix.

use std::collections::BTreeSet;
use std::time::Duration;

use baton_simulate::generate::{Spec, generate};
use baton_simulate::metrics::{Outcome, WasteCause};
use baton_simulate::model::{Delays, Mode, Policy, RunConfig, Workers};
use baton_simulate::run::simulate;
use baton_simulate::runner::{Selection, modes, run_modes};
use baton_simulate::trace::{Trace, parse_yaml};

/// The sandbox's demo shape: three workers of 4 CPUs, each full with two low-priority Jobs
/// of 2 pods × 1 CPU submitted on the worker, whose pods take 3 s to stop; then one
/// high-priority Job of 2 pods × 1 CPU through the manager.
fn kep_scenario() -> Trace {
    let mut yaml = String::from("workers:\n");
    for w in 1..=3 {
        yaml.push_str(&format!("  - {{name: worker-{w}, cpus: 4}}\n"));
    }
    yaml.push_str("workloads:\n");
    for w in 1..=3 {
        for i in 1..=2 {
            yaml.push_str(&format!(
                "  - {{name: filler-{w}-{i}, arrival: 0, cpus: 2, pods: 2, priority: 100, run: 3600, stop: 3, cluster: worker-{w}}}\n"
            ));
        }
    }
    yaml.push_str(
        "  - {name: train-llm, arrival: 10, cpus: 2, pods: 2, priority: 1000, run: 60, stop: 3}\n",
    );
    parse_yaml(&yaml).unwrap()
}

fn run(trace: &Trace, mode: Mode) -> Outcome {
    simulate(
        trace,
        RunConfig {
            mode,
            delays: Delays::default(),
            seed: 7,
        },
    )
}

fn fcfs(seconds: u64) -> Mode {
    Mode::Orchestrated {
        policy: Policy::FirstComeFirstServed,
        timeout: Duration::from_secs(seconds),
        workers: Workers::Baton,
    }
}

/// The workers that evicted something, and the worker the high-priority workload ran on.
fn preempting(trace: &Trace, o: &Outcome) -> (BTreeSet<usize>, usize) {
    let job = trace
        .workloads
        .iter()
        .position(|w| w.name == "train-llm")
        .unwrap();
    let placed = o.stats[job].ran_on.trailing_zeros() as usize;
    assert_eq!(
        o.stats[job].ran_on.count_ones(),
        1,
        "ran on one worker: {o:?}"
    );
    (o.evictions.iter().map(|e| e.worker).collect(), placed)
}

#[test]
fn the_kep_scenario_preempts_on_one_cluster_with_orchestration_as_the_sandbox_measures() {
    let trace = kep_scenario();
    for mode in [
        fcfs(30),
        Mode::Orchestrated {
            policy: Policy::LeastDisruption,
            timeout: Duration::from_secs(30),
            workers: Workers::Baton,
        },
    ] {
        let on = run(&trace, mode);
        let (clusters, placed) = preempting(&trace, &on);
        assert_eq!(
            clusters,
            BTreeSet::from([placed]),
            "{mode:?}: only where it runs: {on:?}"
        );
        assert_eq!(on.victims, 1, "{mode:?}: one 2-CPU filler makes room");
        assert_eq!(on.wasted, 0, "{mode:?}");
        assert_eq!(on.clusters_per_high_max, 1);
        assert_eq!(on.unfinished, 0);
    }
}

#[test]
fn the_kep_scenario_preempts_on_every_cluster_without_orchestration_as_the_sandbox_measures() {
    let trace = kep_scenario();
    let off = run(&trace, Mode::Uncoordinated);
    let (clusters, placed) = preempting(&trace, &off);
    assert_eq!(
        clusters,
        BTreeSet::from([0, 1, 2]),
        "every worker preempts: {off:?}"
    );
    for worker in 0..3 {
        let here = off.evictions.iter().filter(|e| e.worker == worker).count();
        assert_eq!(here, 1, "one victim on worker {worker}: {off:?}");
    }
    assert_eq!(
        off.wasted, 2,
        "the victims of the two other workers (placed on {placed})"
    );
    // Every worker's victims stop in 3 s, so the other two replicas were admitted too and
    // lost the race to the manager (deleted); with unequal stop times they are deleted
    // while their victims still stop (`Parallel`).
    assert_eq!(
        off.waste.count(WasteCause::Parallel) + off.waste.count(WasteCause::LostRace),
        2,
        "preempted at once everywhere: {:?}",
        off.waste
    );
    assert_eq!(off.clusters_per_high_max, 3);
    assert_eq!(off.unfinished, 0, "the wasted victims run again");
}

#[test]
fn a_timeout_shorter_than_the_victims_stop_time_passes_the_baton_on_and_wastes_victims() {
    // Victims that take 45 s to stop: a 5 s timeout opens a second worker's gate (then a
    // third) before the first has made room; 2 minutes does not.
    let mut trace = kep_scenario();
    for w in &mut trace.workloads {
        w.stop = 45_000;
    }
    let short = run(&trace, fcfs(5));
    assert!(short.wasted >= 1, "{short:?}");
    assert!(short.clusters_per_high_max >= 2, "{short:?}");
    // Every wasted victim is the timeout's doing: on a worker whose gate was opened after
    // the first one's timed out (the first then admitted it), or the other way round.
    let by_timeout = short.waste.count(WasteCause::EarlierGateWon)
        + short.waste.count(WasteCause::PassedOnVictimsGone)
        + short.waste.count(WasteCause::PassedOnVictimsStopping);
    assert_eq!(by_timeout, short.wasted, "{:?}", short.waste);
    let long = run(&trace, fcfs(120));
    assert_eq!(
        (long.wasted, long.clusters_per_high_max),
        (0, 1),
        "{long:?}"
    );
}

#[test]
fn runs_are_deterministic_for_a_seed() {
    let spec = Spec {
        workloads: 300,
        ..Spec::default()
    };
    let trace = generate(&spec, 3).unwrap();
    let all = modes(Selection::All, &[Duration::from_secs(30)]);
    let a = run_modes(&trace, &all, Delays::default(), 5, false);
    let b = run_modes(&trace, &all, Delays::default(), 5, false);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.evictions, y.evictions);
        assert_eq!(x.high_wait, y.high_wait);
        assert_eq!(x.unfinished, 0, "{}", x.mode.label());
    }
}

/// A 32-CPU worker: a priority-200 workload of 28 CPUs evicts a 14-CPU one, and in the same
/// cycle an 18-CPU priority-100 workload is admitted beside the victim; when the victim is
/// gone the preemptor evicts that one, and so on. Regression test: `admission::core::cycle` now
/// counts a preemption as done for the rest of the cycle it is decided in, as Kueue does.
#[test]
fn a_preemptor_is_not_overtaken_by_lower_priority_work_beside_its_victims() {
    let trace = parse_yaml(
        "workers: [{name: w, cpus: 32}]\nworkloads:\n\
         - {name: a, arrival: 0, cpus: 14, priority: 100, run: 600, stop: 5, cluster: w}\n\
         - {name: b, arrival: 1, cpus: 28, priority: 200, run: 600, stop: 5, cluster: w}\n\
         - {name: c, arrival: 1, cpus: 18, priority: 100, run: 600, stop: 5, cluster: w}\n",
    )
    .unwrap();
    let o = run(&trace, Mode::Uncoordinated);
    assert_eq!(o.unfinished, 0, "{} evictions", o.victims);
    assert_eq!(o.victims, 1);
}

/// The policy target on the default mix, cut to 2,000 workloads so that a debug
/// build runs it in seconds (`baton simulate --generate default` runs all 10,000; the
/// figures are in charts/baton/README.md).
#[test]
fn least_disruption_evicts_fewer_victims_than_fcfs_without_a_worse_high_priority_p99() {
    let spec = Spec {
        workloads: 2_000,
        ..Spec::default()
    };
    let trace = generate(&spec, spec.seed).unwrap();
    let five_minutes = Duration::from_secs(300);
    let [fcfs, ld] = [Policy::FirstComeFirstServed, Policy::LeastDisruption].map(|policy| {
        run(
            &trace,
            Mode::Orchestrated {
                policy,
                timeout: five_minutes,
                workers: Workers::Baton,
            },
        )
    });
    assert!(
        ld.victims < fcfs.victims,
        "{} vs {}",
        ld.victims,
        fcfs.victims
    );
    assert!(
        ld.high_wait.p99 <= fcfs.high_wait.p99 * 1.1,
        "{} vs {}",
        ld.high_wait.p99,
        fcfs.high_wait.p99
    );
    for o in [&fcfs, &ld] {
        assert_eq!(o.unfinished, 0, "{}", o.mode.label());
        assert_eq!(o.waste.count(WasteCause::Other), 0, "{:?}", o.waste);
    }
}

#[test]
fn soonest_room_cuts_the_high_priority_tail_and_the_waste_of_fcfs() {
    let spec = Spec {
        workloads: 2_000,
        ..Spec::default()
    };
    let trace = generate(&spec, spec.seed).unwrap();
    let five_minutes = Duration::from_secs(300);
    let fcfs = run(
        &trace,
        Mode::Orchestrated {
            policy: Policy::FirstComeFirstServed,
            timeout: five_minutes,
            workers: Workers::Kueue,
        },
    );
    let soonest = run(
        &trace,
        Mode::orchestrated(Policy::SoonestRoom, five_minutes),
    );
    assert!(
        soonest.high_wait.p99 < fcfs.high_wait.p99,
        "{} vs {}",
        soonest.high_wait.p99,
        fcfs.high_wait.p99
    );
    assert!(
        soonest.wasted < fcfs.wasted,
        "{} vs {}",
        soonest.wasted,
        fcfs.wasted
    );
    for o in [&fcfs, &soonest] {
        assert_eq!(o.unfinished, 0, "{}", o.mode.label());
        assert!(o.clusters_per_high_mean <= 1.05, "{}", o.mode.label());
    }
}
