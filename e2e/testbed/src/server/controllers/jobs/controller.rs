//! The model's imperative shell: one background task per cluster that, after every change
//! to Jobs or Pods (the store's change feed) and when a timer it set falls due, runs the
//! kubelet's and the job controller's decisions over the store and writes their outcome
//! through `ops`, as API clients would (so watchers see each write). It holds no state of
//! its own; everything it knows is in the store.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard, Weak};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::pod_template::{controlled_by, pod_for};
use super::{CONTROLLER_MANAGER, JobsSettings, KUBELET_MANAGER, events, job_sync, kubelet};
use crate::server::api::resource::ResourceType;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, DeleteOpts, WriteOpts};
use crate::server::storage::store::Store;

const JOBS_TABLE: &str = "batch/jobs";
const PODS_TABLE: &str = "/pods";
/// How long the task sleeps with nothing due (it wakes on every change anyway).
const IDLE: Duration = Duration::from_secs(3600);

/// What the task needs of a cluster (implemented by the server's cluster state).
pub trait Host: Send + Sync + 'static {
    fn store(&self) -> MutexGuard<'_, Store>;
    fn jobs(&self) -> &JobsSettings;
}

/// Starts the model's task for `state`; it ends when the cluster is dropped.
pub fn spawn<H: Host>(state: &Arc<H>) -> JoinHandle<()> {
    let changes = state.store().subscribe();
    tokio::spawn(run(Arc::downgrade(state), changes))
}

async fn run<H: Host>(
    state: Weak<H>,
    mut changes: tokio::sync::broadcast::Receiver<Arc<crate::server::storage::store::Change>>,
) {
    loop {
        let Some(strong) = state.upgrade() else {
            return;
        };
        let wake = pass(&*strong, Timestamp::now());
        drop(strong);
        let sleep = wake
            .map(|t| {
                let left = t.duration_since(Timestamp::now());
                Duration::try_from(left).unwrap_or(Duration::ZERO)
            })
            .unwrap_or(IDLE);
        let timer = tokio::time::sleep(sleep);
        tokio::pin!(timer);
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(c) if &*c.table == JOBS_TABLE || &*c.table == PODS_TABLE => break,
                    Ok(_) => {}
                    // Missed changes: look at everything again.
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
                () = &mut timer => break,
            }
        }
    }
}

fn rt(store: &Store, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
    store.registry.get(group, "v1", plural)
}

fn writer(manager: &str, status: bool) -> WriteOpts {
    WriteOpts {
        manager: manager.into(),
        sub: status.then(|| "status".to_string()),
        ..WriteOpts::default()
    }
}

fn values(store: &Store, table: &str) -> Vec<Value> {
    store.list(table, None, None).map(|s| s.value()).collect()
}

/// One pass of the kubelet, then the job controller, at `now`. Returns when to look again.
pub fn pass<H: Host>(state: &H, now: Timestamp) -> Option<Timestamp> {
    let cap = state.jobs().termination_grace_cap();
    let mut store = state.store();
    let (Some(job_rt), Some(pod_rt)) = (rt(&store, "batch", "jobs"), rt(&store, "", "pods")) else {
        return None;
    };
    let jobs = values(&store, JOBS_TABLE);
    let wake = run_kubelet(&mut store, &pod_rt, &jobs, cap, now);
    let pods: Vec<Pod> = values(&store, PODS_TABLE)
        .into_iter()
        .filter_map(|p| serde_json::from_value(p).ok())
        .collect();
    // Pods by (namespace, controlling Job's uid).
    let mut by_owner: HashMap<(&str, &str), Vec<&Pod>> = HashMap::new();
    for pod in &pods {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        for r in pod.metadata.owner_references.iter().flatten() {
            if controlled_by(pod, &r.uid) {
                by_owner.entry((ns, r.uid.as_str())).or_default().push(pod);
            }
        }
    }
    for value in &jobs {
        let Ok(job) = serde_json::from_value::<Job>(value.clone()) else {
            continue;
        };
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let ns = job.metadata.namespace.as_deref().unwrap_or("");
        let owned = by_owner.get(&(ns, uid)).cloned().unwrap_or_default();
        let plan = job_sync::sync(&job, &owned, now);
        apply(&mut store, &job_rt, &pod_rt, &job, plan, now);
    }
    wake
}

fn run_kubelet(
    store: &mut Store,
    pod_rt: &Arc<ResourceType>,
    jobs: &[Value],
    cap: Duration,
    now: Timestamp,
) -> Option<Timestamp> {
    let run_seconds: HashMap<&str, Option<u64>> = jobs
        .iter()
        .map(|j| {
            let uid = j["metadata"]["uid"].as_str().unwrap_or("");
            (uid, kubelet::run_seconds(&j["metadata"]["annotations"]))
        })
        .collect();
    let mut wake: Option<Timestamp> = None;
    for pod in values(store, PODS_TABLE) {
        let owner_uid = pod["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["controller"] == true && r["kind"] == "Job")
            .and_then(|r| r["uid"].as_str());
        let secs = owner_uid.and_then(|u| run_seconds.get(u).copied().flatten());
        let decision = kubelet::decide(&pod, secs, cap, now);
        wake = match (wake, decision.wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        match decision.step {
            Some(kubelet::Step::Status(status)) => {
                let mut updated = pod.clone();
                updated["status"] = serde_json::to_value(&*status).unwrap_or(Value::Null);
                let opts = writer(KUBELET_MANAGER, true);
                if let Err(e) = ops::update(
                    store,
                    pod_rt,
                    Some(&ns),
                    &name,
                    updated,
                    &opts,
                    Operation::Update,
                ) {
                    tracing::debug!(pod = %name, error = %e, "kubelet model: status not written");
                }
            }
            Some(kubelet::Step::Remove) => {
                let opts = DeleteOpts {
                    uid: pod["metadata"]["uid"].as_str().map(String::from),
                    grace_period_seconds: Some(0),
                    ..DeleteOpts::default()
                };
                if let Err(e) = ops::delete(store, pod_rt, &ns, &name, &opts) {
                    tracing::debug!(pod = %name, error = %e, "kubelet model: pod not removed");
                }
            }
            None => {}
        }
    }
    wake
}

fn apply(
    store: &mut Store,
    job_rt: &Arc<ResourceType>,
    pod_rt: &Arc<ResourceType>,
    job: &Job,
    plan: job_sync::Plan,
    now: Timestamp,
) {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let mut events: Vec<(&str, String)> = Vec::new();
    for pod in &plan.delete {
        match ops::delete(store, pod_rt, &ns, pod, &DeleteOpts::default()) {
            Ok(_) => events.push(("SuccessfulDelete", format!("Deleted pod: {pod}"))),
            Err(e) => {
                tracing::debug!(job = %name, pod = %pod, error = %e, "job controller model: pod not deleted");
            }
        }
    }
    let opts = writer(CONTROLLER_MANAGER, false);
    for _ in 0..plan.create {
        let Ok(body) = serde_json::to_value(pod_for(job)) else {
            continue;
        };
        match ops::create(store, pod_rt, Some(&ns), body, &opts, Operation::Update) {
            Ok(created) => {
                let pod = created.value["metadata"]["name"].as_str().unwrap_or("");
                events.push(("SuccessfulCreate", format!("Created pod: {pod}")));
            }
            Err(e) => {
                tracing::debug!(job = %name, error = %e, "job controller model: pod not created")
            }
        }
    }
    let opts = writer(CONTROLLER_MANAGER, true);
    for status in plan.statuses {
        // The latest stored Job (the previous write bumped its resourceVersion).
        let Ok(mut current) = ops::get_view(store, job_rt, &ns, &name) else {
            return;
        };
        if current["metadata"]["uid"].as_str() != job.metadata.uid.as_deref() {
            return;
        }
        current["status"] = serde_json::to_value(&status).unwrap_or(Value::Null);
        if let Err(e) = ops::update(
            store,
            job_rt,
            Some(&ns),
            &name,
            current,
            &opts,
            Operation::Update,
        ) {
            tracing::debug!(job = %name, error = %e, "job controller model: status not written");
        }
    }
    events.extend(plan.events.iter().map(|(r, m)| (*r, (*m).to_string())));
    record(store, job, &events, now);
}

/// Records the job controller's events about `job` (each named by a distinct instant).
fn record(store: &mut Store, job: &Job, events: &[(&str, String)], now: Timestamp) {
    let Some(event_rt) = rt(store, "", "events") else {
        return;
    };
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let opts = writer(events::COMPONENT, false);
    for (i, (reason, message)) in events.iter().enumerate() {
        let at = now + jiff::SignedDuration::from_nanos(i64::try_from(i).unwrap_or(0));
        let Ok(body) = serde_json::to_value(events::job_event(job, reason, message, at)) else {
            continue;
        };
        if let Err(e) = ops::create(store, &event_rt, Some(&ns), body, &opts, Operation::Update) {
            tracing::debug!(reason = %reason, error = %e, "job controller model: event not recorded");
        }
    }
}
