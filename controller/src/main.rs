use std::process::ExitCode;

use anyhow::Context;
use baton::cli::{Cli, Command, CommonArgs};
use baton::config::Configuration;
use clap::Parser;

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
        Command::Manager(args) => {
            let _config = load_config(&args.common)?;
            anyhow::bail!("`baton manager` is not implemented yet (configuration is valid)")
        }
        Command::Worker(args) => {
            let _config = load_config(&args.common)?;
            anyhow::bail!("`baton worker` is not implemented yet (configuration is valid)")
        }
    }
}

fn load_config(args: &CommonArgs) -> anyhow::Result<Configuration> {
    match &args.config {
        Some(path) => {
            Configuration::load(path).with_context(|| format!("config file {}", path.display()))
        }
        None => Ok(Configuration::default()),
    }
}
