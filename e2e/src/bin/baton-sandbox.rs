//! `baton-sandbox`: the local multi-cluster sandbox on the testbed (DESIGN.md §7).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use baton_e2e::demo::controllers::Controllers;
use baton_e2e::demo::kinds::DemoKind;
use baton_e2e::demo::scenario::{self, Outcome};
use baton_e2e::demo::shutdown::Shutdown;
use baton_e2e::demo::style::Console;
use baton_e2e::demo::{binary, guide, ready, setup};
use baton_e2e::harness::sandbox::Sandbox;
use clap::Parser;

/// How long the controllers may take to connect and sync.
const CONTROLLERS_DEADLINE: Duration = Duration::from_secs(30);

#[derive(Parser, Debug)]
#[command(
    version,
    about = "Start a Baton manager cluster and N worker clusters on the in-memory testbed"
)]
struct Args {
    /// Number of worker clusters.
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Directory for kubeconfigs, controller configurations and logs, and the `ready` marker.
    #[arg(long)]
    dir: PathBuf,
    /// Manager port (workers use the following ports); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Also run `baton manager` and one `baton worker` per worker cluster, with the Kueue
    /// objects that route Workloads (LocalQueue `user-queue` in namespaces default and demo).
    #[arg(long)]
    controllers: bool,
    /// Play the KEP-8303 scenario and print its timeline; implies --controllers.
    #[arg(long)]
    demo: bool,
    /// Run the manager with orchestratedPreemption: false (plain MultiKueue, no gates).
    #[arg(long)]
    no_orchestration: bool,
    /// The kind the demo plays with: batch/v1 Jobs, JobSets, Kubeflow TrainJobs or RayJobs
    /// (the last three imply --integrations).
    #[arg(long, value_enum, default_value_t = DemoKind::Job)]
    kind: DemoKind,
    /// Install the JobSet, Kubeflow Trainer and KubeRay CRDs (from
    /// `$BATON_SHARED_DIR/integrations/crds`, by default `../shared` of the workspace) on
    /// every cluster; the testbed runs stand-ins for their controllers.
    #[arg(long)]
    integrations: bool,
    /// Log format: plain or json.
    #[arg(long, default_value = "plain")]
    log_format: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    baton_e2e::harness::init_logging(&args.log_format);
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baton-sandbox: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let mut shutdown = Shutdown::register()?;
    let with_controllers = args.controllers || args.demo;
    let orchestrated = !args.no_orchestration;
    anyhow::ensure!(
        !args.demo || args.workers > 0,
        "--demo needs at least one worker"
    );
    if args.no_orchestration && !with_controllers {
        eprintln!("baton-sandbox: --no-orchestration only matters with --controllers or --demo");
    }
    // Before any cluster starts: on a fresh clone this builds the controllers.
    let baton = if with_controllers {
        Some(binary::ensure().await?)
    } else {
        None
    };
    let console = Console::detect();
    let sandbox = Sandbox::start_clusters(args.workers, &args.dir, args.port).await?;
    if args.integrations || args.kind.needs_integrations() {
        let crds = baton_e2e::harness::integrations::crds_dir();
        baton_e2e::demo::integrations::install(&sandbox, &crds)?;
        console.line(&format!(
            "Installed the JobSet, Kubeflow Trainer and KubeRay CRDs from {} on every cluster.",
            crds.display()
        ));
    }
    print!("{}", sandbox.describe());

    let mut controllers = None;
    if let Some(baton) = baton {
        setup::install(&sandbox)?;
        setup::write_sample(&args.dir)?;
        console.line(&format!(
            "Starting baton manager and {} baton worker{} (logs in {}).",
            args.workers,
            if args.workers == 1 { "" } else { "s" },
            args.dir.display()
        ));
        let started = controllers.insert(Controllers::start(&baton, &sandbox, orchestrated)?);
        let brought_up = tokio::select! {
            result = bring_up(&sandbox, started, args.demo.then_some(args.kind), orchestrated, &console) => Some(result),
            () = shutdown.requested() => None,
        };
        match brought_up {
            Some(Ok(outcome)) => {
                let lines = match outcome {
                    Some(o) => guide::look_around(
                        &args.dir,
                        args.workers,
                        &o.placed,
                        &scenario::preemptor(),
                        &o.workload,
                        guide::DemoObject {
                            kind: &args.kind.api_resource().kind,
                            resource: args.kind.resource(),
                        },
                    ),
                    None => guide::try_it(&args.dir, args.workers),
                };
                sandbox.mark_ready()?;
                for line in lines {
                    console.line(&line);
                }
            }
            Some(Err(e)) => {
                stop(controllers.as_mut(), &sandbox).await;
                return Err(e);
            }
            None => {
                stop(controllers.as_mut(), &sandbox).await;
                console.line("Sandbox stopped.");
                return Ok(());
            }
        }
    } else {
        sandbox.mark_ready()?;
        console.line("Press Ctrl-C to stop.");
    }
    tracing::info!(workers = args.workers, dir = %args.dir.display(), "sandbox ready");

    loop {
        tokio::select! {
            () = shutdown.requested() => break,
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                // A controller that dies is worth saying; the clusters stay up to look at.
                if let Some(exited) = controllers.as_mut().and_then(Controllers::exited) {
                    eprintln!("baton-sandbox: {exited}");
                }
            }
        }
    }
    stop(controllers.as_mut(), &sandbox).await;
    console.line("Sandbox stopped.");
    Ok(())
}

/// Waits for the controllers, then plays the demo with `demo`'s kind when asked.
async fn bring_up(
    sandbox: &Sandbox,
    controllers: &mut Controllers,
    demo: Option<DemoKind>,
    orchestrated: bool,
    console: &Console,
) -> anyhow::Result<Option<Outcome>> {
    let start = Instant::now();
    ready::wait(sandbox, controllers, CONTROLLERS_DEADLINE).await?;
    console.line(&format!(
        "Controllers ready ({:.1}s): every MultiKueueCluster is Active.",
        start.elapsed().as_secs_f64()
    ));
    let Some(kind) = demo else {
        return Ok(None);
    };
    console.line("");
    let outcome = scenario::play_kind(sandbox, orchestrated, kind, console).await?;
    console.line("");
    Ok(Some(outcome))
}

/// Controllers first (they would only log errors about vanished clusters), then clusters.
async fn stop(controllers: Option<&mut Controllers>, sandbox: &Sandbox) {
    if let Some(controllers) = controllers {
        controllers.stop().await;
    }
    sandbox.stop().await;
}
