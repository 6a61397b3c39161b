//! The KEP-8303 scenario, played on a running sandbox with its controllers: every worker is
//! full of low-priority work; one high-priority workload arrives on the manager; the
//! timeline shows where it was gated, which worker got the baton, what was evicted and where
//! it runs; the last line counts the clusters that evicted something.

use std::time::{Duration, Instant};

use anyhow::Context;
use baton_crds::workload::Workload;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::sync::mpsc;

use super::controllers::PREEMPTION_TIMEOUT;
use super::observe::{MANAGER, Observer};
use super::setup::{DEMO_NAMESPACE, LOCAL_QUEUE, WORKER_CPUS, worker_name};
use super::style::{Console, Tone};
use super::timeline::{Fact, Timeline, summary};
use super::watch::{Change, Report, Watches};
use crate::harness::sandbox::Sandbox;
use crate::workers::is_admitted;

/// The high-priority workload submitted on the manager.
pub const PREEMPTOR: &str = "train-llm";
const PREEMPTOR_PRIORITY: i32 = 1000;
/// Pods of one CPU each: two CPUs, so every full worker must evict two workloads.
const PREEMPTOR_PODS: u32 = 2;
/// Low-priority workloads per worker, one CPU each: they fill the worker's quota.
const LOW_PER_WORKER: u32 = WORKER_CPUS;
const LOW_PRIORITY: i32 = 0;
/// How long filling the workers, and then the scenario itself, may take.
const PHASE_DEADLINE: Duration = Duration::from_secs(30);
/// After the preemptor is placed and the other replicas are gone, how long to keep
/// watching for late evictions before counting.
const SETTLE: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(50);

/// What the demo measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The worker the preemptor runs on.
    pub placed: String,
    /// Workers that evicted something.
    pub preempting: Vec<String>,
}

fn workload(name: &str, priority: i32, pods: u32) -> anyhow::Result<Workload> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "spec": {"queueName": LOCAL_QUEUE, "priority": priority, "podSets": [{"name": "main", "count": pods, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }))?)
}

fn low_name(j: u32) -> String {
    format!("low-{j}")
}

/// Creates the low-priority workloads on every worker and waits until all are admitted.
async fn fill_workers(sandbox: &Sandbox, console: &Console) -> anyhow::Result<()> {
    let workers: Vec<String> = (1..=sandbox.workers.len()).map(worker_name).collect();
    console.line(&format!(
        "Filling {}: each has {WORKER_CPUS} CPUs of quota and runs {LOW_PER_WORKER} low-priority workloads of 1 CPU ({}…{}, priority {LOW_PRIORITY}).",
        workers.join(", "),
        low_name(1),
        low_name(LOW_PER_WORKER)
    ));
    let mut apis = Vec::new();
    for (worker, name) in sandbox.workers.iter().zip(&workers) {
        let api: Api<Workload> = Api::namespaced(worker.client()?, DEMO_NAMESPACE);
        for j in 1..=LOW_PER_WORKER {
            api.create(
                &PostParams::default(),
                &workload(&low_name(j), LOW_PRIORITY, 1)?,
            )
            .await
            .with_context(|| format!("create {} on {name}", low_name(j)))?;
        }
        apis.push((name.clone(), api));
    }
    let start = Instant::now();
    loop {
        let mut waiting = Vec::new();
        for (name, api) in &apis {
            for j in 1..=LOW_PER_WORKER {
                let admitted = api
                    .get_opt(&low_name(j))
                    .await
                    .ok()
                    .flatten()
                    .is_some_and(|w| is_admitted(&w));
                if !admitted {
                    waiting.push(format!("{} on {name}", low_name(j)));
                }
            }
        }
        if waiting.is_empty() {
            console.line(&format!(
                "All {} low-priority workloads admitted ({:.1}s).",
                apis.len() * LOW_PER_WORKER as usize,
                start.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        anyhow::ensure!(
            start.elapsed() < PHASE_DEADLINE,
            "not admitted after {PHASE_DEADLINE:?}: {} (see the worker logs)",
            waiting.join(", ")
        );
        tokio::time::sleep(TICK).await;
    }
}

/// Starts the watches and waits until each has listed what is there.
async fn watch_everything(
    sandbox: &Sandbox,
    observer: &mut Observer,
) -> anyhow::Result<(Watches, mpsc::UnboundedReceiver<Report>)> {
    let mut apis = vec![(
        MANAGER.to_string(),
        Api::namespaced(sandbox.manager.client()?, DEMO_NAMESPACE),
    )];
    for (i, worker) in sandbox.workers.iter().enumerate() {
        apis.push((
            worker_name(i + 1),
            Api::namespaced(worker.client()?, DEMO_NAMESPACE),
        ));
    }
    let expected = apis.len();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let watches = Watches::start(apis, &tx);
    let mut synced = 0;
    let deadline = tokio::time::sleep(PHASE_DEADLINE);
    tokio::pin!(deadline);
    while synced < expected {
        tokio::select! {
            report = rx.recv() => match report.map(|r| (r.cluster, r.change)) {
                Some((cluster, Change::Baseline(wl))) => observer.baseline(&cluster, &wl),
                Some((_, Change::Synced)) => synced += 1,
                // Nothing was submitted yet: nothing else can change.
                Some(_) => {}
                None => anyhow::bail!("the watches stopped"),
            },
            _ = &mut deadline => anyhow::bail!("the watches did not list the clusters within {PHASE_DEADLINE:?}"),
        }
    }
    Ok((watches, rx))
}

/// Plays the scenario and prints its timeline; returns what it measured.
pub async fn play(
    sandbox: &Sandbox,
    orchestrated: bool,
    console: &Console,
) -> anyhow::Result<Outcome> {
    let mode = if orchestrated {
        format!(
            "with orchestrated preemption: one gate open at a time, singleClusterPreemptionTimeout {PREEMPTION_TIMEOUT}"
        )
    } else {
        "without orchestration (--no-orchestration): plain MultiKueue, replicas carry no gate"
            .to_string()
    };
    console.line(&console.paint(Tone::Bold, &format!("KEP-8303 demo, {mode}.")));
    fill_workers(sandbox, console).await?;
    let mut observer = Observer::new(PREEMPTOR);
    let (_watches, mut rx) = watch_everything(sandbox, &mut observer).await?;

    let preemptor = format!("{DEMO_NAMESPACE}/{PREEMPTOR}");
    let t0 = Instant::now();
    Api::<Workload>::namespaced(sandbox.manager.client()?, DEMO_NAMESPACE)
        .create(
            &PostParams::default(),
            &workload(PREEMPTOR, PREEMPTOR_PRIORITY, PREEMPTOR_PODS)?,
        )
        .await
        .with_context(|| format!("submit {preemptor} on the manager"))?;
    let mut timeline = Timeline::default();
    timeline.push(
        Duration::ZERO,
        Fact::Submitted {
            workload: preemptor.clone(),
            priority: PREEMPTOR_PRIORITY,
            cpus: PREEMPTOR_PODS,
        },
    );
    let print = |lines: Vec<super::timeline::Line>| {
        for line in lines {
            console.line(&line.render(console));
        }
    };
    let mut settled_at: Option<Instant> = None;
    loop {
        tokio::select! {
            report = rx.recv() => {
                let Some(report) = report else { anyhow::bail!("the watches stopped") };
                let at = report.at.saturating_duration_since(t0);
                let facts = match &report.change {
                    Change::Applied(wl) | Change::Baseline(wl) => observer.applied(&report.cluster, wl),
                    Change::Deleted(name) => observer.deleted(&report.cluster, name),
                    Change::Synced => Vec::new(),
                };
                for fact in facts {
                    timeline.push(at, fact);
                }
            }
            _ = tokio::time::sleep(TICK) => {}
        }
        print(timeline.ready(t0.elapsed()));
        match settled_at {
            None if observer.settled() => settled_at = Some(Instant::now()),
            Some(at) if at.elapsed() >= SETTLE => break,
            _ => {}
        }
        if settled_at.is_none() && t0.elapsed() > PHASE_DEADLINE {
            print(timeline.finish());
            anyhow::bail!(
                "{preemptor} did not settle within {PHASE_DEADLINE:?} (replicas on {:?}, placed on {:?}); see the controller logs",
                observer.replicas(),
                observer.placed()
            );
        }
    }
    print(timeline.finish());
    let preempting = observer.preempting_clusters();
    let line = summary(&preempting, sandbox.workers.len(), orchestrated);
    let tone = if preempting.len() <= 1 {
        Tone::Good
    } else {
        Tone::Bad
    };
    console.line(&console.paint(tone, &line));
    Ok(Outcome {
        placed: observer.placed().unwrap_or_default().to_string(),
        preempting,
    })
}

/// The preemptor as `namespace/name`.
pub fn preemptor() -> String {
    format!("{DEMO_NAMESPACE}/{PREEMPTOR}")
}
