//! `baton-testbed`: serve one or more in-memory Kubernetes API clusters on 127.0.0.1 and
//! write a kubeconfig for each; runs until interrupted.

use std::path::PathBuf;

use anyhow::Context;
use baton_testbed::server::{ClusterOptions, TestCluster};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A Kubernetes-API-compatible in-memory API server for tests and demos"
)]
struct Args {
    /// Names of the clusters to start (comma-separated); each gets NAME.kubeconfig.
    #[arg(long, value_delimiter = ',', default_value = "testbed")]
    clusters: Vec<String>,
    /// First port to listen on (the next clusters use the following ports); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Directory for the kubeconfig files.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Install Baton's CRDs in every cluster.
    #[arg(long)]
    baton_crds: bool,
    /// Install the JobSet, Kubeflow Trainer and KubeRay CRDs (from
    /// `$BATON_SHARED_DIR/integrations/crds`, by default `../shared` of the workspace) in
    /// every cluster; the testbed runs stand-ins for their controllers.
    #[arg(long)]
    integrations: bool,
    /// Log format: plain or json.
    #[arg(long, default_value = "plain")]
    log_format: String,
    /// Seconds a deleted pod takes to go at most (its grace period, capped); 0 removes it at
    /// once. Pods come from the testbed's model of the job controller.
    #[arg(long, default_value_t = 2.0)]
    termination_grace_cap: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    baton_e2e::harness::init_logging(&args.log_format);
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let termination_grace_cap = std::time::Duration::try_from_secs_f64(args.termination_grace_cap)
        .context("--termination-grace-cap must be a number of seconds, 0 or more")?;
    let integration_crds = if args.integrations {
        baton_e2e::harness::integrations::load_crds(&baton_e2e::harness::integrations::crds_dir())?
    } else {
        Vec::new()
    };
    let mut clusters = Vec::new();
    for (i, name) in args.clusters.iter().enumerate() {
        let port = if args.port == 0 {
            0
        } else {
            args.port + u16::try_from(i)?
        };
        let cluster = TestCluster::start(ClusterOptions {
            name: name.clone(),
            port,
            termination_grace_cap,
            ..ClusterOptions::default()
        })
        .await?;
        if args.baton_crds {
            cluster.install_crds(&baton_crds::generate::all_crds()?)?;
        }
        cluster.install_crds(&integration_crds)?;
        let path = args.dir.join(format!("{name}.kubeconfig"));
        cluster.write_kubeconfig(&path)?;
        println!(
            "{name}: {} (kubectl --kubeconfig {} get ns)",
            cluster.url(),
            path.display()
        );
        clusters.push(cluster);
    }
    baton_e2e::harness::wait_for_shutdown_signal().await?;
    for c in &clusters {
        c.shutdown().await;
    }
    Ok(())
}
