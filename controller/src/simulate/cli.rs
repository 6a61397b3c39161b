//! The `baton simulate` command: load or generate a trace, run the chosen modes, print the
//! comparison, write it (Markdown, CSV, SVG) to `--out`.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::generate::{generate, load_spec};
use super::metrics::Outcome;
use super::model::{DelayRange, Delays, Mode, Policy, RunConfig, parse_duration};
use super::run::simulate;
use super::trace::{self, Trace};
use super::{plot, report};
use crate::cli::{SimulateArgs, SimulatePolicy};

/// The modes to run: uncoordinated once, each policy at each timeout.
pub fn modes(policy: SimulatePolicy, timeouts: &[Duration]) -> Vec<Mode> {
    let mut modes = Vec::new();
    if matches!(policy, SimulatePolicy::Uncoordinated | SimulatePolicy::All) {
        modes.push(Mode::Uncoordinated);
    }
    for (wanted, p) in [
        (SimulatePolicy::Fcfs, Policy::FirstComeFirstServed),
        (SimulatePolicy::LeastDisruption, Policy::LeastDisruption),
    ] {
        if policy == wanted || policy == SimulatePolicy::All {
            modes.extend(
                timeouts
                    .iter()
                    .map(|&timeout| Mode::Orchestrated { policy: p, timeout }),
            );
        }
    }
    modes
}

fn delay_range(text: &str, flag: &str) -> anyhow::Result<DelayRange> {
    let parse = |s: &str| {
        s.trim()
            .parse::<u64>()
            .with_context(|| format!("{flag}: {s:?} is not a number of milliseconds"))
    };
    let range = match text.split_once(',') {
        Some((min, max)) => DelayRange {
            min: parse(min)?,
            max: parse(max)?,
        },
        None => DelayRange::fixed(parse(text)?),
    };
    if range.max < range.min {
        bail!("{flag}: the maximum is below the minimum");
    }
    Ok(range)
}

/// Runs the command.
pub fn run(args: &SimulateArgs) -> anyhow::Result<()> {
    let (trace, seed, generated) = match (&args.trace, &args.generate) {
        (Some(path), _) => (trace::load(path)?, args.seed.unwrap_or(1), false),
        (None, Some(spec)) => {
            let spec = load_spec(spec)?;
            let seed = args.seed.unwrap_or(spec.seed);
            (generate(&spec, seed)?, seed, true)
        }
        (None, None) => bail!("give --trace FILE or --generate SPEC"),
    };
    let timeouts = args
        .timeout
        .iter()
        .map(|t| parse_duration(t).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()
        .context("--timeout")?;
    let delays = Delays {
        dispatch: delay_range(&args.dispatch_delay_ms, "--dispatch-delay-ms")?,
        watch: delay_range(&args.watch_delay_ms, "--watch-delay-ms")?,
    };
    println!(
        "{} workloads over {} workers ({} CPUs in all), seed {seed}",
        trace.workloads.len(),
        trace.workers.len(),
        trace.workers.iter().map(|w| w.cpu_milli).sum::<i64>() as f64 / 1000.0
    );
    let outcomes = run_modes(&trace, &modes(args.policy, &timeouts), delays, seed, true);
    let table = report::markdown(&outcomes);
    println!("\n{table}");
    if let Some(dir) = &args.out {
        write_out(dir, &trace, generated, &outcomes, &table)?;
    }
    Ok(())
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

fn write_out(
    dir: &Path,
    trace: &Trace,
    generated: bool,
    outcomes: &[Outcome],
    table: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let write = |name: &str, text: &str| -> anyhow::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        println!("wrote {}", path.display());
        Ok(())
    };
    write("comparison.md", table)?;
    write("comparison.csv", &report::csv(outcomes))?;
    write("workloads.csv", &report::workloads_csv(outcomes))?;
    let svg = plot::comparison_svg(outcomes).map_err(anyhow::Error::msg)?;
    write("comparison.svg", &svg)?;
    if generated {
        write("trace.csv", &trace::to_csv(trace))?;
    }
    Ok(())
}
