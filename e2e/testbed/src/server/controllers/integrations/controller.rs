//! The stand-ins' imperative shell: one background task per cluster that, after every change
//! to the kinds it follows (and when a timer it set falls due), runs Kubeflow Trainer's,
//! the JobSet controller's and KubeRay's decisions over the store, in that order, and writes
//! their outcome through `ops`, as their controllers would (so watchers see each write). A
//! kind whose CRD is not installed is skipped. Like the job controller model, it holds no
//! state of its own.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::{controlled_by, jobset, name_of, namespace_of, rayjob, trainjob, uid_of};
use crate::server::api::resource::ResourceType;
use crate::server::controllers::jobs::controller::Host;
use crate::server::kinds::managed::Operation;
use crate::server::kinds::ops::{self, DeleteOpts, WriteOpts};
use crate::server::storage::store::{Change, Store};

/// The tables whose changes the stand-ins react to.
const WATCHED: [&str; 7] = [
    "batch/jobs",
    "/pods",
    "jobset.x-k8s.io/jobsets",
    "trainer.kubeflow.org/trainjobs",
    "trainer.kubeflow.org/trainingruntimes",
    "trainer.kubeflow.org/clustertrainingruntimes",
    "ray.io/rayjobs",
];
const IDLE: Duration = Duration::from_secs(3600);

/// The field managers of the stand-ins' writes.
const JOBSET_MANAGER: &str = "jobset-controller-manager";
const TRAINER_MANAGER: &str = "trainer-controller-manager";
const KUBERAY_MANAGER: &str = "kuberay-operator";

/// Starts the stand-ins' task for `state`; it ends when the cluster is dropped.
pub fn spawn<H: Host>(state: &Arc<H>) -> JoinHandle<()> {
    let changes = state.store().subscribe();
    tokio::spawn(run(Arc::downgrade(state), changes))
}

async fn run<H: Host>(state: Weak<H>, mut changes: tokio::sync::broadcast::Receiver<Arc<Change>>) {
    loop {
        let Some(strong) = state.upgrade() else {
            return;
        };
        let wake = pass(&mut strong.store(), Timestamp::now());
        drop(strong);
        let sleep = wake
            .map(|t| {
                Duration::try_from(t.duration_since(Timestamp::now())).unwrap_or(Duration::ZERO)
            })
            .unwrap_or(IDLE);
        let timer = tokio::time::sleep(sleep);
        tokio::pin!(timer);
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(c) if WATCHED.contains(&&*c.table) => break,
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
                () = &mut timer => break,
            }
        }
    }
}

fn writer(manager: &str, status: bool) -> WriteOpts {
    WriteOpts {
        manager: manager.into(),
        sub: status.then(|| "status".to_string()),
        ..WriteOpts::default()
    }
}

fn values(store: &Store, rt: &ResourceType) -> Vec<Value> {
    store
        .list(&rt.table, None, None)
        .map(|s| s.value())
        .collect()
}

/// One pass of every stand-in at `now`. Returns when to look again.
pub fn pass(store: &mut Store, now: Timestamp) -> Option<Timestamp> {
    let rt = |store: &Store, group: &str, version: &str, plural: &str| {
        store.registry.get(group, version, plural)
    };
    let jobs = rt(store, "batch", "v1", "jobs");
    let pods = rt(store, "", "v1", "pods");
    let jobsets = rt(store, jobset::GROUP, jobset::VERSION, jobset::PLURAL);
    if let (Some(tj), Some(js)) = (
        rt(store, trainjob::GROUP, trainjob::VERSION, trainjob::PLURAL),
        &jobsets,
    ) {
        trainjobs(store, &tj, js, now);
    }
    if let (Some(js), Some(jobs)) = (&jobsets, &jobs) {
        jobsets_pass(store, js, jobs, now);
    }
    match (
        rt(store, rayjob::GROUP, rayjob::VERSION, rayjob::PLURAL),
        &pods,
    ) {
        (Some(rj), Some(pods)) => rayjobs(store, &rj, pods, now),
        _ => None,
    }
}

/// Objects of `children` by (namespace, controlling owner's uid).
fn by_owner(children: &[Value]) -> HashMap<(String, String), Vec<&Value>> {
    let mut out: HashMap<(String, String), Vec<&Value>> = HashMap::new();
    for child in children {
        for r in child["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let (true, Some(uid)) = (r["controller"] == true, r["uid"].as_str()) {
                out.entry((namespace_of(child).to_string(), uid.to_string()))
                    .or_default()
                    .push(child);
            }
        }
    }
    out
}

fn owned<'a>(index: &HashMap<(String, String), Vec<&'a Value>>, owner: &Value) -> Vec<&'a Value> {
    index
        .get(&(namespace_of(owner).to_string(), uid_of(owner).to_string()))
        .cloned()
        .unwrap_or_default()
}

fn create(store: &mut Store, rt: &Arc<ResourceType>, ns: &str, body: Value, manager: &str) {
    if let Err(e) = ops::create(
        store,
        rt,
        Some(ns),
        body,
        &writer(manager, false),
        Operation::Update,
    ) {
        tracing::debug!(kind = %rt.kind, error = %e, "stand-in: object not created");
    }
}

/// Reads `name` again (the uid must still be `uid`), changes it with `edit`, writes it back
/// (its status subresource when `status`).
fn modify(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    (ns, name, uid): (&str, &str, Option<&str>),
    manager: &str,
    status: bool,
    edit: impl FnOnce(&mut Value),
) {
    let Ok(mut current) = ops::get_view(store, rt, ns, name) else {
        return;
    };
    if uid.is_some_and(|u| uid_of(&current) != u) {
        return;
    }
    edit(&mut current);
    let opts = writer(manager, status);
    if let Err(e) = ops::update(store, rt, Some(ns), name, current, &opts, Operation::Update) {
        tracing::debug!(kind = %rt.kind, %name, error = %e, "stand-in: object not written");
    }
}

fn write_status(
    store: &mut Store,
    rt: &Arc<ResourceType>,
    owner: &Value,
    status: Value,
    manager: &str,
) {
    let key = (namespace_of(owner), name_of(owner), Some(uid_of(owner)));
    modify(store, rt, key, manager, true, |obj| obj["status"] = status);
}

fn trainjobs(
    store: &mut Store,
    tj_rt: &Arc<ResourceType>,
    js_rt: &Arc<ResourceType>,
    now: Timestamp,
) {
    let cluster_runtimes = store.registry.get(
        trainjob::GROUP,
        trainjob::VERSION,
        trainjob::CLUSTER_RUNTIMES,
    );
    let runtimes = store
        .registry
        .get(trainjob::GROUP, trainjob::VERSION, trainjob::RUNTIMES);
    let jobsets = values(store, js_rt);
    for tj in values(store, tj_rt) {
        let ns = namespace_of(&tj).to_string();
        let runtime = match trainjob::runtime_ref(&tj) {
            Some(trainjob::RuntimeRef::Cluster(n)) => cluster_runtimes
                .as_ref()
                .and_then(|rt| store.get(&rt.table, "", &n)),
            Some(trainjob::RuntimeRef::Namespaced(n)) => runtimes
                .as_ref()
                .and_then(|rt| store.get(&rt.table, &ns, &n)),
            None => None,
        }
        .map(|s| s.value());
        let js = jobsets
            .iter()
            .find(|j| namespace_of(j) == ns && controlled_by(j, uid_of(&tj)));
        let plan = trainjob::sync(&tj, runtime.as_ref(), js, now);
        match plan.jobset {
            trainjob::JobSetWrite::Nothing => {}
            trainjob::JobSetWrite::Create(body) => create(store, js_rt, &ns, body, TRAINER_MANAGER),
            trainjob::JobSetWrite::Update(desired) => {
                let key = (ns.as_str(), name_of(&desired), js.map(uid_of));
                modify(store, js_rt, key, TRAINER_MANAGER, false, |obj| {
                    obj["spec"]["suspend"] = desired["spec"]["suspend"].clone();
                    obj["spec"]["replicatedJobs"] = desired["spec"]["replicatedJobs"].clone();
                });
            }
        }
        if let Some(status) = plan.status {
            write_status(store, tj_rt, &tj, status, TRAINER_MANAGER);
        }
    }
}

fn jobsets_pass(
    store: &mut Store,
    js_rt: &Arc<ResourceType>,
    job_rt: &Arc<ResourceType>,
    now: Timestamp,
) {
    let jobs = values(store, job_rt);
    let index = by_owner(&jobs);
    for js in values(store, js_rt) {
        let children = owned(&index, &js);
        let plan = jobset::sync(&js, &children, now);
        let ns = namespace_of(&js).to_string();
        for body in plan.create {
            create(store, job_rt, &ns, body, JOBSET_MANAGER);
        }
        for write in plan.writes {
            match write {
                jobset::ChildWrite::Suspend(name) => {
                    modify(
                        store,
                        job_rt,
                        (&ns, &name, None),
                        JOBSET_MANAGER,
                        false,
                        |job| {
                            job["spec"]["suspend"] = true.into();
                        },
                    );
                }
                jobset::ChildWrite::ClearStartTime(name) => {
                    modify(
                        store,
                        job_rt,
                        (&ns, &name, None),
                        JOBSET_MANAGER,
                        true,
                        |job| {
                            if let Some(s) = job["status"].as_object_mut() {
                                s.remove("startTime");
                            }
                        },
                    );
                }
                jobset::ChildWrite::Resume(name, directives) => {
                    modify(
                        store,
                        job_rt,
                        (&ns, &name, None),
                        JOBSET_MANAGER,
                        false,
                        |job| {
                            directives.apply(job);
                            job["spec"]["suspend"] = false.into();
                        },
                    );
                }
            }
        }
        if let Some(status) = plan.status {
            write_status(store, js_rt, &js, status, JOBSET_MANAGER);
        }
    }
}

fn rayjobs(
    store: &mut Store,
    rj_rt: &Arc<ResourceType>,
    pod_rt: &Arc<ResourceType>,
    now: Timestamp,
) -> Option<Timestamp> {
    let pods = values(store, pod_rt);
    let index = by_owner(&pods);
    let mut wake: Option<Timestamp> = None;
    for rj in values(store, rj_rt) {
        let mine = owned(&index, &rj);
        let plan = rayjob::sync(&rj, &mine, now);
        let ns = namespace_of(&rj).to_string();
        for pod in &plan.delete {
            if let Err(e) = ops::delete(store, pod_rt, &ns, pod, &DeleteOpts::default()) {
                tracing::debug!(%pod, error = %e, "stand-in: pod not deleted");
            }
        }
        for body in plan.create {
            create(store, pod_rt, &ns, body, KUBERAY_MANAGER);
        }
        if let Some(status) = plan.status {
            write_status(store, rj_rt, &rj, status, KUBERAY_MANAGER);
        }
        wake = match (wake, plan.wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    wake
}
