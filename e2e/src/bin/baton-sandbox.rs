//! `baton-sandbox`: the local multi-cluster sandbox on the testbed (DESIGN.md §7).

use std::path::PathBuf;

use baton_e2e::harness::sandbox::Sandbox;
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Start a Baton manager cluster and N worker clusters on the in-memory testbed"
)]
struct Args {
    /// Number of worker clusters.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Directory for kubeconfigs and the `ready` marker.
    #[arg(long)]
    dir: PathBuf,
    /// Manager port (workers use the following ports); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also run `baton manager` and one `baton worker` per worker cluster (not available yet).
    #[arg(long)]
    controllers: bool,
    /// Play the KEP-8303 scenario; implies --controllers (not available yet).
    #[arg(long)]
    demo: bool,
    /// Run without orchestrated preemption (not available yet).
    #[arg(long)]
    no_orchestration: bool,
    /// Log format: plain or json.
    #[arg(long, default_value = "plain")]
    log_format: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    baton_e2e::harness::init_logging(&args.log_format);
    for (flag, set) in [
        ("--controllers", args.controllers),
        ("--demo", args.demo),
        ("--no-orchestration", args.no_orchestration),
    ] {
        if set {
            eprintln!("baton-sandbox: {flag} is not available yet; starting the clusters only");
        }
    }
    let sandbox = Sandbox::start(args.workers, &args.dir, args.port).await?;
    print!("{}", sandbox.describe());
    println!("Press Ctrl-C to stop.");
    tracing::info!(workers = args.workers, dir = %args.dir.display(), "sandbox ready");
    baton_e2e::harness::wait_for_shutdown_signal().await?;
    sandbox.stop().await;
    println!("Sandbox stopped.");
    Ok(())
}
