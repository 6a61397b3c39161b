use std::process::ExitCode;

use anyhow::Context;
use baton::cli::{Cli, Command, CommonArgs, Describe};
use baton::config::Configuration;
use clap::Parser;

/// The manager and the worker shim hold large caches of small records while parsing a
/// stream of watch events; mimalloc keeps their resident memory closer to what is live than
/// the system allocator does (measured in `cargo bench -p baton-e2e --bench manager_scale`).
/// Feature `system-allocator` keeps the system's, for heap profilers that hook it (heaptrack).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    baton::logging::init(cli.log_format);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baton: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Crds { out: None } => baton::crds_cmd::print(&mut std::io::stdout().lock()),
        Command::Crds { out: Some(dir) } => {
            for path in baton::crds_cmd::write_files(&dir)? {
                println!("wrote {}", path.display());
            }
            Ok(())
        }
        Command::Simulate(args) => baton::simulate_cmd::run(&args),
        Command::Manager(args) => {
            let config = load_config(&args.common)?;
            let runtime =
                tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
            runtime.block_on(async {
                let client = client(&args.common).await?;
                baton::manager::shell::run::run(client, config, args.namespace).await
            })
        }
        Command::Describe {
            what: Describe::Workload(args),
        } => {
            let runtime =
                tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
            runtime.block_on(async {
                let common = CommonArgs {
                    kubeconfig: args.kubeconfig.clone(),
                    config: None,
                };
                let client = client(&common).await?;
                baton::describe_cmd::workload(client, &args.namespace, &args.name, args.output)
                    .await
            })
        }
        Command::Worker(args) => {
            let config = load_config(&args.common)?;
            let runtime =
                tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
            runtime.block_on(async {
                let client = client(&args.common).await?;
                baton::worker::run::run(client, config, &args.namespace).await
            })
        }
    }
}

/// A client for `--kubeconfig`, or the usual places (in-cluster, $KUBECONFIG, ~/.kube/config).
async fn client(args: &CommonArgs) -> anyhow::Result<kube::Client> {
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .with_context(|| format!("cannot use kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no cluster configuration found")?,
    };
    kube::Client::try_from(config).context("cannot build a Kubernetes client")
}

fn load_config(args: &CommonArgs) -> anyhow::Result<Configuration> {
    match &args.config {
        Some(path) => {
            Configuration::load(path).with_context(|| format!("config file {}", path.display()))
        }
        None => Ok(Configuration::default()),
    }
}
