//! `baton manager` and one `baton worker` per worker cluster, run as children of the sandbox,
//! with their configuration files and logs in the sandbox directory.
//!
//! Children are killed when the sandbox stops them, and also when this value is dropped
//! ([`BatonProcess`] kills on drop: a panic or an early error return leaves no orphan behind).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::setup::worker_name;
use crate::harness::process::{BatonProcess, Launch};
use crate::harness::sandbox::{CONTROLLER_NAMESPACE, Sandbox};

/// How long one worker holds the baton before the manager passes it on.
pub const PREEMPTION_TIMEOUT: &str = "30s";

/// Settings both controllers share: ephemeral ports (several sandboxes may run side by
/// side) and no leader election (one replica each).
const COMMON: &str = "metricsBindAddress: 127.0.0.1:0\nhealthProbeBindAddress: 127.0.0.1:0\nleaderElection: {enabled: false}\n";

/// The manager's configuration file.
pub fn manager_config(orchestrated: bool) -> String {
    format!(
        "# Written by baton-sandbox.\n{COMMON}singleClusterPreemptionTimeout: {PREEMPTION_TIMEOUT}\norchestratedPreemption: {orchestrated}\ngcInterval: 10s\n"
    )
}

/// The workers' configuration file.
pub fn worker_config() -> String {
    format!("# Written by baton-sandbox.\n{COMMON}")
}

/// One running controller and whether its exit was reported.
struct Controller {
    process: BatonProcess,
    reported: bool,
}

/// The sandbox's controllers.
pub struct Controllers {
    list: Vec<Controller>,
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

fn spawn(binary: &Path, dir: &Path, name: &str, args: &[&str]) -> anyhow::Result<Controller> {
    let process = BatonProcess::spawn(
        Launch {
            binary,
            name,
            log: dir.join(format!("{name}.log")),
            rust_log: std::env::var("RUST_LOG").unwrap_or_else(|_| "info,kube=warn".into()),
            // Their own process group: a Ctrl-C in the terminal reaches the sandbox only,
            // which then stops the controllers before the clusters they talk to.
            own_process_group: true,
        },
        args,
    )?;
    Ok(Controller {
        process,
        reported: false,
    })
}

impl Controllers {
    /// Writes the configuration files and starts the manager and one worker shim per worker.
    pub fn start(binary: &Path, sandbox: &Sandbox, orchestrated: bool) -> anyhow::Result<Self> {
        let dir = &sandbox.dir;
        let (manager_yaml, worker_yaml) = (dir.join("manager.yaml"), dir.join("worker.yaml"));
        write(&manager_yaml, &manager_config(orchestrated))?;
        write(&worker_yaml, &worker_config())?;
        let path = |p: &Path| p.display().to_string();
        let mut list = Vec::new();
        let kubeconfig = path(&dir.join("manager.kubeconfig"));
        list.push(spawn(
            binary,
            dir,
            "manager",
            &[
                "manager",
                "--kubeconfig",
                &kubeconfig,
                "--config",
                &path(&manager_yaml),
                "--namespace",
                CONTROLLER_NAMESPACE,
            ],
        )?);
        for i in 1..=sandbox.workers.len() {
            let name = worker_name(i);
            let kubeconfig = path(&dir.join(format!("{name}.kubeconfig")));
            list.push(spawn(
                binary,
                dir,
                &name,
                &[
                    "worker",
                    "--kubeconfig",
                    &kubeconfig,
                    "--config",
                    &path(&worker_yaml),
                ],
            )?);
        }
        Ok(Controllers { list })
    }

    /// Process ids of the running children.
    pub fn pids(&self) -> Vec<u32> {
        self.list.iter().map(|c| c.process.id()).collect()
    }

    /// Every controller's log file.
    pub fn logs(&self) -> Vec<PathBuf> {
        self.list.iter().map(|c| c.process.log.clone()).collect()
    }

    /// A controller that stopped since the last call, described with the end of its log.
    pub fn exited(&mut self) -> Option<String> {
        for c in &mut self.list {
            if c.reported {
                continue;
            }
            if let Some(status) = c.process.exited() {
                c.reported = true;
                let log = c.process.log_text();
                return Some(format!(
                    "baton {} exited ({status}); the end of {}:\n{}",
                    c.process.name,
                    c.process.log.display(),
                    tail(&log, 15)
                ));
            }
        }
        None
    }

    /// Kills every child and waits for it, so none outlives the sandbox.
    pub async fn stop(&mut self) {
        for c in &mut self.list {
            c.process.stop();
        }
    }
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use baton::config::Configuration;

    use super::*;

    #[test]
    fn configurations_are_valid_for_baton() {
        for orchestrated in [true, false] {
            let config = Configuration::from_yaml(&manager_config(orchestrated)).unwrap();
            assert_eq!(config.orchestrated_preemption, orchestrated);
            assert_eq!(
                config.single_cluster_preemption_timeout,
                std::time::Duration::from_secs(30)
            );
            assert!(!config.leader_election.enabled);
            assert_eq!(config.metrics_bind_address, "127.0.0.1:0");
        }
        let worker = Configuration::from_yaml(&worker_config()).unwrap();
        assert_eq!(worker.health_probe_bind_address, "127.0.0.1:0");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
    }
}
