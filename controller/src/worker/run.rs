//! `baton worker`: leader election, watch caches, the admission loop
//! ([`crate::admission::scheduler`]) over every ClusterQueue of the cluster, and the integration
//! loops (`super::integrations::run`: batch/v1 Jobs, and the other kinds).
//! The loop wakes on any cache change (or a periodic resync) and waits a short batch window
//! so a burst of changes makes one cycle.

use std::sync::Arc;
use std::time::Duration;

use crate::events::{Events, Reporter};
use kube::Client;
use kube::api::Api;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{integrations, jobs};
use crate::admission::scheduler::{Caches, LoopState, Role, Scope, Shell, Wakeups, cycle};
use crate::admission::status::Holding;
use crate::config::Configuration;
use crate::integrations::Kind;
use crate::leader;
use crate::metrics::Metrics;
use crate::shutdown::Shutdown;
use crate::watch::cache;

/// How long a stop waits for the Job loop to finish its pass.
const JOB_LOOP_STOP: Duration = Duration::from_secs(5);

/// Runs the worker shim until the process is stopped.
pub async fn run(client: Client, config: Configuration, namespace: &str) -> anyhow::Result<()> {
    let shutdown = Shutdown::install()?;
    // A stop requested while waiting for the lease ends the process at once: nothing is in
    // flight yet.
    let leader::Started {
        metrics,
        ready,
        mut leadership,
    } = tokio::select! {
        started = leader::start(client.clone(), &config, "baton-worker", namespace) => started?,
        _ = shutdown.clone().requested() => return Ok(()),
    };
    // The kinds besides Jobs that the worker runs.
    let kinds: Vec<Kind> = crate::served::resolve(&client, &config, false)
        .await?
        .into_iter()
        .filter(Kind::runs_on_worker)
        .collect();
    let (wake, woken) = mpsc::unbounded_channel::<()>();
    // The Job loop shares the Workload and ResourceFlavor caches; their changes wake both.
    let (jobs_wake, jobs_woken) = mpsc::unbounded_channel::<()>();
    // Workload and flavor changes wake the dynamic kinds' loop too.
    let (objects_wake, objects_woken) = mpsc::unbounded_channel::<()>();
    let caches = watch_caches(
        &client,
        &wake,
        &tee(jobs_wake.clone(), objects_wake.clone()),
    );
    caches.synced().await;
    ready.set_ready();
    tracing::info!("caches synced; scheduling");
    let (mut job_loop, mut object_loop) = spawn_integration_loops(
        &client,
        &caches,
        &kinds,
        (jobs_wake, jobs_woken),
        (objects_wake, objects_woken),
        (&metrics, &shutdown),
    );
    let shell = Shell {
        recorder: recorder(&client, &metrics),
        client,
        metrics,
        caches,
        wake,
        role: Role {
            scope: Box::new(|| Scope::Everything),
            holding: Holding::UntilJobStops,
        },
    };
    if let Err(lost) = schedule(&shell, woken, shutdown, &mut leadership).await {
        job_loop.abort();
        object_loop.abort();
        return Err(lost);
    }
    if tokio::time::timeout(JOB_LOOP_STOP, &mut object_loop)
        .await
        .is_err()
    {
        object_loop.abort();
    }
    // The Job loop stops on the same request after its current pass.
    if tokio::time::timeout(JOB_LOOP_STOP, &mut job_loop)
        .await
        .is_err()
    {
        job_loop.abort();
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    Ok(())
}

/// The caches the admission loop reads; the Workload and ResourceFlavor ones wake the Job
/// loop too.
fn watch_caches(
    client: &Client,
    wake: &mpsc::UnboundedSender<()>,
    jobs_wake: &mpsc::UnboundedSender<()>,
) -> Caches {
    Caches {
        workloads: cache(
            Api::all(client.clone()),
            tee(wake.clone(), jobs_wake.clone()),
        ),
        cluster_queues: cache(Api::all(client.clone()), wake.clone()),
        local_queues: cache(Api::all(client.clone()), wake.clone()),
        flavors: cache(
            Api::all(client.clone()),
            tee(wake.clone(), jobs_wake.clone()),
        ),
        workload_classes: cache(Api::all(client.clone()), wake.clone()),
        pod_classes: cache(Api::all(client.clone()), wake.clone()),
        budgets: Some(cache(Api::all(client.clone()), wake.clone())),
        namespaces: cache(Api::all(client.clone()), wake.clone()),
    }
}

/// The worker's event recorder.
fn recorder(client: &Client, metrics: &crate::metrics::Metrics) -> Events {
    Events::start(
        client.clone(),
        Reporter {
            controller: "baton-worker".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
        metrics.events_dropped.clone(),
    )
}

/// Runs admission cycles until a stop is requested or nothing can wake the loop any more
/// (`Ok`), or the leader Lease is lost (`Err`).
async fn schedule(
    shell: &Shell,
    woken: mpsc::UnboundedReceiver<()>,
    shutdown: Shutdown,
    leadership: &mut Option<leader::Leadership>,
) -> anyhow::Result<()> {
    let mut state = LoopState::default();
    let mut wakeups = Wakeups::new(woken);
    let stop = shutdown.requested();
    tokio::pin!(stop);
    // A cycle runs to its end (its writes included) before a stop or a lost lease is
    // noticed: no decision is ever half applied.
    loop {
        tokio::select! {
            more = wakeups.next(&mut state) => if !more { return Ok(()) },
            _ = &mut stop => return Ok(()),
            _ = leader::lost(leadership) => {
                anyhow::bail!("lost the leader Lease; stopping so that the new leader acts alone");
            }
        }
        cycle(shell, &mut state).await;
    }
}

/// A sender whose ticks reach both `a` and `b`.
fn tee(a: mpsc::UnboundedSender<()>, b: mpsc::UnboundedSender<()>) -> mpsc::UnboundedSender<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        while rx.recv().await.is_some() {
            let _ = a.send(());
            let _ = b.send(());
        }
    });
    tx
}

type Wake = (mpsc::UnboundedSender<()>, mpsc::UnboundedReceiver<()>);

/// The integration loops, one task each: batch/v1 Jobs, and the kinds `kinds` (their caches
/// started here). Independent of the scheduling loop: they only share caches, and wait for
/// their own. Jobs wake both loops: a JobSet's child Jobs tell when its pods are gone.
fn spawn_integration_loops(
    client: &Client,
    caches: &Caches,
    kinds: &[Kind],
    (jobs_wake, jobs_woken): Wake,
    (objects_wake, objects_woken): Wake,
    (metrics, shutdown): (&Arc<Metrics>, &Shutdown),
) -> (JoinHandle<()>, JoinHandle<()>) {
    let job_cache = cache(
        Api::all(client.clone()),
        tee(jobs_wake.clone(), objects_wake.clone()),
    );
    let job_loop = tokio::spawn(integrations::run::run::<jobs::BatchJobs>(
        client.clone(),
        integrations::run::Caches {
            objects: vec![(Kind::Job, job_cache.clone())],
            children: None,
            workloads: caches.workloads.clone(),
            flavors: caches.flavors.clone(),
        },
        jobs_wake,
        jobs_woken,
        metrics.clone(),
        shutdown.clone(),
    ));
    let object_loop = tokio::spawn(integrations::run::run::<integrations::shaped::Shaped>(
        client.clone(),
        integrations::run::Caches {
            objects: kinds
                .iter()
                .map(|k| {
                    (
                        k.clone(),
                        integrations::run::cache(client, k, objects_wake.clone()),
                    )
                })
                .collect(),
            children: Some(job_cache),
            workloads: caches.workloads.clone(),
            flavors: caches.flavors.clone(),
        },
        objects_wake.clone(),
        objects_woken,
        metrics.clone(),
        shutdown.clone(),
    ));
    (job_loop, object_loop)
}
