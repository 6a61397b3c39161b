//! The KEP-8303 scenario with batch/v1 Jobs (or JobSets, TrainJobs or RayJobs of the same
//! shape, `super::kinds`), played on a running sandbox with its controllers: every worker is
//! full of low-priority Jobs whose pods take seconds to stop; one high-priority Job is
//! applied on the manager for MultiKueue. The timeline shows its
//! Workload, where it was gated, which worker got the baton, which victim Jobs were
//! suspended there and when their quota came back, the Job's copy running on one worker and
//! the manager Job following it. The closing line reports what was measured: the clusters
//! that evicted victims for it, and the victims wasted on clusters where it did not run.

use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::batch::v1::Job;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use tokio::sync::mpsc;

use super::controllers::PREEMPTION_TIMEOUT;
use super::jobs::{
    FILLER_PODS, FILLER_RUN_SECONDS, GRACE_SECONDS, PREEMPTOR, PREEMPTOR_PODS,
    PREEMPTOR_RUN_SECONDS, filler, filler_name, preemptor as preemptor_job,
};
use super::kinds::{self, DemoKind};
use super::observe::{MANAGER, Observer};
use super::setup::{DEMO_NAMESPACE, HIGH, LOW, WORKER_CPUS, worker_name};
use super::style::{Console, Tone};
use super::timeline::{Fact, Line, Timeline};
use super::watch::{Change, Object, Report, Watches};
use crate::harness::sandbox::Sandbox;

pub use super::outcome::{Eviction, Outcome};

/// The scenario's shape: how the workers are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Pods (of one CPU) per filler Job; the fillers fill each worker's quota.
    pub filler_pods: u32,
}

impl Shape {
    /// The demo's: two fillers of 2 pods per worker, so the Job evicts one victim.
    pub const DEMO: Shape = Shape {
        filler_pods: FILLER_PODS,
    };

    /// Filler Jobs per worker.
    pub fn fillers(self) -> u32 {
        WORKER_CPUS / self.filler_pods.max(1)
    }
}

/// How long filling the workers, or listing the clusters, may take.
const PHASE_DEADLINE: Duration = Duration::from_secs(30);
/// How long the Job may take to run: twice the manager's singleClusterPreemptionTimeout
/// (30 s), so a baton passed on to a second worker shows in the timeline rather than as a
/// failure.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// Once the Job runs, how long to keep watching for late evictions before counting.
const SETTLE: Duration = Duration::from_secs(1);
/// How long to wait, at most, for victims evicted for nothing to get their quota back (the
/// timeline shows them re-admitted); the figures are final before this.
const AFTERMATH: Duration = Duration::from_secs(10);
const TICK: Duration = Duration::from_millis(50);

/// The high-priority Job as `namespace/name`.
pub fn preemptor() -> String {
    format!("{DEMO_NAMESPACE}/{PREEMPTOR}")
}

fn objects_api(client: Client, kind: DemoKind) -> Api<DynamicObject> {
    Api::namespaced_with(client, DEMO_NAMESPACE, &kind.api_resource())
}

/// Filler `j` of `pods` pods, of `kind`.
fn filler_of(kind: DemoKind, j: u32, pods: u32) -> anyhow::Result<DynamicObject> {
    let doc = match kind {
        DemoKind::Job => serde_json::to_value(filler(j, pods)?)?,
        _ => kind.document(&kinds::Shape {
            name: &filler_name(j),
            namespace: DEMO_NAMESPACE,
            pods,
            run_seconds: FILLER_RUN_SECONDS,
            grace_seconds: GRACE_SECONDS,
            class: LOW,
            multikueue: false,
        }),
    };
    Ok(serde_json::from_value(doc)?)
}

/// The high-priority object for the manager, of `kind`.
fn preemptor_of(kind: DemoKind) -> anyhow::Result<DynamicObject> {
    let doc = match kind {
        DemoKind::Job => serde_json::to_value(preemptor_job()?)?,
        _ => kind.document(&kinds::Shape {
            name: PREEMPTOR,
            namespace: DEMO_NAMESPACE,
            pods: PREEMPTOR_PODS,
            run_seconds: PREEMPTOR_RUN_SECONDS,
            grace_seconds: GRACE_SECONDS,
            class: HIGH,
            multikueue: true,
        }),
    };
    Ok(serde_json::from_value(doc)?)
}

/// Creates the fillers on every worker and waits until their pods run.
async fn fill_workers(
    sandbox: &Sandbox,
    shape: Shape,
    kind: DemoKind,
    console: &Console,
) -> anyhow::Result<()> {
    // What the fillers are (JobSets for the TrainJob demo).
    let kind = kind.filler_kind();
    let fillers = shape.fillers();
    let filler_pods = shape.filler_pods;
    let workers: Vec<String> = (1..=sandbox.workers.len()).map(worker_name).collect();
    console.line(&format!(
        "Filling {}: each has {WORKER_CPUS} CPUs of quota and runs {fillers} low-priority {} submitted on the worker ({}; {}: {}, {filler_pods} pod{} × 1 CPU); their pods get {GRACE_SECONDS}s to stop (terminationGracePeriodSeconds).",
        workers.join(", "),
        kind.plural_title(),
        (1..=fillers)
            .map(filler_name)
            .collect::<Vec<_>>()
            .join(", "),
        LOW.name,
        LOW.value,
        if filler_pods == 1 { "" } else { "s" },
    ));
    let mut apis = Vec::new();
    for (worker, name) in sandbox.workers.iter().zip(&workers) {
        let api = objects_api(worker.client()?, kind);
        for j in 1..=fillers {
            api.create(&PostParams::default(), &filler_of(kind, j, filler_pods)?)
                .await
                .with_context(|| {
                    format!(
                        "create {} {} on {name}",
                        kind.api_resource().kind,
                        filler_name(j)
                    )
                })?;
        }
        apis.push((name.clone(), api));
    }
    let pods = i32::try_from(filler_pods).unwrap_or(i32::MAX);
    let start = Instant::now();
    loop {
        let mut waiting = Vec::new();
        for (name, api) in &apis {
            for j in 1..=fillers {
                let running = api
                    .get_opt(&filler_name(j))
                    .await
                    .ok()
                    .flatten()
                    .and_then(|o| serde_json::to_value(o).ok())
                    .map(|o| kind.seen(&o, pods))
                    .is_some_and(|seen| !seen.suspended && seen.active >= pods);
                if !running {
                    waiting.push(format!("{} on {name}", filler_name(j)));
                }
            }
        }
        if waiting.is_empty() {
            console.line(&format!(
                "All {} low-priority {} admitted and running ({:.1}s).",
                apis.len() * fillers as usize,
                kind.plural_title(),
                start.elapsed().as_secs_f64()
            ));
            return Ok(());
        }
        anyhow::ensure!(
            start.elapsed() < PHASE_DEADLINE,
            "not running after {PHASE_DEADLINE:?}: {} (see the worker logs)",
            waiting.join(", ")
        );
        tokio::time::sleep(TICK).await;
    }
}

/// Starts the watches and waits until each has listed what is there.
async fn watch_everything(
    sandbox: &Sandbox,
    kind: DemoKind,
    observer: &mut Observer,
) -> anyhow::Result<(Watches, mpsc::UnboundedReceiver<Report>)> {
    let mut clusters = vec![(MANAGER.to_string(), sandbox.manager.client()?)];
    for (i, worker) in sandbox.workers.iter().enumerate() {
        clusters.push((worker_name(i + 1), worker.client()?));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let custom = kind.needs_integrations().then(|| kind.api_resource());
    let watches = Watches::start(clusters, DEMO_NAMESPACE, custom.as_ref(), &tx);
    let mut synced = 0;
    let deadline = tokio::time::sleep(PHASE_DEADLINE);
    tokio::pin!(deadline);
    while synced < watches.len() {
        tokio::select! {
            report = rx.recv() => match report.map(|r| (r.cluster, r.change)) {
                // Nothing was submitted yet: whatever changes (the fillers' pods reporting
                // readiness) is still the state before the scenario.
                Some((cluster, Change::Baseline(Object::Workload(wl)) | Change::Applied(Object::Workload(wl)))) => {
                    observer.baseline_workload(&cluster, &wl)
                }
                Some((cluster, Change::Baseline(Object::Job(job)) | Change::Applied(Object::Job(job)))) => {
                    observer.baseline_job(&cluster, &job)
                }
                Some((cluster, Change::Baseline(Object::Custom(o)) | Change::Applied(Object::Custom(o)))) => {
                    let (name, seen) = read_custom(kind, &o);
                    observer.baseline_object(&cluster, &name, seen)
                }
                Some((_, Change::Synced)) => synced += 1,
                Some((_, Change::Deleted(..))) => {}
                None => anyhow::bail!("the watches stopped"),
            },
            _ = &mut deadline => anyhow::bail!("the watches did not list the clusters within {PHASE_DEADLINE:?}"),
        }
    }
    Ok((watches, rx))
}

/// The name of an object of the demo's kind and what the observer reads of it.
fn read_custom(kind: DemoKind, o: &DynamicObject) -> (String, super::observe::JobSeen) {
    let value = serde_json::to_value(o).unwrap_or_default();
    let pods = i32::try_from(PREEMPTOR_PODS).unwrap_or(i32::MAX);
    (kube::ResourceExt::name_any(o), kind.seen(&value, pods))
}

/// The facts one report brings.
fn facts_of(observer: &mut Observer, kind: DemoKind, report: &Report) -> Vec<Fact> {
    let cluster = report.cluster.as_str();
    match &report.change {
        Change::Applied(Object::Workload(wl)) | Change::Baseline(Object::Workload(wl)) => {
            observer.workload(cluster, wl)
        }
        Change::Applied(Object::Job(job)) | Change::Baseline(Object::Job(job)) => {
            observer.job(cluster, job)
        }
        Change::Deleted(super::watch::Kind::Workload, name) => {
            observer.workload_deleted(cluster, name)
        }
        Change::Applied(Object::Custom(o)) | Change::Baseline(Object::Custom(o)) => {
            let (name, seen) = read_custom(kind, o);
            observer.object(cluster, &name, seen)
        }
        Change::Deleted(super::watch::Kind::Job | super::watch::Kind::Custom, name) => {
            observer.job_deleted(cluster, name);
            Vec::new()
        }
        Change::Synced => Vec::new(),
    }
}

fn mode_line(orchestrated: bool, kind: DemoKind) -> String {
    let mode = if orchestrated {
        format!(
            "with orchestrated preemption: one gate open at a time, singleClusterPreemptionTimeout {PREEMPTION_TIMEOUT}"
        )
    } else {
        "without orchestration (--no-orchestration): plain MultiKueue, replicas carry no gate"
            .to_string()
    };
    format!("KEP-8303 demo with {}, {mode}.", kind.plural_title())
}

/// Plays the demo's scenario and prints its timeline; returns what it measured.
pub async fn play(
    sandbox: &Sandbox,
    orchestrated: bool,
    console: &Console,
) -> anyhow::Result<Outcome> {
    play_with(sandbox, orchestrated, Shape::DEMO, DemoKind::Job, console).await
}

/// [`play`] with the workers filled another way.
pub async fn play_shape(
    sandbox: &Sandbox,
    orchestrated: bool,
    shape: Shape,
    console: &Console,
) -> anyhow::Result<Outcome> {
    play_with(sandbox, orchestrated, shape, DemoKind::Job, console).await
}

/// [`play`] with objects of `kind` (the clusters must serve it: `--kind` installs its CRDs).
pub async fn play_kind(
    sandbox: &Sandbox,
    orchestrated: bool,
    kind: DemoKind,
    console: &Console,
) -> anyhow::Result<Outcome> {
    play_with(sandbox, orchestrated, Shape::DEMO, kind, console).await
}

async fn play_with(
    sandbox: &Sandbox,
    orchestrated: bool,
    shape: Shape,
    kind: DemoKind,
    console: &Console,
) -> anyhow::Result<Outcome> {
    console.line(&console.paint(Tone::Bold, &mode_line(orchestrated, kind)));
    fill_workers(sandbox, shape, kind, console).await?;
    let pods = i32::try_from(PREEMPTOR_PODS).unwrap_or(i32::MAX);
    let mut observer = Observer::new(PREEMPTOR, pods).of_kind(&kind.api_resource().kind);
    let (_watches, mut rx) = watch_everything(sandbox, kind, &mut observer).await?;

    let name = preemptor();
    let t0 = Instant::now();
    let kind_name = kind.api_resource().kind;
    let created = objects_api(sandbox.manager.client()?, kind)
        .create(&PostParams::default(), &preemptor_of(kind)?)
        .await
        .with_context(|| format!("submit {kind_name} {name} on the manager"))?;
    if kind == DemoKind::Job {
        // The manager names the Job's Workload after the Job's name and uid.
        let job: Job = serde_json::from_value(serde_json::to_value(&created)?)?;
        observer.expect_workload(&baton::jobs::workload_name(&job));
    } else {
        observer.expect_owner(created.metadata.uid.as_deref().unwrap_or_default());
    }
    let mut timeline = Timeline::of_kind(kind.noun());
    timeline.push(
        Duration::ZERO,
        Fact::Submitted {
            job: name.clone(),
            class: HIGH.name.to_string(),
            priority: HIGH.value,
            pods: PREEMPTOR_PODS,
        },
    );
    let print = |lines: Vec<Line>| {
        for line in lines {
            console.line(&line.render(console));
        }
    };
    let mut running_after = None;
    let mut settled_at: Option<Instant> = None;
    loop {
        tokio::select! {
            report = rx.recv() => {
                let Some(report) = report else { anyhow::bail!("the watches stopped") };
                let at = report.at.saturating_duration_since(t0);
                for fact in facts_of(&mut observer, kind, &report) {
                    if matches!(fact, Fact::Running { .. }) {
                        running_after.get_or_insert(at);
                    }
                    timeline.push(at, fact);
                }
            }
            _ = tokio::time::sleep(TICK) => {}
        }
        print(timeline.ready(t0.elapsed()));
        match settled_at {
            None if observer.waiting_for().is_empty() => settled_at = Some(Instant::now()),
            Some(at) => {
                let quiet = at.elapsed() >= SETTLE && observer.wasted_still_out().is_empty();
                if quiet || at.elapsed() >= AFTERMATH {
                    break;
                }
            }
            None => {}
        }
        if settled_at.is_none() && t0.elapsed() > RUN_DEADLINE {
            print(timeline.finish());
            anyhow::bail!(
                "{kind_name} {name} did not run within {RUN_DEADLINE:?}: waiting for {}; see the controller logs",
                observer.waiting_for().join(", ")
            );
        }
    }
    print(timeline.finish());
    let outcome = Outcome {
        orchestrated,
        workers: sandbox.workers.len(),
        workload: observer.workload_name().unwrap_or_default().to_string(),
        placed: observer.placed().unwrap_or_default().to_string(),
        evictions: observer.evictions().to_vec(),
        running_after: running_after.unwrap_or_else(|| t0.elapsed()),
    };
    let tone = if outcome.preempting_clusters().len() <= 1 {
        Tone::Good
    } else {
        Tone::Bad
    };
    console.line(&console.paint(tone, &outcome.summary(&name)));
    console.line(outcome.compare_hint());
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fillers_fill_each_worker() {
        assert_eq!(Shape::DEMO.fillers() * Shape::DEMO.filler_pods, WORKER_CPUS);
        assert_eq!(Shape { filler_pods: 1 }.fillers(), WORKER_CPUS);
    }

    #[test]
    fn the_mode_line_names_the_timeout_only_when_it_applies() {
        assert!(mode_line(true, DemoKind::Job).contains("singleClusterPreemptionTimeout 30s"));
        assert!(mode_line(false, DemoKind::Job).contains("plain MultiKueue"));
        assert!(!mode_line(false, DemoKind::Job).contains("singleClusterPreemptionTimeout"));
        assert!(mode_line(true, DemoKind::JobSet).contains("demo with JobSets"));
    }

    #[test]
    fn the_timeout_outlasts_the_victims_stop() {
        // Otherwise the baton would pass on while the first worker's victims still stop,
        // and a second worker would preempt too.
        let timeout = baton::config::Configuration::from_yaml(
            &super::super::controllers::manager_config(true),
        )
        .unwrap()
        .single_cluster_preemption_timeout;
        assert!(timeout > crate::harness::sandbox::TERMINATION_GRACE_CAP * 3);
        assert_eq!(RUN_DEADLINE, timeout * 2);
        assert!(
            Duration::from_secs(GRACE_SECONDS as u64)
                <= crate::harness::sandbox::TERMINATION_GRACE_CAP
        );
    }
}
