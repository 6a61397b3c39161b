//! `baton manager`: caches, worker connections, the reconciler and the garbage collector.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use baton_crds::WorkloadKey;
use baton_crds::constants::job::{PREBUILT_WORKLOAD_LABEL, QUEUE_NAME_LABEL};
use baton_crds::multikueue::LocationType;
use baton_crds::workload::Workload;
use baton_crds::{AdmissionCheck, ClusterQueue, LocalQueue, MultiKueueCluster, MultiKueueConfig};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::core::DynamicObject;
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{Controller, controller, watcher};
use kube::{Client, ResourceExt};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::config::Configuration;
use crate::events::{Events, Reporter};
use crate::integrations::Kind;
use crate::leader;
use crate::manager::plan::kubeconfig::{KubeconfigProblem, vet};
use crate::manager::plan::resync;
use crate::manager::shell::admission_loop;
use crate::manager::shell::classes::ClassStores;
use crate::manager::shell::context::{Context, Memories, error_policy};
use crate::manager::shell::controller::{forget_gone, reconcile};
use crate::manager::shell::execute::deletions::delete_job_copy;
use crate::manager::shell::job_controller;
use crate::manager::shell::kinds::KindWakeups;
use crate::manager::shell::memory::FORGET_EVERY;
use crate::manager::shell::object_controller;
use crate::manager::shell::owner_index::OwnerIndex;
use crate::manager::shell::queue_writer::keep_queue_status;
use crate::manager::shell::stores::{ManagerStores, strip_manager_workload};
use crate::manager::shell::wake_queue;
use crate::manager::shell::workers::{Connected, Triggers, WorkerPool};
use crate::shutdown::Shutdown;
use crate::watch::{
    Watchable, cache, spec_cache, spec_cache_and_status, strip_managed_fields, synced,
};

/// Reconciles in flight at once, per controller. Unbounded, a burst of 10,000 new workloads
/// started thousands at once: each held its parsed responses and its own connection to every
/// worker (hyper opens one per concurrent HTTP/1 request), about 100 MB at the peak, while
/// the API servers, not the manager, set the pace. 64 keeps every worker's requests
/// pipelined (a reconcile waits mostly on the network) and the connections per worker below
/// 64.
const RECONCILE_CONCURRENCY: u16 = 64;

/// What wakes the controllers and the loops: the senders, shared by every task.
#[derive(Clone)]
struct Wake {
    /// One manager Workload to reconcile.
    refs: wake_queue::WakeSender,
    /// Every manager Workload.
    all: mpsc::UnboundedSender<()>,
    /// One manager Job.
    jobs: mpsc::UnboundedSender<ObjectRef<Job>>,
    /// One manager object of another dispatched kind.
    kinds: KindWakeups,
    /// The admission loop (manager-side quota): Workload, queue and check changes.
    admission: mpsc::UnboundedSender<()>,
    /// The queues' status: recomputed on a tick (even with no workloads).
    queues_changed: Arc<tokio::sync::Notify>,
}

/// The receiving ends: the controllers' and the admission loop's.
struct Woken {
    controllers: ControllerWakeups,
    admission: mpsc::UnboundedReceiver<()>,
}

struct ControllerWakeups {
    refs: wake_queue::WakeReceiver,
    /// Where the Workload controller reports each reconcile's end.
    refs_done: wake_queue::Done,
    all: mpsc::UnboundedReceiver<()>,
    jobs: mpsc::UnboundedReceiver<ObjectRef<Job>>,
}

/// Each dispatched kind with the receiving end of its wake-ups.
type KindsWoken = Vec<(Kind, mpsc::UnboundedReceiver<ObjectRef<DynamicObject>>)>;

/// One channel per dispatched kind: the senders, and each kind's receiver.
fn kind_channels(kinds: &[Kind]) -> (KindWakeups, KindsWoken) {
    let mut senders = std::collections::BTreeMap::new();
    let mut receivers = Vec::new();
    for kind in kinds {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.insert(kind.clone(), tx);
        receivers.push((kind.clone(), rx));
    }
    (Arc::new(senders), receivers)
}

fn wake_channels(kinds: KindWakeups, backlog: Gauge) -> (Wake, Woken) {
    let (refs, refs_rx, refs_done) = wake_queue::channel(
        usize::from(RECONCILE_CONCURRENCY) * wake_queue::HANDED_PER_RECONCILE,
        backlog,
    );
    let (all, all_rx) = mpsc::unbounded_channel();
    let (jobs, jobs_rx) = mpsc::unbounded_channel();
    let (admission, admission_rx) = mpsc::unbounded_channel();
    let wake = Wake {
        refs,
        all,
        jobs,
        kinds,
        admission,
        queues_changed: Arc::new(tokio::sync::Notify::new()),
    };
    let woken = Woken {
        controllers: ControllerWakeups {
            refs: refs_rx,
            refs_done,
            all: all_rx,
            jobs: jobs_rx,
        },
        admission: admission_rx,
    };
    (wake, woken)
}

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
    let kinds = crate::served::resolve(&client, &config, true).await?;
    let (kind_wakeups, kinds_woken) = kind_channels(&kinds);
    let (wake, woken) = wake_channels(kind_wakeups, metrics.reconcile_backlog.clone());
    let pool = WorkerPool::new(
        client.clone(),
        config.origin.clone(),
        Triggers {
            refs: wake.refs.clone(),
            jobs: wake.jobs.clone(),
            all: wake.all.clone(),
            kinds: wake.kinds.clone(),
        },
        metrics.clone(),
        config.worker_client.clone(),
    );
    let (clusters, secrets) = follow_clusters(&client, &config, &namespace, &pool, &wake);
    let memories = Arc::new(Memories::default());
    tokio::spawn(forget_expired(memories.clone()));
    let owners = Arc::new(OwnerIndex::default());
    let (controller, watching) = workload_controller(
        Api::<Workload>::all(client.clone()),
        &wake,
        memories.clone(),
        owners.clone(),
        metrics.clone(),
    );
    let stores = routing_caches(&client, (controller.store(), owners), clusters, &wake);
    let classes = ClassStores::watch(&client, &wake.admission);
    let shared = Shared {
        stores: stores.clone(),
        classes: classes.clone(),
        pool: pool.clone(),
        memories,
    };
    let context = new_context(&client, &config, shared, &metrics, &wake);
    tokio::spawn(keep_queue_status(
        client.clone(),
        stores.clone(),
        wake.queues_changed.clone(),
        wake.admission.clone(),
    ));
    tokio::spawn(admission_loop::run(
        client.clone(),
        stores.clone(),
        classes,
        context.recorder.clone(),
        metrics.clone(),
        wake.admission.clone(),
        woken.admission,
    ));
    {
        let (stores, all) = (stores.clone(), wake.all.clone());
        tokio::spawn(async move {
            futures::join!(stores.synced(), synced(&secrets));
            ready.set_ready();
            tracing::info!("caches synced; ready");
            let _ = all.send(());
        });
    }
    tokio::spawn(super::room_writer::write_rooms(
        client.clone(),
        pool.clone(),
        metrics.clone(),
    ));
    if !config.gc_interval.is_zero() {
        tokio::spawn(garbage_collector(pool, stores.workloads.clone(), config));
    }
    let objects = run_kind_controllers(
        client.clone(),
        context.clone(),
        kinds_woken,
        shutdown.clone(),
    );
    let running = futures::future::join(
        run_controllers(client, controller, context, woken.controllers, shutdown),
        objects,
    );
    // The watch is polled here, beside the controllers, as it was when it fed the controller
    // directly. Spawned on the runtime's workers instead, its cached objects shared their
    // allocator pages with short-lived ones (manager_scale, 20 x 10,000 pending, release
    // build: 105.3 and 106.8 MiB once quiet in two runs spawned, 102.7 polled here).
    tokio::select! {
        _ = running => {}
        _ = watching => {}
        _ = leader::lost(&mut leadership) => {
            anyhow::bail!("lost the leader Lease; stopping so that the new leader acts alone");
        }
    }
    if let Some(leadership) = leadership {
        leadership.release().await;
    }
    Ok(())
}

/// How often every manager Workload and queued Job is looked at again although nothing
/// announced a change, so that a lost event never strands one.
const RESYNC: Duration = Duration::from_secs(300);

/// Looks at every manager Workload again once each [`RESYNC`], one slice of them at a time
/// (the rule: [`resync`]): one timer for all of them, where a requeue per workload would keep
/// a timer and a queue entry for each (10,000 pending workloads held about 8 MB of them).
async fn look_again_in_slices(cache: Store<Workload>, refs: wake_queue::WakeSender) {
    let every = RESYNC / resync::SLICES;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for tick in 0_u64.. {
        ticks.tick().await;
        let slice = resync::slice_at(tick);
        refs.wake_all(
            cache
                .state()
                .iter()
                .filter(|wl| {
                    let meta = &wl.metadata;
                    resync::slice_of(
                        meta.namespace.as_deref().unwrap_or_default(),
                        meta.name.as_deref().unwrap_or_default(),
                    ) == slice
                })
                .map(|wl| WorkloadKey::of(wl)),
        );
    }
}

/// Wakes every object of a controller each [`RESYNC`] (the queued Jobs, the objects of the
/// other dispatched kinds): one timer for all of them.
async fn resync(all: mpsc::UnboundedSender<()>) {
    let mut every = tokio::time::interval_at(tokio::time::Instant::now() + RESYNC, RESYNC);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if all.send(()).is_err() {
            return;
        }
    }
}

/// A controller whose cache holds objects as `strip` leaves them.
fn stripped_controller<K>(api: Api<K>, config: watcher::Config, strip: fn(&mut K)) -> Controller<K>
where
    K: Watchable,
{
    let (reader, writer) = reflector::store::<K>();
    let objects = watcher(api, config)
        .default_backoff()
        .modify(strip)
        .reflect(writer)
        .applied_objects();
    Controller::for_stream(objects, reader)
}

/// The manager Workload controller, and its watch as a future of its own (the caller polls
/// it beside the controller): each applied Workload goes through the wake-up queue
/// ([`wake_queue`]), as the replicas' events do, so that the controller is handed a bounded
/// number of workloads at a time, instead of feeding the controller. The watch also wakes the
/// admission loop, which scans every workload, on each change of a manager Workload
/// ([`wakes_admission`]), once the cache holds it: a reconcile woken by a replica changes no
/// manager Workload, so it does not wake the loop.
fn workload_controller(
    api: Api<Workload>,
    wake: &Wake,
    memories: Arc<Memories>,
    owners: Arc<OwnerIndex>,
    metrics: Arc<crate::metrics::Metrics>,
) -> (
    Controller<Workload>,
    impl std::future::Future<Output = ()> + Send + use<>,
) {
    use futures::TryStreamExt;
    let (reader, writer) = reflector::store::<Workload>();
    let admission = wake.admission.clone();
    let refs = wake.refs.clone();
    let cache = reader.clone();
    let objects = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(strip_manager_workload)
        .reflect(writer)
        .inspect_ok(move |event| {
            if let watcher::Event::Apply(wl) | watcher::Event::InitApply(wl) = event {
                memories.cache_holds(wl);
                refs.wake(WorkloadKey::of(wl));
            }
            owners.apply(event);
            forget_gone(&metrics, event, &cache);
            if wakes_admission(event) {
                let _ = admission.send(());
            }
        });
    let watching = async move {
        futures::pin_mut!(objects);
        while let Some(event) = objects.next().await {
            if let Err(e) = event {
                tracing::warn!(error = %e, "manager Workload watch");
            }
        }
    };
    (
        Controller::for_stream(futures::stream::pending(), reader),
        watching,
    )
}

/// Tells the wake-up queue that a manager Workload's reconcile ended, however it ended.
fn reconcile_ended<E: std::error::Error, Q: std::error::Error>(
    done: &wake_queue::Done,
    result: &Result<(ObjectRef<Workload>, Action), controller::Error<E, Q>>,
) {
    let (namespace, name) = match result {
        Ok((obj, _)) => (obj.namespace.as_deref(), obj.name.as_str()),
        Err(
            controller::Error::ObjectNotFound(obj) | controller::Error::ReconcilerFailed(_, obj),
        ) => (obj.namespace.as_deref(), obj.name.as_str()),
        Err(_) => return,
    };
    done.done(namespace.unwrap_or_default(), name);
}

/// Each time `all` is told, every manager Workload the cache holds is woken.
async fn wake_every_workload(
    mut all: mpsc::UnboundedReceiver<()>,
    cache: Store<Workload>,
    refs: wake_queue::WakeSender,
) {
    while all.recv().await.is_some() {
        while all.try_recv().is_ok() {}
        refs.wake_all(cache.state().iter().map(|wl| WorkloadKey::of(wl)));
    }
}

/// Every [`FORGET_EVERY`], the memories drop their expired entries, whether or not a
/// reconcile touched them.
async fn forget_expired(memories: Arc<Memories>) {
    let mut every = tokio::time::interval(FORGET_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        memories.forget_expired(std::time::Instant::now());
    }
}

/// Whether a manager Workload watch event wakes the admission loop: a Workload applied or
/// deleted, or a (re)list done (the objects it replaced may have changed or gone while the
/// watch was down). The relisted objects one by one do not: the end of the list covers them.
fn wakes_admission(event: &watcher::Event<Workload>) -> bool {
    match event {
        watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone => true,
        watcher::Event::Init | watcher::Event::InitApply(_) => false,
    }
}

/// What the reconcilers share.
/// The caches, the worker pool and the memories the reconcilers share with the rest.
struct Shared {
    stores: ManagerStores,
    classes: ClassStores,
    pool: WorkerPool,
    memories: Arc<Memories>,
}

fn new_context(
    client: &Client,
    config: &Configuration,
    shared: Shared,
    metrics: &Arc<crate::metrics::Metrics>,
    wake: &Wake,
) -> Arc<Context> {
    let Shared {
        stores,
        classes,
        pool,
        memories,
    } = shared;
    Arc::new(Context {
        client: client.clone(),
        config: config.clone(),
        stores,
        classes,
        pool,
        metrics: metrics.clone(),
        recorder: Events::start(
            client.clone(),
            Reporter {
                controller: "baton-manager".into(),
                instance: std::env::var("POD_NAME").ok(),
            },
            metrics.events_dropped.clone(),
        ),
        memories,
        queues_changed: wake.queues_changed.clone(),
        job_wakeups: wake.jobs.clone(),
        view: Default::default(),
        kind_wakeups: wake.kinds.clone(),
    })
}

/// Caches of the objects that route workloads. Only spec changes tick (the manager writes
/// these objects' status itself); a tick re-examines every workload, wakes the admission
/// loop and recomputes the queues' status.
fn routing_caches(
    client: &Client,
    (workloads, owners): (Store<Workload>, Arc<OwnerIndex>),
    clusters: Store<MultiKueueCluster>,
    wake: &Wake,
) -> ManagerStores {
    let (routing_tx, mut routing_rx) = mpsc::unbounded_channel::<()>();
    let wake_all = wake.clone();
    tokio::spawn(async move {
        while routing_rx.recv().await.is_some() {
            let _ = wake_all.all.send(());
            let _ = wake_all.admission.send(());
            wake_all.queues_changed.notify_one();
        }
    });
    ManagerStores {
        workloads,
        owners,
        local_queues: spec_cache::<LocalQueue>(Api::all(client.clone()), routing_tx.clone()),
        cluster_queues: spec_cache::<ClusterQueue>(Api::all(client.clone()), routing_tx.clone()),
        admission_checks: spec_cache::<AdmissionCheck>(
            Api::all(client.clone()),
            routing_tx.clone(),
        ),
        configs: spec_cache::<MultiKueueConfig>(Api::all(client.clone()), routing_tx),
        clusters,
    }
}

/// Worker connections follow the MultiKueueCluster objects and their Secrets; returns
/// those two caches. A change of either's spec (or a Secret's data) reconnects what changed
/// and looks at every workload again; a MultiKueueCluster's status write only recomputes
/// the checks' activity.
fn follow_clusters(
    client: &Client,
    config: &Configuration,
    namespace: &str,
    pool: &WorkerPool,
    wake: &Wake,
) -> (Store<MultiKueueCluster>, Store<Secret>) {
    let (sync_tx, mut sync_rx) = mpsc::unbounded_channel::<()>();
    // Status writes (the Active condition; the room summary, rewritten at least every five
    // minutes for each worker, every two seconds while its room changes) change no
    // connection. Each of them woke every workload: at 20 workers, 20 wake-ups of 50,000
    // workloads every five minutes (issue 23).
    let clusters = spec_cache_and_status::<MultiKueueCluster>(
        Api::all(client.clone()),
        sync_tx.clone(),
        wake.queues_changed.clone(),
    );
    let secrets = cache::<Secret>(Api::namespaced(client.clone(), namespace), sync_tx);
    let (pool, config, namespace, wake) = (
        pool.clone(),
        config.clone(),
        namespace.to_string(),
        wake.clone(),
    );
    let (clusters_seen, secrets_seen) = (clusters.clone(), secrets.clone());
    tokio::spawn(async move {
        // Until both caches hold their first full list, a missing Secret may only be not
        // yet seen: reporting it as missing would be a false alarm.
        futures::join!(synced(&clusters_seen), synced(&secrets_seen));
        loop {
            while sync_rx.try_recv().is_ok() {}
            sync_clusters(&pool, &clusters_seen, &secrets_seen, &config, &namespace).await;
            let _ = wake.all.send(());
            // The AdmissionChecks' Active condition follows the clusters'.
            wake.queues_changed.notify_one();
            if sync_rx.recv().await.is_none() {
                break;
            }
        }
    });
    (clusters, secrets)
}

/// The Workload and Job controllers, until shutdown. On SIGTERM they stop taking work and
/// finish the reconciles in flight (no half-applied decisions); then the lease is handed
/// over.
async fn run_controllers(
    client: Client,
    controller: Controller<Workload>,
    context: Arc<Context>,
    woken: ControllerWakeups,
    shutdown: Shutdown,
) {
    let ControllerWakeups {
        refs,
        refs_done,
        all,
        jobs,
    } = woken;
    tokio::spawn(wake_every_workload(all, controller.store(), refs.sender()));
    tokio::spawn(look_again_in_slices(controller.store(), refs.sender()));
    let workloads_running = controller
        .with_config(controller::Config::default().concurrency(RECONCILE_CONCURRENCY))
        .reconcile_on(refs)
        .graceful_shutdown_on(shutdown.clone().requested())
        .run(reconcile, error_policy, context.clone())
        .for_each(move |result| {
            reconcile_ended(&refs_done, &result);
            async move {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "controller event");
                }
            }
        });
    // Manager Jobs: only queued ones are cached; their Workloads (through the Workload
    // reconciler, see `Context::job_wakeups`) and their copies on the workers wake them.
    let (all_jobs, every_job) = mpsc::unbounded_channel();
    tokio::spawn(resync(all_jobs));
    let jobs_running = stripped_controller(
        Api::<Job>::all(client),
        watcher::Config::default().labels(QUEUE_NAME_LABEL),
        strip_managed_fields,
    )
    .with_config(controller::Config::default().concurrency(RECONCILE_CONCURRENCY))
    .reconcile_on(UnboundedReceiverStream::new(jobs))
    .reconcile_all_on(UnboundedReceiverStream::new(every_job))
    .graceful_shutdown_on(shutdown.requested())
    .run(job_controller::reconcile, error_policy, context)
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "Job controller event");
        }
    });
    futures::future::join(workloads_running, jobs_running).await;
}

/// One reconciler per dispatched kind besides Jobs, over its queued manager objects, woken
/// by their Workloads and their copies on the workers like the Job reconciler.
async fn run_kind_controllers(
    client: Client,
    context: Arc<Context>,
    woken: KindsWoken,
    shutdown: Shutdown,
) {
    let running = woken.into_iter().map(|(kind, woken)| {
        let resource = kind.api_resource();
        let writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
        let reader = writer.as_reader();
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let objects = watcher(api, watcher::Config::default().labels(QUEUE_NAME_LABEL))
            .default_backoff()
            .modify(|o: &mut DynamicObject| o.metadata.managed_fields = None)
            .reflect(writer)
            .applied_objects();
        let (all, every) = mpsc::unbounded_channel();
        tokio::spawn(resync(all));
        let kctx = Arc::new(object_controller::KindContext {
            ctx: context.clone(),
            kind,
        });
        Controller::for_stream_with(objects, reader, resource)
            .with_config(controller::Config::default().concurrency(RECONCILE_CONCURRENCY))
            .reconcile_on(UnboundedReceiverStream::new(woken))
            .reconcile_all_on(UnboundedReceiverStream::new(every))
            .graceful_shutdown_on(shutdown.clone().requested())
            .run(
                object_controller::reconcile,
                |obj, error, kctx: Arc<object_controller::KindContext>| {
                    error_policy(obj, error, kctx.ctx.clone())
                },
                kctx,
            )
            .for_each(|result| async move {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "object controller event");
                }
            })
    });
    futures::future::join_all(running).await;
}

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
            let orphans = worker.replicas.orphans(|namespace, name| {
                workloads
                    .get(&ObjectRef::new(name).within(namespace))
                    .is_some()
            });
            for replica in orphans {
                let api: Api<Workload> = Api::namespaced(worker.client.clone(), &replica.namespace);
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: replica.uid,
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&replica.name, &params).await {
                    Ok(_) => {
                        tracing::info!(%cluster, replica = %replica.name, "garbage-collected an orphaned replica")
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, error = %e, "cannot garbage-collect replica")
                    }
                }
            }
            collect_object_copies(&cluster, &worker, &workloads).await;
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

/// Removes one worker's copies of the other kinds whose manager Workload no longer exists.
async fn collect_object_copies(cluster: &str, worker: &Connected, workloads: &Store<Workload>) {
    for (kind, store) in worker.objects.iter() {
        for copy in store.state() {
            let Some(workload) = copy.labels().get(PREBUILT_WORKLOAD_LABEL) else {
                continue;
            };
            let key =
                ObjectRef::<Workload>::new(workload).within(&copy.namespace().unwrap_or_default());
            if workloads.get(&key).is_some() {
                continue;
            }
            match object_controller::delete_copy(worker, kind, &copy).await {
                Ok(()) => {
                    tracing::info!(%cluster, %kind, object = %copy.name_any(), "garbage-collected an orphaned copy")
                }
                Err(e) => {
                    tracing::debug!(%cluster, %kind, error = %e, "cannot garbage-collect copy")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_crds::workload::WorkloadSpec;

    #[test]
    fn every_change_of_a_manager_workload_wakes_the_admission_loop_once() {
        let wl = || Workload::new("job", WorkloadSpec::default());
        assert!(wakes_admission(&watcher::Event::Apply(wl())));
        assert!(wakes_admission(&watcher::Event::Delete(wl())));
        assert!(wakes_admission(&watcher::Event::InitDone));
        assert!(!wakes_admission(&watcher::Event::Init));
        assert!(!wakes_admission(&watcher::Event::InitApply(wl())));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed")]
    struct Failed;

    type Ended = Result<(ObjectRef<Workload>, Action), controller::Error<Failed, Failed>>;

    /// Every reconcile's end frees its hand-on, whether it succeeded, failed or found no
    /// object; an end naming no object frees nothing.
    #[test]
    fn every_reconcile_end_naming_a_workload_frees_its_hand_on() {
        let (tx, mut rx, done) = wake_queue::channel(3, Gauge::default());
        tx.wake_all(["a", "b", "c", "d"].map(|n| WorkloadKey::new("team-a", n)));
        let mut take = || {
            use futures::FutureExt;
            rx.next().now_or_never().flatten().map(|r| r.name)
        };
        assert_eq!(
            [take(), take(), take(), take()],
            [Some("a".into()), Some("b".into()), Some("c".into()), None]
        );
        let obj = |n: &str| ObjectRef::<Workload>::new(n).within("team-a");
        let erased = |n: &str| Box::new(obj(n).erase());
        let ends: [Ended; 4] = [
            Err(controller::Error::QueueError(Failed)),
            Ok((obj("a"), Action::await_change())),
            Err(controller::Error::ReconcilerFailed(Failed, erased("b"))),
            Err(controller::Error::ObjectNotFound(erased("c"))),
        ];
        let mut freed = Vec::new();
        for end in &ends {
            reconcile_ended(&done, end);
            freed.push(take());
        }
        assert_eq!(freed, [None, Some("d".into()), None, None]);
        // b's and c's hand-ons were freed too: two more go, the third waits for d.
        tx.wake_all(["e", "f", "g"].map(|n| WorkloadKey::new("team-a", n)));
        assert_eq!(
            [take(), take(), take()],
            [Some("e".into()), Some("f".into()), None]
        );
    }
}
