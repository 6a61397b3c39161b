//! The fault driver: plays the plan's faults against the running processes and testbed
//! clusters, records each in the log, and counts the API errors injected per status code.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_testbed::server::TestCluster;

use super::log::Fault;
use super::plan::{Action, Timed};
use super::recorder::Shared;
use crate::harness::process::BatonProcess;
use crate::multikueue::Env;

/// How long a kill "during gate opening" waits for the next opening before killing anyway.
const GATE_WAIT: Duration = Duration::from_secs(10);

/// The processes and clusters the faults act on.
pub struct Cluster {
    pub env: Env,
    pub manager_config: String,
    pub manager: Option<BatonProcess>,
    /// `shims[i - 1]`: worker `i`'s `baton worker`.
    pub shims: Vec<Option<BatonProcess>>,
    /// Index 0 the manager, then the workers.
    pub testbeds: Vec<Arc<TestCluster>>,
    pub error_fraction: f64,
    /// Injected errors by status code, and the code each cluster fails with now.
    pub injected: BTreeMap<u16, u64>,
    current: Vec<Option<(u16, u64)>>,
    /// Manager process logs, oldest first (kept for investigation).
    pub manager_logs: Vec<std::path::PathBuf>,
}

impl Cluster {
    pub fn new(env: Env, manager_config: String, error_fraction: f64) -> anyhow::Result<Self> {
        let mut testbeds = Vec::new();
        for c in std::iter::once(env.clusters.manager()).chain(env.clusters.workers()) {
            let Some(t) = c.testbed.clone() else {
                anyhow::bail!("the chaos soak needs testbed clusters (fault injection)");
            };
            testbeds.push(t);
        }
        let workers = env.worker_count();
        Ok(Self {
            env,
            manager_config,
            manager: None,
            shims: (0..workers).map(|_| None).collect(),
            current: vec![None; testbeds.len()],
            testbeds,
            error_fraction,
            injected: BTreeMap::new(),
            manager_logs: Vec::new(),
        })
    }

    pub fn start_manager(&mut self, shared: &Shared) -> anyhow::Result<()> {
        if self.manager.is_none() {
            let process = self.env.start_manager(&self.manager_config)?;
            self.manager_logs.push(process.log.clone());
            self.manager = Some(process);
            shared.fault(Fault::ManagerStarted);
        }
        Ok(())
    }

    pub fn start_shim(&mut self, worker: usize, shared: &Shared) -> anyhow::Result<()> {
        if self.shims[worker - 1].is_none() {
            self.shims[worker - 1] = Some(self.env.start_worker(worker, "")?);
            shared.fault(Fault::ShimStarted { worker });
        }
        Ok(())
    }

    /// Plays `faults` (sorted) until `until`, each at its time.
    pub async fn play(
        &mut self,
        faults: &[Timed],
        until: u64,
        shared: &Shared,
    ) -> anyhow::Result<()> {
        for timed in faults.iter().filter(|t| t.at < until) {
            let wait = timed.at.saturating_sub(shared.now());
            tokio::time::sleep(Duration::from_millis(wait)).await;
            self.apply(&timed.action, shared).await?;
        }
        let rest = until.saturating_sub(shared.now());
        tokio::time::sleep(Duration::from_millis(rest)).await;
        Ok(())
    }

    async fn apply(&mut self, action: &Action, shared: &Shared) -> anyhow::Result<()> {
        match action {
            Action::KillManager { after_gate_opening } => {
                let mut during = false;
                if *after_gate_opening {
                    during = tokio::time::timeout(GATE_WAIT, shared.gate_opened.notified())
                        .await
                        .is_ok();
                }
                if let Some(process) = self.manager.take() {
                    process.kill();
                    shared.fault(Fault::ManagerKilled {
                        during_gate_opening: during,
                    });
                }
            }
            Action::StartManager => self.start_manager(shared)?,
            Action::WorkerOffline(w) => {
                self.testbeds[*w].go_offline().await;
                shared.fault(Fault::WorkerOffline { worker: *w });
            }
            Action::WorkerOnline(w) => {
                self.testbeds[*w].go_online().await?;
                shared.fault(Fault::WorkerOnline { worker: *w });
            }
            Action::KillShim(w) => {
                if let Some(process) = self.shims[*w - 1].take() {
                    process.kill();
                    shared.fault(Fault::ShimKilled { worker: *w });
                }
            }
            Action::StartShim(w) => self.start_shim(*w, shared)?,
            Action::Errors { cluster, code } => {
                self.count_injected(*cluster);
                let faults = self.testbeds[*cluster].faults();
                faults.fail_requests(self.error_fraction, *code);
                self.current[*cluster] = Some((*code, faults.injected()));
                shared.fault(Fault::Errors {
                    cluster: *cluster,
                    code: *code,
                });
            }
            Action::Latency { cluster, millis } => {
                self.testbeds[*cluster]
                    .faults()
                    .set_latency(Duration::from_millis(*millis));
                shared.fault(Fault::Latency {
                    cluster: *cluster,
                    millis: *millis,
                });
            }
        }
        Ok(())
    }

    /// Attributes the errors injected on `cluster` since its code last changed.
    fn count_injected(&mut self, cluster: usize) {
        if let Some((code, before)) = self.current[cluster].take() {
            let now = self.testbeds[cluster].faults().injected();
            *self.injected.entry(code).or_default() += now.saturating_sub(before);
        }
    }

    /// Ends every fault: errors and latency cleared, workers online, processes running.
    pub async fn heal(&mut self, shared: &Shared) -> anyhow::Result<()> {
        for cluster in 0..self.testbeds.len() {
            self.count_injected(cluster);
            self.testbeds[cluster].faults().clear();
        }
        for w in 1..self.testbeds.len() {
            if !self.testbeds[w].is_online().await {
                self.testbeds[w].go_online().await?;
                shared.fault(Fault::WorkerOnline { worker: w });
            }
            self.start_shim(w, shared)?;
        }
        self.start_manager(shared)
    }
}
