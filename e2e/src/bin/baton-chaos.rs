//! `baton-chaos`: the chaos soak with its invariant checker (issue 14, DESIGN.md §7).
//! One manager and three workers (`--workers N`) running the real `baton` binary on the testbed, a seeded
//! stream of workloads and seeded faults; prints the figures and the violations, and exits
//! non-zero on any violation. Build the `baton` binary in the same profile first:
//! `cargo build --release -p baton && cargo run -p baton-e2e --release --bin baton-chaos`.

use std::path::PathBuf;
use std::process::ExitCode;

use baton_e2e::chaos::plan::Scale;
use baton_e2e::chaos::soak::{Options, run};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(version, about = "Chaos soak of Baton with an invariant checker")]
struct Args {
    /// Seed of the workload stream and the faults.
    #[arg(long, default_value_t = 14)]
    seed: u64,
    /// Length of the run (three quarters with faults, a quarter to drain).
    #[arg(long, default_value_t = 10)]
    minutes: u64,
    /// Run the short variant `cargo test` runs instead (about two minutes).
    #[arg(long)]
    short: bool,
    /// Worker clusters.
    #[arg(long, default_value_t = baton_e2e::chaos::soak::WORKERS)]
    workers: usize,
    /// Keep the process logs and the event log here when a violation is found.
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Keep them even when the run passes.
    #[arg(long)]
    keep_always: bool,
    /// Log format of this process (the controllers log to files).
    #[arg(long, default_value = "plain")]
    log_format: String,
}

/// The `baton` binary next to this one (`BATON_BIN` overrides it).
fn locate_baton() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no directory for {}", exe.display()))?;
    let baton = dir.join("baton");
    baton_e2e::harness::process::ensure_fresh(&baton).map_err(|e| {
        anyhow::anyhow!("{e}\nbuild it in the same profile: cargo build --release -p baton")
    })?;
    Ok(baton)
}

fn main() -> ExitCode {
    let args = Args::parse();
    baton_e2e::harness::init_logging(&args.log_format);
    // The harness finds `baton` through BATON_BIN (tests find it next to their own binary):
    // run again with it set, rather than changing this process's environment.
    if std::env::var_os("BATON_BIN").is_none() {
        let again = locate_baton().and_then(|baton| {
            Ok(std::process::Command::new(std::env::current_exe()?)
                .args(std::env::args_os().skip(1))
                .env("BATON_BIN", baton)
                // The stream's clients log every refused connection of an offline worker.
                .env(
                    "RUST_LOG",
                    std::env::var("RUST_LOG").unwrap_or_else(|_| "info,kube_client=off".into()),
                )
                .status()?)
        });
        return match again {
            Ok(status) if status.success() => ExitCode::SUCCESS,
            Ok(status) => ExitCode::from(status.code().unwrap_or(2).clamp(1, 255) as u8),
            Err(e) => {
                eprintln!("baton-chaos: {e}");
                ExitCode::from(2)
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("baton-chaos: {e}");
            return ExitCode::from(2);
        }
    };
    let scale = if args.short {
        Scale::short()
    } else {
        Scale::soak(args.minutes)
    };
    let options = Options {
        seed: args.seed,
        workers: args.workers,
        scale,
        keep: args.keep,
        keep_always: args.keep_always,
    };
    match runtime.block_on(run(options)) {
        Ok(report) => {
            println!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("baton-chaos: {e:#}");
            ExitCode::from(2)
        }
    }
}
