//! Running several modes over one trace, in parallel.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::metrics::Outcome;
use super::model::{Delays, Mode, Policy, RunConfig, Workers};
use super::run::simulate;
use super::trace::Trace;

/// Which modes a comparison runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// KEP-8303 gates, first come first served.
    Fcfs,
    /// Gates opened for the cheapest victim set.
    LeastDisruption,
    /// Gates opened for the victims gone soonest.
    SoonestRoom,
    /// KEP-8303 FCFS with upstream Kueue's workers (no cost, no release on failure).
    KueueWorkers,
    /// FCFS with release on failure asked for (`releaseOnFailure: true`).
    FcfsRelease,
    /// Orchestration off: every worker preempts.
    Uncoordinated,
    /// Uncoordinated, then each policy at each timeout (FCFS with Kueue's workers, then
    /// each policy with Baton's).
    All,
}

/// The modes to run: uncoordinated once, each policy at each timeout.
pub fn modes(policy: Selection, timeouts: &[Duration]) -> Vec<Mode> {
    let mut modes = Vec::new();
    if matches!(policy, Selection::Uncoordinated | Selection::All) {
        modes.push(Mode::Uncoordinated);
    }
    for (wanted, p, workers) in [
        (
            Selection::KueueWorkers,
            Policy::FirstComeFirstServed,
            Workers::Kueue,
        ),
        (
            Selection::Fcfs,
            Policy::FirstComeFirstServed,
            Workers::Baton,
        ),
        (
            Selection::FcfsRelease,
            Policy::FirstComeFirstServed,
            Workers::BatonReleasing,
        ),
        (
            Selection::LeastDisruption,
            Policy::LeastDisruption,
            Workers::Baton,
        ),
        (Selection::SoonestRoom, Policy::SoonestRoom, Workers::Baton),
    ] {
        if policy == wanted || policy == Selection::All {
            modes.extend(timeouts.iter().map(|&timeout| Mode::Orchestrated {
                policy: p,
                timeout,
                workers,
            }));
        }
    }
    modes
}

/// Runs every mode on the same trace with the same delays' seed, on as many threads as
/// the machine has cores (runs are independent; results come back in `modes` order);
/// `verbose` prints each run's wall-clock time and the total.
pub fn run_modes(
    trace: &Trace,
    modes: &[Mode],
    delays: Delays,
    seed: u64,
    verbose: bool,
) -> Vec<Outcome> {
    let started = Instant::now();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, modes.len().max(1));
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Outcome, Duration)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&mode) = modes.get(i) else { break };
                        let run_started = Instant::now();
                        let outcome = simulate(trace, RunConfig { mode, delays, seed });
                        done.push((i, outcome, run_started.elapsed()));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    results.sort_by_key(|(i, _, _)| *i);
    if verbose {
        for (_, outcome, took) in &results {
            println!(
                "{:<24} simulated in {:>6.2} s ({} events, {:.0} h of virtual time)",
                outcome.mode.label(),
                took.as_secs_f64(),
                outcome.events,
                outcome.makespan as f64 / 3.6e6
            );
        }
        println!(
            "{} runs in {:.2} s of wall-clock time on {threads} threads",
            results.len(),
            started.elapsed().as_secs_f64()
        );
    }
    results.into_iter().map(|(_, o, _)| o).collect()
}
