//! `baton worker`: leader election, watch caches, the admission loop
//! ([`crate::admission::scheduler`]) over every ClusterQueue of the cluster, and the Job loop.
//! The loop wakes on any cache change (or a periodic resync) and waits a short batch window
//! so a burst of changes makes one cycle.

use std::time::Duration;

use kube::Client;
use kube::api::Api;
use kube::runtime::events::{Recorder, Reporter};
use tokio::sync::mpsc;

use super::jobs;
use crate::admission::scheduler::{Caches, LoopState, Role, Scope, Shell, Wakeups, cycle};
use crate::admission::status::Holding;
use crate::config::Configuration;
use crate::leader;
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
    let (wake, woken) = mpsc::unbounded_channel::<()>();
    // The Job loop shares the Workload and ResourceFlavor caches; their changes wake both.
    let (jobs_wake, jobs_woken) = mpsc::unbounded_channel::<()>();
    let caches = Caches {
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
    };
    caches.synced().await;
    ready.set_ready();
    tracing::info!("caches synced; scheduling");
    // Independent of the scheduling loop: it only shares caches, and waits for its own.
    let mut job_loop = tokio::spawn(jobs::run::run(
        client.clone(),
        jobs::run::JobCaches {
            jobs: cache(Api::all(client.clone()), jobs_wake.clone()),
            workloads: caches.workloads.clone(),
            flavors: caches.flavors.clone(),
        },
        jobs_wake,
        jobs_woken,
        metrics.clone(),
        shutdown.clone(),
    ));
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "baton-worker".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    let shell = Shell {
        client,
        recorder,
        metrics,
        caches,
        wake,
        role: Role {
            scope: Box::new(|| Scope::Everything),
            holding: Holding::UntilJobStops,
        },
    };
    let mut state = LoopState::default();
    let mut wakeups = Wakeups::new(woken);
    let stop = shutdown.requested();
    tokio::pin!(stop);
    // A cycle runs to its end (its writes included) before a stop or a lost lease is
    // noticed: no decision is ever half applied.
    loop {
        tokio::select! {
            more = wakeups.next(&mut state) => if !more { break },
            _ = &mut stop => break,
            _ = leader::lost(&mut leadership) => {
                job_loop.abort();
                anyhow::bail!("lost the leader Lease; stopping so that the new leader acts alone");
            }
        }
        cycle(&shell, &mut state).await;
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
