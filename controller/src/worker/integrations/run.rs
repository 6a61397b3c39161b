//! The worker's integration loop, one for every kind (an [`Integration`] says what differs):
//! its own task, woken by changes to its objects, Workloads and ResourceFlavors (the last two
//! shared with the scheduling loop's caches), batched like the scheduler. Each pass builds
//! the views, plans every object, and sends the writes, each guarded by the resourceVersion
//! (or uid) it was computed from; a conflict is simply planned again on a later pass.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_crds::{ResourceFlavor, Workload, WorkloadKey};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::DynamicObject;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::mpsc;

use super::Integration;
use super::plan::{JobEvent, Plan, Write};
use super::view::{Binding, View, busy_owners, orphans, views};
use crate::events::{Event, Events, Reporter};
use crate::integrations::Kind;
use crate::integrations::shape::RuntimeRef;
use crate::jobs::template::FlavorPlacement;
use crate::metrics::{ErrorLabel, Metrics};
use crate::shutdown::Shutdown;

/// Wait after a change for more changes to batch into one pass.
const BATCH_WINDOW: Duration = Duration::from_millis(5);
/// A full pass this often (orphan grace, anything a lost wake-up missed).
const RESYNC: Duration = Duration::from_secs(10);
/// A conflict is planned again after this (the newer object is on its way to the cache).
const RETRY_AFTER_CONFLICT: Duration = Duration::from_millis(200);
/// Other failed writes are tried again after this.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(2);
const WRITE_CONCURRENCY: usize = 16;
/// How long the cache may lag a write before the object is planned again anyway.
const STALE_FOR: Duration = Duration::from_secs(5);

/// The caches the loop reads.
pub struct Caches<O: Resource<DynamicType: Hash + Eq + Clone> + Clone + 'static> {
    /// The objects, one cache per kind.
    pub objects: Vec<(Kind, Store<O>)>,
    /// batch/v1 Jobs whose pods hold their owner's quota (a JobSet's children), if any.
    pub children: Option<Store<Job>>,
    pub workloads: Store<Workload>,
    pub flavors: Store<ResourceFlavor>,
}

/// A cache of `kind`'s dynamic objects; its changes tick `wake`. A kind the worker may not
/// read is retried with the watcher's backoff (the rest run on).
pub fn cache(
    client: &Client,
    kind: &Kind,
    wake: mpsc::UnboundedSender<()>,
) -> Store<DynamicObject> {
    use kube::runtime::WatchStreamExt;
    let resource = kind.api_resource();
    let writer = kube::runtime::reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let reader = writer.as_reader();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|o: &mut DynamicObject| o.metadata.managed_fields = None)
        .reflect(writer);
    let kind = kind.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => {
                    let _ = wake.send(());
                }
                Err(e) => tracing::debug!(%kind, error = %e, "watch failed"),
            }
        }
    });
    reader
}

struct Shell<I: Integration> {
    client: Client,
    recorder: Events,
    metrics: Arc<Metrics>,
    caches: Caches<I::Object>,
    wake: mpsc::UnboundedSender<()>,
}

/// What the loop remembers between passes.
#[derive(Default)]
struct LoopState {
    /// Objects written, by kind and key, with the resourceVersion the write replaced
    /// (`None`: created), and when. While the cache still shows that version the object is
    /// not planned again, for at most [`STALE_FOR`] (a write that changed nothing leaves
    /// the version as it was).
    written: HashMap<Target, (Option<String>, Instant)>,
    /// Problems already published (object uid, reason, message): each goes out once.
    reported: HashSet<(String, &'static str, String)>,
}

/// A write, its kind, the object it is for (events go on it) and the event once it lands.
struct Step<O> {
    kind: Kind,
    object: Option<Arc<O>>,
    write: Write<O>,
    event: Option<JobEvent>,
}

/// Runs the loop of integration `I` until `shutdown`, once its caches are synced. `woken`
/// ticks on changes to the caches.
pub async fn run<I: Integration>(
    client: Client,
    caches: Caches<I::Object>,
    wake: mpsc::UnboundedSender<()>,
    mut woken: mpsc::UnboundedReceiver<()>,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) {
    if caches.objects.is_empty() {
        return;
    }
    let stop = shutdown.requested();
    tokio::pin!(stop);
    // A kind is optional: without permission to list it the scheduler runs on, and the
    // watch logs why this loop never starts.
    tokio::select! {
        _ = all_synced(&caches.objects) => {}
        _ = &mut stop => return,
    }
    let kinds: Vec<String> = caches.objects.iter().map(|(k, _)| k.to_string()).collect();
    tracing::info!(kinds = %kinds.join(","), "caches synced; reconciling");
    let recorder = Events::start(
        client.clone(),
        Reporter {
            controller: "baton-worker".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
        metrics.events_dropped.clone(),
    );
    let shell = Shell::<I> {
        client,
        recorder,
        metrics,
        caches,
        wake,
    };
    let mut state = LoopState::default();
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            woke = woken.recv() => if woke.is_none() { break },
            _ = resync.tick() => {}
            _ = &mut stop => break,
        }
        tokio::time::sleep(BATCH_WINDOW).await;
        while woken.try_recv().is_ok() {}
        pass(&shell, &mut state).await;
    }
}

async fn all_synced<O>(stores: &[(Kind, Store<O>)])
where
    O: Resource + Clone + 'static,
    O::DynamicType: Hash + Eq + Clone,
{
    for (_, store) in stores {
        while let Err(_elapsed) =
            tokio::time::timeout(Duration::from_millis(200), store.wait_until_ready()).await
        {
        }
    }
}

/// An object's kind, namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ObjectKey {
    kind: Kind,
    namespace: String,
    name: String,
}

impl ObjectKey {
    fn of<O: Resource>(kind: &Kind, obj: &O) -> Self {
        ObjectKey {
            kind: kind.clone(),
            namespace: obj.namespace().unwrap_or_default(),
            name: obj.name_any(),
        }
    }
}

/// An object the loop writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Target {
    Object(ObjectKey),
    Workload(WorkloadKey),
}

/// `Kind/namespace/name`, for logs.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Object(k) => write!(f, "{}/{}/{}", k.kind.gvk().kind, k.namespace, k.name),
            Target::Workload(key) => write!(f, "Workload/{key}"),
        }
    }
}

/// The loop's picture of the cluster for one pass.
struct Snapshot<O> {
    objects: Vec<(Kind, Vec<Arc<O>>)>,
    workloads: Vec<Arc<Workload>>,
    flavors: HashMap<String, FlavorPlacement>,
    /// Owners whose child Jobs' pods still run.
    busy: HashSet<String>,
}

fn snapshot<I: Integration>(caches: &Caches<I::Object>) -> Snapshot<I::Object> {
    let objects: Vec<(Kind, Vec<Arc<I::Object>>)> = caches
        .objects
        .iter()
        .map(|(kind, store)| (kind.clone(), store.state()))
        .collect();
    let mut busy = caches
        .children
        .as_ref()
        .map(|jobs| busy_owners(&jobs.state()))
        .unwrap_or_default();
    // One level up: a TrainJob's JobSet is busy while its Jobs are.
    if !busy.is_empty() {
        let up: Vec<String> = objects
            .iter()
            .flat_map(|(_, all)| all.iter())
            .filter(|o| o.meta().uid.as_ref().is_some_and(|u| busy.contains(u)))
            .flat_map(|o| o.owner_references().iter())
            .filter(|o| o.controller == Some(true))
            .map(|o| o.uid.clone())
            .collect();
        busy.extend(up);
    }
    let flavors = caches
        .flavors
        .state()
        .iter()
        .map(|f| (f.name_any(), FlavorPlacement::from(f.as_ref())))
        .collect();
    Snapshot {
        objects,
        workloads: caches.workloads.state(),
        flavors,
        busy,
    }
}

async fn pass<I: Integration>(shell: &Shell<I>, state: &mut LoopState) {
    let now = Utc::now();
    let snap = snapshot::<I>(&shell.caches);
    let mut steps = Vec::new();
    let mut problems = Vec::new();
    let mut still_stale = HashSet::new();
    for (kind, objects) in &snap.objects {
        let mut views = views::<I>(kind, objects, &snap.workloads, &snap.flavors, &snap.busy);
        attach_runtimes::<I>(&shell.client, kind, &mut views).await;
        plan_objects::<I>(
            state,
            &mut still_stale,
            views,
            now,
            &mut steps,
            &mut problems,
        );
        if I::REMOVES_ORPHANS {
            for wl in orphans(kind, objects, &snap.workloads, now) {
                steps.push(Step {
                    kind: kind.clone(),
                    object: None,
                    write: Write::DeleteWorkload(Box::new((*wl).clone())),
                    event: None,
                });
            }
        }
    }
    state.written.retain(|k, _| still_stale.contains(k));
    let present: HashSet<&str> = snap
        .objects
        .iter()
        .flat_map(|(_, all)| all.iter())
        .filter_map(|o| o.meta().uid.as_deref())
        .collect();
    state
        .reported
        .retain(|(uid, _, _)| present.contains(uid.as_str()));
    report_problems(shell, state, problems);
    execute(shell, state, steps).await;
}

/// Reads the runtime each object without a Workload names ([`Integration::runtime`]: a
/// TrainJob's training runtime), once per runtime and pass. One missing stays `None`, and the
/// plan reports that; one that cannot be read is logged and retried on the next pass.
async fn attach_runtimes<I: Integration>(
    client: &Client,
    kind: &Kind,
    views: &mut [View<'_, I::Object>],
) {
    let mut read: HashMap<RuntimeRef, Option<Arc<serde_json::Value>>> = HashMap::new();
    for view in views
        .iter_mut()
        .filter(|v| matches!(v.binding, Binding::Unbound))
    {
        let Some(runtime) = I::runtime(kind, view.object) else {
            continue;
        };
        if !read.contains_key(&runtime) {
            let found = read_runtime(client, &runtime).await;
            read.insert(runtime.clone(), found);
        }
        view.runtime = read.get(&runtime).cloned().flatten();
    }
}

/// The runtime `r` names, `None` when it does not exist or cannot be read (logged).
async fn read_runtime(client: &Client, r: &RuntimeRef) -> Option<Arc<serde_json::Value>> {
    let resource = r.api_resource();
    let api: Api<DynamicObject> = match &r.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    match api.get_opt(&r.name).await {
        Ok(found) => found.map(|o| Arc::new(o.data)),
        Err(e) => {
            tracing::warn!(kind = %r.kind, name = %r.name, error = %e, "cannot read the runtime");
            None
        }
    }
}

/// A problem to report (an event that comes with no write): the object's kind, the object.
type Problem<O> = (Kind, Arc<O>, JobEvent);

/// Plans every object of one kind, skipping those whose object or Workload the cache still
/// shows as it was before our last write to it (for at most [`STALE_FOR`]); the keys still
/// stale go into `still_stale`. Adds the writes to `steps`, the problems to `problems`.
fn plan_objects<I: Integration>(
    state: &LoopState,
    still_stale: &mut HashSet<Target>,
    views: Vec<View<'_, I::Object>>,
    now: DateTime<Utc>,
    steps: &mut Vec<Step<I::Object>>,
    problems: &mut Vec<Problem<I::Object>>,
) {
    let mut is_stale = |k: Target, version: Option<String>| {
        let stale = state
            .written
            .get(&k)
            .is_some_and(|(v, at)| *v == version && at.elapsed() < STALE_FOR);
        if stale {
            still_stale.insert(k);
        }
        stale
    };
    for view in views {
        let object = view.object;
        let key = Target::Object(ObjectKey::of(view.kind, object.as_ref()));
        if is_stale(key, object.resource_version()) {
            continue;
        }
        let (bound, version) = bound_workload(&view);
        if is_stale(Target::Workload(bound), version) {
            continue;
        }
        let Plan { write, event } = I::plan(&view, now);
        match (write, event) {
            (Some(write), event) => steps.push(Step {
                kind: view.kind.clone(),
                object: Some(object.clone()),
                write,
                event,
            }),
            (None, Some(event)) => problems.push((view.kind.clone(), object.clone(), event)),
            (None, None) => {}
        }
    }
}

/// The Workload an object is bound to, or is to be: its key, and its resourceVersion when it
/// exists.
fn bound_workload<O: Resource>(view: &View<'_, O>) -> (WorkloadKey, Option<String>) {
    let namespace = view.object.namespace().unwrap_or_default();
    match view.binding {
        Binding::Bound(w) | Binding::PrebuiltUnowned(w) | Binding::PrebuiltTaken(w) => {
            (WorkloadKey::of(w), w.resource_version())
        }
        Binding::Unbound => {
            let meta = view.object.meta();
            let name = crate::integrations::workload::workload_name_for(
                view.kind,
                meta.name.as_deref().unwrap_or(""),
                meta.uid.as_deref().unwrap_or(""),
            );
            (WorkloadKey::new(&namespace, &name), None)
        }
        Binding::PrebuiltMissing(name) => (WorkloadKey::new(&namespace, name), None),
    }
}

/// Publishes each problem once per object, reason and message, with a warning in the log.
fn report_problems<I: Integration>(
    shell: &Shell<I>,
    state: &mut LoopState,
    problems: Vec<Problem<I::Object>>,
) {
    for (kind, object, event) in problems {
        let id = (
            object.meta().uid.clone().unwrap_or_default(),
            event.reason,
            event.message.clone(),
        );
        if state.reported.insert(id) {
            let what = Target::Object(ObjectKey::of(&kind, object.as_ref()));
            tracing::warn!(object = %what, reason = event.reason, "{}", event.message);
            publish::<I>(shell, &kind, &object, event);
        }
    }
}

async fn execute<I: Integration>(
    shell: &Shell<I>,
    state: &mut LoopState,
    steps: Vec<Step<I::Object>>,
) {
    let results: Vec<(Option<Written>, Result<(), kube::Error>)> =
        futures::stream::iter(steps.into_iter().map(|step| async move {
            let target = written_key(&step.kind, &step.write);
            let result = send::<I>(&shell.client, &step.kind, &step.write).await;
            if result.is_ok()
                && let (Some(object), Some(event)) = (step.object, step.event)
            {
                publish::<I>(shell, &step.kind, &object, event);
            }
            (target, result)
        }))
        .buffer_unordered(WRITE_CONCURRENCY)
        .collect()
        .await;
    for (target, result) in results {
        let what = target
            .as_ref()
            .map(|(k, _)| k.to_string())
            .unwrap_or_default();
        match result {
            Ok(()) => {
                if let Some((k, version)) = target {
                    state.written.insert(k, (version, Instant::now()));
                }
            }
            // Someone wrote first (or the cache lagged our own create): plan again soon.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tracing::debug!(object = %what, "conflict; planning again");
                wake_after(&shell.wake, RETRY_AFTER_CONFLICT);
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                tracing::debug!(object = %what, "gone before the write");
            }
            Err(e) => {
                tracing::warn!(object = %what, error = %e, "integration write failed; retrying in {}s", RETRY_AFTER_ERROR.as_secs());
                shell
                    .metrics
                    .reconcile_errors
                    .get_or_create(&ErrorLabel {
                        reason: I::WRITE_FAILED.into(),
                    })
                    .inc();
                wake_after(&shell.wake, RETRY_AFTER_ERROR);
            }
        }
    }
}

fn wake_after(wake: &mpsc::UnboundedSender<()>, delay: Duration) {
    let wake = wake.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = wake.send(());
    });
}

/// The object a write changes and the resourceVersion it replaced (`None`: created).
type Written = (Target, Option<String>);

/// What `write` changes, for [`LoopState::written`]; `None` for deletions.
fn written_key<O: Resource>(kind: &Kind, write: &Write<O>) -> Option<Written> {
    match write {
        Write::CreateWorkload(wl) => Some((Target::Workload(WorkloadKey::of(wl)), None)),
        Write::AdoptWorkload(wl) | Write::WorkloadStatus { workload: wl, .. } => {
            Some((Target::Workload(WorkloadKey::of(wl)), wl.resource_version()))
        }
        Write::UpdateObject(obj) | Write::ClearStartTime(obj) => Some((
            Target::Object(ObjectKey::of(kind, obj.as_ref())),
            obj.resource_version(),
        )),
        Write::DeleteWorkload(_) => None,
    }
}

fn workloads(client: &Client, wl: &Workload) -> Api<Workload> {
    Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default())
}

async fn send<I: Integration>(
    client: &Client,
    kind: &Kind,
    write: &Write<I::Object>,
) -> Result<(), kube::Error> {
    let objects =
        |obj: &I::Object| I::api(client.clone(), &obj.namespace().unwrap_or_default(), kind);
    match write {
        Write::CreateWorkload(wl) => workloads(client, wl)
            .create(&PostParams::default(), wl)
            .await
            .map(drop),
        Write::AdoptWorkload(wl) => {
            let patch = serde_json::json!({"metadata": {
                "resourceVersion": wl.resource_version(),
                "ownerReferences": wl.metadata.owner_references,
            }});
            workloads(client, wl)
                .patch(
                    &wl.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map(drop)
        }
        Write::UpdateObject(obj) => objects(obj)
            .replace(&obj.name_any(), &PostParams::default(), obj)
            .await
            .map(drop),
        Write::ClearStartTime(obj) => {
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": obj.resource_version()},
                "status": {"startTime": null},
            });
            objects(obj)
                .patch_status(
                    &obj.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map(drop)
        }
        Write::WorkloadStatus { workload, status } => {
            crate::admission::scheduler::write_status(client, workload, status)
                .await
                .map(drop)
        }
        Write::DeleteWorkload(wl) => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: wl.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            tracing::info!(workload = %WorkloadKey::of(wl), %kind, "deleting a Workload whose object is gone");
            workloads(client, wl)
                .delete(&wl.name_any(), &params)
                .await
                .map(drop)
        }
    }
}

/// Publishes an event on the object in the background: events never hold up a write.
fn publish<I: Integration>(shell: &Shell<I>, kind: &Kind, obj: &I::Object, event: JobEvent) {
    let event = Event {
        type_: event.type_,
        reason: event.reason.to_string(),
        note: Some(event.message),
        action: event.reason.to_string(),
        secondary: None,
    };
    shell
        .recorder
        .publish(event, obj.object_ref(&I::resource(kind)));
}
