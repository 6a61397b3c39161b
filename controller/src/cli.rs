//! The `baton` command line (DESIGN.md §7).

use std::path::PathBuf;

pub use crate::logging::LogFormat;
use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version,
    about = "Multi-cluster preemption orchestration for Kueue-style workloads"
)]
pub struct Cli {
    /// Log output format.
    #[arg(long, value_enum, default_value_t = LogFormat::Plain, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every CustomResourceDefinition as one YAML stream, or write one file per CRD.
    Crds {
        /// Write `<group>_<plural>.yaml` files into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Run the MultiKueue manager controller (in the manager cluster).
    Manager(ManagerArgs),
    /// Run the worker shim: the quota scheduler of one worker cluster.
    Worker(WorkerArgs),
    /// Simulate orchestration off, FCFS and LeastDisruption on a workload trace, with the
    /// real decision code on a virtual clock (no cluster needed).
    Simulate(SimulateArgs),
    /// Tell an object's story from the manager's own objects and events (no worker
    /// credentials needed).
    Describe {
        #[command(subcommand)]
        what: Describe,
    },
}

#[derive(Debug, Subcommand)]
pub enum Describe {
    /// A manager Workload: dispatched, signals per cluster, gate openings, baton passes and
    /// why, admission, replicas removed.
    #[command(visible_alias = "kwl")]
    Workload(DescribeWorkloadArgs),
}

#[derive(Debug, Args)]
pub struct DescribeWorkloadArgs {
    /// The Workload's name.
    pub name: String,
    /// Its namespace.
    #[arg(short = 'n', long, value_name = "NS", default_value = "default")]
    pub namespace: String,
    /// Kubeconfig of the manager cluster (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = DescribeOutput::Text)]
    pub output: DescribeOutput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DescribeOutput {
    /// For people.
    Text,
    /// For scripts.
    Json,
}

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Kubeconfig of the cluster to run against (default: in-cluster, then $KUBECONFIG, then
    /// ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Configuration file (YAML); every field is optional.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ManagerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Namespace holding the worker kubeconfig Secrets and the leader Lease.
    #[arg(long, value_name = "NS", default_value = "baton-system")]
    pub namespace: String,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Namespace holding the leader Lease.
    #[arg(long, value_name = "NS", default_value = "baton-system")]
    pub namespace: String,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// A trace: YAML, or CSV when the name ends in .csv (format: charts/baton/README.md).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "generate",
        required_unless_present = "generate"
    )]
    pub trace: Option<PathBuf>,
    /// Generate a synthetic mix instead: a spec file (YAML), or `default`.
    #[arg(long, value_name = "SPEC")]
    pub generate: Option<String>,
    /// Which modes to run.
    #[arg(long, value_enum, default_value_t = SimulatePolicy::All)]
    pub policy: SimulatePolicy,
    /// singleClusterPreemptionTimeout values to run the policies with, comma separated.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "30s,2m,5m"
    )]
    pub timeout: Vec<String>,
    /// Seed of the generator and of the delays (default: the spec's, or 1).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Write comparison.md, comparison.csv, comparison.svg (and trace.csv when generated).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How long a manager write takes to reach a worker, in ms: MIN,MAX (uniform) or one value.
    #[arg(long, value_name = "MIN,MAX", default_value = "50,200")]
    pub dispatch_delay_ms: String,
    /// How long a worker's status change takes to reach the manager, in ms: MIN,MAX or one value.
    #[arg(long, value_name = "MIN,MAX", default_value = "50,200")]
    pub watch_delay_ms: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimulatePolicy {
    /// KEP-8303 gates, first come first served.
    Fcfs,
    /// Gates opened for the cheapest victim set.
    LeastDisruption,
    /// Gates opened for the victims gone soonest (then the cheapest).
    SoonestRoom,
    /// KEP-8303 FCFS with upstream Kueue's workers: no cost, no release on failure.
    KueueWorkers,
    /// FCFS with release on failure asked for (`releaseOnFailure: true`).
    FcfsRelease,
    /// Orchestration off: every worker preempts.
    Uncoordinated,
    /// Uncoordinated, then each policy at each timeout.
    All,
}
