//! Runs a soak: the environment, the recorder, the stream and the faults together; then the
//! checker and the figures.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use baton_crds::MultiKueueCluster;
use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use kube::api::Api;
use serde_json::json;

use super::check::{self, CheckConfig, END_STATE_GRACE};
use super::faults::Cluster;
use super::figures::figures;
use super::log::Event;
use super::plan::{Plan, Scale, plan};
use super::recorder::{self, Shared};
use super::report::Report;
use super::stream::{Stream, Target};
use crate::harness::eventually;
use crate::multikueue::Env;

/// Worker clusters unless the options say otherwise.
pub const WORKERS: usize = 3;
/// The manager's own quota: larger than the workers' together, so the workers (not the
/// manager) decide who runs.
const MANAGER_CPUS: u32 = 1000;

pub struct Options {
    pub seed: u64,
    /// Worker clusters (each with its own shim).
    pub workers: usize,
    pub scale: Scale,
    /// Keep the process logs and the event log here (always, or only on violations).
    pub keep: Option<PathBuf>,
    pub keep_always: bool,
}

fn manager_config(scale: &Scale) -> String {
    format!(
        "orchestratedPreemption: true\nsingleClusterPreemptionTimeout: {}ms\nworkerLostTimeout: {}ms\ngcInterval: 2s\n",
        scale.preemption_timeout, scale.worker_lost_timeout
    )
}

/// Moves every time in the plan `by` later (the plan counts from the stream's start).
fn shift(mut plan: Plan, by: u64) -> Plan {
    for a in &mut plan.arrivals {
        a.at += by;
        a.delete_at = a.delete_at.map(|t| t + by);
    }
    for f in &mut plan.faults {
        f.at += by;
    }
    plan
}

pub async fn run(options: Options) -> anyhow::Result<Report> {
    let scale = options.scale.clone();
    let workers = options.workers.max(1);
    let env = Env::start(workers).await.context("environment")?;
    if !env.is_testbed() {
        anyhow::bail!("the chaos soak injects faults: it runs on the testbed only");
    }
    let (flavor, cq, check) = (env.name("default-flavor"), env.cluster_queue(), env.check());
    env.install_docs(0, [json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": MANAGER_CPUS}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": check}]}}})])
        .await
        .context("manager quota")?;
    for i in 1..=workers {
        env.install_worker_queues(i, scale.worker_cpus, json!({}))
            .await
            .context("worker queues")?;
    }
    let cluster_names: Vec<String> = (1..=workers).map(|i| env.cluster(i)).collect();
    let target = Target {
        namespace: env.namespace.clone(),
        manager: env.manager_workloads(),
        workers: (1..=workers).map(|i| env.worker_workloads(i)).collect(),
        cluster_names: cluster_names.clone(),
    };
    let mkcs: Api<MultiKueueCluster> = Api::all(env.manager_client());
    let shared = Shared::new();
    let mut cluster = Cluster::new(env, manager_config(&scale), scale.error_fraction)?;
    let recorders: Vec<_> = cluster
        .testbeds
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let scope = recorder::Scope {
                namespace: target.namespace.clone(),
                cluster_names: cluster_names.clone(),
            };
            recorder::spawn(shared.clone(), i, t, scope)
        })
        .collect();
    for w in 1..=workers {
        cluster.start_shim(w, &shared)?;
    }
    cluster.start_manager(&shared)?;
    for name in &cluster_names {
        eventually(Duration::from_secs(60), &format!("{name} Active"), || {
            let mkcs = mkcs.clone();
            async move {
                let conditions = mkcs.get(name).await.ok()?.status?.conditions;
                is_condition_true(&conditions, condition::ACTIVE).then_some(())
            }
        })
        .await;
    }

    let t0 = shared.now();
    let plan = shift(plan(options.seed, &scale, workers), t0);
    let stream = Stream::new(plan.arrivals.clone());
    let stream_task = tokio::spawn(stream.clone().run(shared.clone(), target));
    let active_end = t0 + scale.active;
    cluster.play(&plan.faults, active_end, &shared).await?;
    cluster.heal(&shared).await?;
    stream.draining.store(true, Ordering::Relaxed);
    let drain_end = active_end + scale.drain;
    while shared.now() < drain_end && stream.outstanding(&shared) > 0 {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Keep recording through the window the end-state checks sample (this waits for no
    // condition: it is the observation period itself).
    tokio::time::sleep(Duration::from_millis(END_STATE_GRACE + 1_000)).await;
    stream_task.abort();
    let end = shared.now();
    let events = shared.events();
    for r in recorders {
        r.abort();
    }

    let config = CheckConfig {
        workers,
        worker_cpus: scale.worker_cpus,
        preemption_timeout: scale.preemption_timeout,
        cluster_names,
        end,
    };
    let outcome = check::check(&events, &config);
    let figures = figures(&events, scale.worker_lost_timeout);
    let kept = match &options.keep {
        Some(dir) if options.keep_always || !outcome.violations.is_empty() => {
            keep(dir, &cluster, &events).context("keep logs")?;
            Some(dir.clone())
        }
        _ => None,
    };
    Ok(Report {
        seed: options.seed,
        scale,
        workers,
        duration: end - t0,
        figures,
        outcome,
        injected: cluster.injected.clone(),
        kept,
    })
}

/// Copies the processes' logs and writes the event log (one event a line) into `dir`.
fn keep(dir: &std::path::Path, cluster: &Cluster, events: &[Event]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(cluster.env.dir.path())? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "log")
            && let Some(name) = path.file_name()
        {
            std::fs::copy(&path, dir.join(name))?;
        }
    }
    let text: String = events.iter().map(|e| format!("{e:?}\n")).collect();
    std::fs::write(dir.join("events.txt"), text)?;
    Ok(())
}
