//! The Job reconcile loop: its own task, woken by changes to Jobs, Workloads and
//! ResourceFlavors (the last two shared with the scheduling loop's caches), batched like the
//! scheduler. Each pass builds the views, plans every Job, and sends the writes, each
//! guarded by the resourceVersion (or uid) it was computed from; a conflict is simply
//! planned again on a later pass.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::events::{Event, Events, Reporter};
use baton_crds::{ResourceFlavor, Workload, WorkloadKey};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::reflector::Store;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::mpsc;

use super::plan::{JobEvent, JobWrite, Plan, plan};
use super::view::{Binding, JobView, orphans, views};
use crate::jobs::{FlavorPlacement, workload_name};
use crate::metrics::{ErrorLabel, Metrics};
use crate::shutdown::Shutdown;
use crate::watch::synced;

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
pub struct JobCaches {
    pub jobs: Store<Job>,
    pub workloads: Store<Workload>,
    pub flavors: Store<ResourceFlavor>,
}

struct Shell {
    client: Client,
    recorder: Events,
    metrics: Arc<Metrics>,
    caches: JobCaches,
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
    /// Problems already published (Job uid, reason, message): each goes out once.
    reported: HashSet<(String, &'static str, String)>,
}

/// A write, the Job it is for (events go on it) and the event once it lands.
type Step = (Option<Arc<Job>>, JobWrite, Option<JobEvent>);

/// Runs the Job loop until `shutdown`. `woken` ticks on changes to the caches.
pub async fn run(
    client: Client,
    caches: JobCaches,
    wake: mpsc::UnboundedSender<()>,
    mut woken: mpsc::UnboundedReceiver<()>,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) {
    let stop = shutdown.requested();
    tokio::pin!(stop);
    // Jobs are optional: without permission to list them the scheduler runs on, and the
    // watch logs why this loop never starts.
    tokio::select! {
        _ = synced(&caches.jobs) => {}
        _ = &mut stop => return,
    }
    tracing::info!("Job cache synced; reconciling Jobs");
    let recorder = Events::start(
        client.clone(),
        Reporter {
            controller: "baton-worker".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
        metrics.events_dropped.clone(),
    );
    let shell = Shell {
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

/// A Job's namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct JobKey {
    namespace: String,
    name: String,
}

impl JobKey {
    fn of(job: &Job) -> Self {
        JobKey {
            namespace: job.namespace().unwrap_or_default(),
            name: job.name_any(),
        }
    }
}

/// `namespace/name`.
impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An object the loop writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Target {
    Job(JobKey),
    Workload(WorkloadKey),
}

/// `Kind/namespace/name`, for logs.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Job(key) => write!(f, "Job/{key}"),
            Target::Workload(key) => write!(f, "Workload/{key}"),
        }
    }
}

async fn pass(shell: &Shell, state: &mut LoopState) {
    let now = Utc::now();
    let jobs = shell.caches.jobs.state();
    let workloads = shell.caches.workloads.state();
    let flavors: HashMap<String, FlavorPlacement> = shell
        .caches
        .flavors
        .state()
        .iter()
        .map(|f| (f.name_any(), FlavorPlacement::from(f.as_ref())))
        .collect();
    let by_uid: HashMap<&str, &Arc<Job>> = jobs
        .iter()
        .filter_map(|j| j.metadata.uid.as_deref().map(|u| (u, j)))
        .collect();
    let (mut writes, problems) = plan_jobs(state, views(&jobs, &workloads, &flavors), &by_uid, now);
    for wl in orphans(&jobs, &workloads, now) {
        writes.push((
            None,
            JobWrite::DeleteWorkload(Box::new((*wl).clone())),
            None,
        ));
    }
    report_problems(shell, state, &by_uid, problems);
    execute(shell, state, writes).await;
}

/// A Job's event that comes with no write (a problem to report).
type Problem = (Arc<Job>, JobEvent);

/// Plans every Job, skipping those whose Job or Workload the cache still shows as it was
/// before our last write to it (for at most [`STALE_FOR`]); forgets the writes the cache has
/// caught up with. Returns the writes, and the problems to report.
fn plan_jobs(
    state: &mut LoopState,
    views: Vec<JobView<'_>>,
    by_uid: &HashMap<&str, &Arc<Job>>,
    now: DateTime<Utc>,
) -> (Vec<Step>, Vec<Problem>) {
    let mut still_stale = HashSet::new();
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
    let mut writes: Vec<Step> = Vec::new();
    let mut problems = Vec::new();
    for view in views {
        let job = view.job;
        if is_stale(Target::Job(JobKey::of(job)), job.resource_version()) {
            continue;
        }
        let (bound, version) = bound_workload(&view);
        if is_stale(Target::Workload(bound), version) {
            continue;
        }
        let Plan { write, event } = plan(&view, now);
        let owner = job
            .metadata
            .uid
            .as_deref()
            .and_then(|u| by_uid.get(u))
            .map(|j| (*j).clone());
        match write {
            Some(write) => writes.push((owner, write, event)),
            None => {
                if let (Some(event), Some(job)) = (event, owner) {
                    problems.push((job, event));
                }
            }
        }
    }
    state.written.retain(|k, _| still_stale.contains(k));
    (writes, problems)
}

/// The Workload a Job is bound to, or is to be: its key, and its resourceVersion when it
/// exists.
fn bound_workload(view: &JobView<'_>) -> (WorkloadKey, Option<String>) {
    let job = view.job;
    let namespace = job.namespace().unwrap_or_default();
    match view.binding {
        Binding::Bound(w) | Binding::PrebuiltUnowned(w) | Binding::PrebuiltTaken(w) => {
            (WorkloadKey::of(w), w.resource_version())
        }
        Binding::Unbound => (WorkloadKey::new(&namespace, &workload_name(job)), None),
        Binding::PrebuiltMissing(name) => (WorkloadKey::new(&namespace, name), None),
    }
}

/// Publishes each problem once per Job, reason and message (forgetting those of Jobs that
/// are gone), with a warning in the log.
fn report_problems(
    shell: &Shell,
    state: &mut LoopState,
    by_uid: &HashMap<&str, &Arc<Job>>,
    problems: Vec<Problem>,
) {
    state
        .reported
        .retain(|(uid, _, _)| by_uid.contains_key(uid.as_str()));
    for (job, event) in problems {
        let id = (
            job.metadata.uid.clone().unwrap_or_default(),
            event.reason,
            event.message.clone(),
        );
        if state.reported.insert(id) {
            tracing::warn!(job = %JobKey::of(&job), reason = event.reason, "{}", event.message);
            publish(shell, &job, event);
        }
    }
}

async fn execute(shell: &Shell, state: &mut LoopState, writes: Vec<Step>) {
    let results: Vec<(Option<Written>, Result<(), kube::Error>)> =
        futures::stream::iter(writes.into_iter().map(|(job, write, event)| async move {
            let target = written_key(&write);
            let result = send(&shell.client, &write).await;
            if result.is_ok()
                && let (Some(job), Some(event)) = (job, event)
            {
                publish(shell, &job, event);
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
                wake_after(shell, RETRY_AFTER_CONFLICT);
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                tracing::debug!(object = %what, "gone before the write");
            }
            Err(e) => {
                tracing::warn!(object = %what, error = %e, "Job reconcile write failed; retrying in {}s", RETRY_AFTER_ERROR.as_secs());
                shell
                    .metrics
                    .reconcile_errors
                    .get_or_create(&ErrorLabel {
                        reason: "JobWrite".into(),
                    })
                    .inc();
                wake_after(shell, RETRY_AFTER_ERROR);
            }
        }
    }
}

fn wake_after(shell: &Shell, delay: Duration) {
    let wake = shell.wake.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = wake.send(());
    });
}

/// The object a write changes and the resourceVersion it replaced (`None`: created).
type Written = (Target, Option<String>);

/// What `write` changes, for [`LoopState::written`]; `None` for deletions.
fn written_key(write: &JobWrite) -> Option<Written> {
    match write {
        JobWrite::CreateWorkload(wl) => Some((Target::Workload(WorkloadKey::of(wl)), None)),
        JobWrite::AdoptWorkload(wl) | JobWrite::WorkloadStatus { workload: wl, .. } => {
            Some((Target::Workload(WorkloadKey::of(wl)), wl.resource_version()))
        }
        JobWrite::UpdateJob(job) | JobWrite::ClearStartTime(job) => {
            Some((Target::Job(JobKey::of(job)), job.resource_version()))
        }
        JobWrite::DeleteWorkload(_) => None,
    }
}

async fn send(client: &Client, write: &JobWrite) -> Result<(), kube::Error> {
    match write {
        JobWrite::CreateWorkload(wl) => {
            let api: Api<Workload> =
                Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
            api.create(&PostParams::default(), wl).await.map(drop)
        }
        JobWrite::AdoptWorkload(wl) => {
            let api: Api<Workload> =
                Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
            let patch = serde_json::json!({"metadata": {
                "resourceVersion": wl.resource_version(),
                "ownerReferences": wl.metadata.owner_references,
            }});
            api.patch(
                &wl.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(drop)
        }
        JobWrite::UpdateJob(job) => {
            let api: Api<Job> =
                Api::namespaced(client.clone(), &job.namespace().unwrap_or_default());
            api.replace(&job.name_any(), &PostParams::default(), job)
                .await
                .map(drop)
        }
        JobWrite::ClearStartTime(job) => {
            let api: Api<Job> =
                Api::namespaced(client.clone(), &job.namespace().unwrap_or_default());
            let patch = serde_json::json!({
                "metadata": {"resourceVersion": job.resource_version()},
                "status": {"startTime": null},
            });
            api.patch_status(
                &job.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(drop)
        }
        JobWrite::WorkloadStatus { workload, status } => {
            crate::admission::scheduler::write_status(client, workload, status)
                .await
                .map(drop)
        }
        JobWrite::DeleteWorkload(wl) => {
            let api: Api<Workload> =
                Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: wl.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            tracing::info!(workload = %WorkloadKey::of(wl), "deleting a Workload whose Job is gone");
            api.delete(&wl.name_any(), &params).await.map(drop)
        }
    }
}

/// Publishes an event on the Job in the background: events never hold up a write.
fn publish(shell: &Shell, job: &Job, event: JobEvent) {
    let event = Event {
        type_: event.type_,
        reason: event.reason.to_string(),
        note: Some(event.message),
        action: event.reason.to_string(),
        secondary: None,
    };
    shell.recorder.publish(event, job.object_ref(&()));
}
