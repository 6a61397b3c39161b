//! `baton manager`: caches, worker connections, the reconciler and the garbage collector.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_crds::constants::job::{PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL};
use baton_crds::multikueue::LocationType;
use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{Controller, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::config::Configuration;
use crate::leader;
use crate::manager::plan::kubeconfig::{KubeconfigProblem, vet};
use crate::manager::shell::admission_loop;
use crate::manager::shell::context::{Context, error_policy};
use crate::manager::shell::controller::reconcile;
use crate::manager::shell::execute::deletions::delete_job_copy;
use crate::manager::shell::job_controller;
use crate::manager::shell::queue_writer::keep_queue_status;
use crate::manager::shell::stores::ManagerStores;
use crate::manager::shell::workers::{Triggers, WorkerPool};
use crate::shutdown::Shutdown;
use crate::watch::{cache, spec_cache, synced};

/// Runs the manager until the process is stopped.
pub async fn run(client: Client, config: Configuration, namespace: String) -> anyhow::Result<()> {
    let shutdown = Shutdown::install()?;
    // A stop requested while waiting for the lease ends the process at once: nothing is in
    // flight yet.
    let leader::Started {
        metrics,
        ready,
        mut leadership,
    } = tokio::select! {
        started = leader::start(client.clone(), &config, "baton-manager", &namespace) => started?,
        _ = shutdown.clone().requested() => return Ok(()),
    };

    let (refs_tx, refs_rx) = mpsc::unbounded_channel::<ObjectRef<Workload>>();
    let (all_tx, all_rx) = mpsc::unbounded_channel::<()>();
    let (jobs_tx, jobs_rx) = mpsc::unbounded_channel::<ObjectRef<Job>>();
    let triggers = Triggers {
        refs: refs_tx,
        jobs: jobs_tx.clone(),
        all: all_tx.clone(),
    };
    let pool = WorkerPool::new(
        client.clone(),
        config.origin.clone(),
        triggers,
        metrics.clone(),
        config.worker_client.clone(),
    );

    // Caches of the objects that route workloads; any change re-examines every workload.
    // Only spec changes tick: the manager writes these objects' status itself. A tick
    // re-examines every workload and recomputes the queues' status (even with no workloads).
    let queues_changed = Arc::new(tokio::sync::Notify::new());
    // The admission loop (manager-side quota) wakes on Workload changes (from the
    // reconciler), queue changes and check activity changes.
    let (admission_tx, admission_rx) = mpsc::unbounded_channel::<()>();
    let (routing_tx, mut routing_rx) = mpsc::unbounded_channel::<()>();
    {
        let (all_tx, queues_changed) = (all_tx.clone(), queues_changed.clone());
        let admission_tx = admission_tx.clone();
        tokio::spawn(async move {
            while routing_rx.recv().await.is_some() {
                let _ = all_tx.send(());
                let _ = admission_tx.send(());
                queues_changed.notify_one();
            }
        });
    }
    let local_queues = spec_cache::<LocalQueue>(Api::all(client.clone()), routing_tx.clone());
    let cluster_queues = spec_cache::<ClusterQueue>(Api::all(client.clone()), routing_tx.clone());
    let admission_checks =
        spec_cache::<AdmissionCheck>(Api::all(client.clone()), routing_tx.clone());
    let configs = spec_cache::<MultiKueueConfig>(Api::all(client.clone()), routing_tx);
    let (sync_tx, mut sync_rx) = mpsc::unbounded_channel::<()>();
    let clusters = cache::<MultiKueueCluster>(Api::all(client.clone()), sync_tx.clone());
    let secrets = cache::<Secret>(Api::namespaced(client.clone(), &namespace), sync_tx.clone());

    // Worker connections follow the MultiKueueCluster objects and their Secrets.
    {
        let (pool, clusters, secrets, config, namespace) = (
            pool.clone(),
            clusters.clone(),
            secrets.clone(),
            config.clone(),
            namespace.clone(),
        );
        let (all_tx, queues_changed) = (all_tx.clone(), queues_changed.clone());
        tokio::spawn(async move {
            // Until both caches hold their first full list, a missing Secret may only be
            // not yet seen: reporting it as missing would be a false alarm.
            futures::join!(synced(&clusters), synced(&secrets));
            loop {
                while sync_rx.try_recv().is_ok() {}
                sync_clusters(&pool, &clusters, &secrets, &config, &namespace).await;
                let _ = all_tx.send(());
                // The AdmissionChecks' Active condition follows the clusters'.
                queues_changed.notify_one();
                if sync_rx.recv().await.is_none() {
                    break;
                }
            }
        });
    }

    let workload_api: Api<Workload> = Api::all(client.clone());
    let controller = Controller::new(workload_api, watcher::Config::default());
    let workloads = controller.store();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "baton-manager".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    let stores = ManagerStores {
        workloads,
        local_queues,
        cluster_queues,
        admission_checks,
        configs,
        clusters,
    };
    let context = Arc::new(Context {
        client: client.clone(),
        config: config.clone(),
        stores: stores.clone(),
        pool: pool.clone(),
        metrics: metrics.clone(),
        recorder,
        gated: Mutex::new(HashSet::new()),
        opened: Mutex::new(HashMap::new()),
        future_gates: Mutex::new(HashMap::new()),
        created: Mutex::new(HashMap::new()),
        queues_changed: queues_changed.clone(),
        job_wakeups: jobs_tx,
        admission_wake: admission_tx.clone(),
    });
    tokio::spawn(keep_queue_status(
        client.clone(),
        stores.clone(),
        queues_changed,
        admission_tx.clone(),
    ));
    tokio::spawn(admission_loop::run(
        client.clone(),
        stores.clone(),
        context.recorder.clone(),
        metrics.clone(),
        admission_tx,
        admission_rx,
    ));

    {
        let (stores, secrets, ready) = (stores.clone(), secrets.clone(), ready.clone());
        let all_tx = all_tx.clone();
        tokio::spawn(async move {
            futures::join!(stores.synced(), synced(&secrets));
            ready.set_ready();
            tracing::info!("caches synced; ready");
            let _ = all_tx.send(());
        });
    }

    if !config.gc_interval.is_zero() {
        tokio::spawn(garbage_collector(
            pool.clone(),
            stores.workloads.clone(),
            config.clone(),
        ));
    }

    let refs = UnboundedReceiverStream::new(refs_rx);
    let all = UnboundedReceiverStream::new(all_rx);
    // On SIGTERM the controllers stop taking work and finish the reconciles in flight
    // (no half-applied decisions); then the lease is handed over.
    let workloads_running = controller
        .reconcile_on(refs)
        .reconcile_all_on(all)
        .graceful_shutdown_on(shutdown.clone().requested())
        .run(reconcile, error_policy, context.clone())
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        });
    // Manager Jobs: only queued ones are cached; their Workloads (through the Workload
    // reconciler, see `Context::job_wakeups`) and their copies on the workers wake them.
    let jobs_running = Controller::new(
        Api::<Job>::all(client.clone()),
        watcher::Config::default().labels(QUEUE_NAME_LABEL),
    )
    .reconcile_on(UnboundedReceiverStream::new(jobs_rx))
    .graceful_shutdown_on(shutdown.requested())
    .run(job_controller::reconcile, error_policy, context)
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "Job controller event");
        }
    });
    let running = futures::future::join(workloads_running, jobs_running);
    tokio::select! {
        _ = running => {}
        _ = leader::lost(&mut leadership) => {
            anyhow::bail!("lost the leader Lease; stopping so that the new leader acts alone");
        }
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    Ok(())
}

/// Brings the worker connections in line with the MultiKueueCluster objects.
async fn sync_clusters(
    pool: &WorkerPool,
    clusters: &Store<MultiKueueCluster>,
    secrets: &Store<Secret>,
    config: &Configuration,
    namespace: &str,
) {
    let all = clusters.state();
    let names: HashSet<String> = all.iter().map(|c| c.name_any()).collect();
    pool.retain(|n| names.contains(n));
    for cluster in all {
        let name = cluster.name_any();
        let text = match kubeconfig_text(&cluster, secrets, namespace) {
            Ok(text) => text,
            Err(problem) => {
                pool.fail(&name, &problem).await;
                continue;
            }
        };
        match vet(&text, config.allow_insecure_kubeconfigs) {
            Ok(kubeconfig) => pool.ensure(&name, kubeconfig, text),
            Err(problem) => pool.fail(&name, &problem).await,
        }
    }
}

fn kubeconfig_text(
    cluster: &MultiKueueCluster,
    secrets: &Store<Secret>,
    namespace: &str,
) -> Result<String, KubeconfigProblem> {
    let Some(source) = &cluster.spec.cluster_source.kube_config else {
        return Err(KubeconfigProblem::Bad(
            "only kubeConfig cluster sources are supported".into(),
        ));
    };
    match source.location_type {
        LocationType::Path => std::fs::read_to_string(&source.location).map_err(|e| {
            KubeconfigProblem::Bad(format!(
                "cannot read kubeconfig file {}: {e}",
                source.location
            ))
        }),
        LocationType::Secret => {
            let secret = secrets
                .get(&ObjectRef::new(&source.location).within(namespace))
                .ok_or_else(|| {
                    KubeconfigProblem::Bad(format!(
                        "Secret {namespace}/{} not found",
                        source.location
                    ))
                })?;
            let bytes = secret
                .data
                .as_ref()
                .and_then(|d| d.get("kubeconfig"))
                .map(|b| b.0.clone())
                .or_else(|| {
                    secret
                        .string_data
                        .as_ref()
                        .and_then(|d| d.get("kubeconfig"))
                        .map(|s| s.clone().into_bytes())
                })
                .ok_or_else(|| {
                    KubeconfigProblem::Bad(format!(
                        "Secret {namespace}/{} has no key \"kubeconfig\"",
                        source.location
                    ))
                })?;
            String::from_utf8(bytes)
                .map_err(|_| KubeconfigProblem::Bad("the kubeconfig is not UTF-8 text".into()))
        }
    }
}

/// Removes our replicas, and our Job copies, whose manager Workload no longer exists (only
/// objects with our origin label are ever seen here, so nothing else is touched).
async fn garbage_collector(pool: WorkerPool, workloads: Store<Workload>, config: Configuration) {
    synced(&workloads).await;
    let mut tick = tokio::time::interval(config.gc_interval.max(Duration::from_secs(1)));
    loop {
        tick.tick().await;
        for (cluster, worker) in pool.connected() {
            for replica in worker.replicas.state() {
                let key = ObjectRef::<Workload>::new(&replica.name_any())
                    .within(&replica.namespace().unwrap_or_default());
                if workloads.get(&key).is_some() {
                    continue;
                }
                let api: Api<Workload> = Api::namespaced(
                    worker.client.clone(),
                    &replica.namespace().unwrap_or_default(),
                );
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: replica.uid(),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&replica.name_any(), &params).await {
                    Ok(_) => {
                        tracing::info!(%cluster, replica = %replica.name_any(), "garbage-collected an orphaned replica")
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, error = %e, "cannot garbage-collect replica")
                    }
                }
            }
            for copy in worker.jobs.state() {
                let Some(workload) = copy.labels().get(PREBUILT_WORKLOAD_LABEL) else {
                    continue;
                };
                let key = ObjectRef::<Workload>::new(workload)
                    .within(&copy.namespace().unwrap_or_default());
                if workloads.get(&key).is_some() {
                    continue;
                }
                match delete_job_copy(&worker, &copy).await {
                    Ok(()) => {
                        tracing::info!(%cluster, job = %copy.name_any(), "garbage-collected an orphaned Job copy")
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, error = %e, "cannot garbage-collect Job copy")
                    }
                }
            }
        }
    }
}
