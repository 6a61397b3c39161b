//! The `baton` command line (DESIGN.md §7).

use std::path::PathBuf;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Plain,
    Json,
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
