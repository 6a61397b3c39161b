//! The `baton simulate` command: load or generate a trace, run the chosen modes, print the
//! comparison, write it (Markdown, CSV, SVG) to `--out`.

use std::path::Path;

use anyhow::{Context, bail};

use baton_simulate::generate::{generate, load_spec};
use baton_simulate::metrics::Outcome;
use baton_simulate::model::{DelayRange, Delays, parse_duration};
use baton_simulate::runner::{Selection, modes, run_modes};
use baton_simulate::trace::{self, Trace};
use baton_simulate::{plot, report};

use crate::cli::{SimulateArgs, SimulatePolicy};

fn selection(policy: SimulatePolicy) -> Selection {
    match policy {
        SimulatePolicy::Fcfs => Selection::Fcfs,
        SimulatePolicy::LeastDisruption => Selection::LeastDisruption,
        SimulatePolicy::SoonestRoom => Selection::SoonestRoom,
        SimulatePolicy::KueueWorkers => Selection::KueueWorkers,
        SimulatePolicy::FcfsRelease => Selection::FcfsRelease,
        SimulatePolicy::Uncoordinated => Selection::Uncoordinated,
        SimulatePolicy::All => Selection::All,
    }
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
    let outcomes = run_modes(
        &trace,
        &modes(selection(args.policy), &timeouts),
        delays,
        seed,
        true,
    );
    let table = report::markdown(&outcomes);
    println!("\n{table}");
    if let Some(dir) = &args.out {
        write_out(dir, &trace, generated, &outcomes, &table)?;
    }
    Ok(())
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
