//! Watches Workloads and Jobs (or the objects of the demo's other kind) on every cluster of the sandbox and reports each change,
//! stamped with the time it arrived, on one channel: the demo's single view of what happens
//! where.

use std::time::Instant;

use baton_crds::workload::Workload;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// An object the demo follows.
#[derive(Debug)]
pub enum Object {
    Workload(Box<Workload>),
    Job(Box<Job>),
    /// An object of the demo's kind other than Job (`super::kinds`).
    Custom(Box<DynamicObject>),
}

/// The kinds the demo follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Workload,
    Job,
    Custom,
}

/// What a watch saw.
#[derive(Debug)]
pub enum Change {
    /// An object of the first list: the state before anything is observed.
    Baseline(Object),
    /// The first list of one watch is complete.
    Synced,
    Applied(Object),
    Deleted(Kind, String),
}

/// One change on one cluster.
#[derive(Debug)]
pub struct Report {
    pub cluster: String,
    pub at: Instant,
    pub change: Change,
}

/// The running watches; stopped when dropped.
pub struct Watches {
    tasks: Vec<JoinHandle<()>>,
}

impl Watches {
    /// Watches Workloads and Jobs (the objects of `custom` instead, when given) in
    /// `namespace` of every `(cluster, client)`, all reporting on `tx`: two watches per
    /// cluster, so `2 × clusters` [`Change::Synced`] reports.
    pub fn start(
        clusters: Vec<(String, Client)>,
        namespace: &str,
        custom: Option<&ApiResource>,
        tx: &mpsc::UnboundedSender<Report>,
    ) -> Self {
        let mut tasks = Vec::new();
        for (cluster, client) in clusters {
            let workloads: Api<Workload> = Api::namespaced(client.clone(), namespace);
            if let Some(ar) = custom {
                tasks.push(tokio::spawn(watch(
                    cluster.clone(),
                    workloads,
                    Kind::Workload,
                    |w| Object::Workload(Box::new(w)),
                    tx.clone(),
                )));
                let objects: Api<DynamicObject> = Api::namespaced_with(client, namespace, ar);
                tasks.push(tokio::spawn(watch(
                    cluster,
                    objects,
                    Kind::Custom,
                    |o| Object::Custom(Box::new(o)),
                    tx.clone(),
                )));
                continue;
            }
            let jobs: Api<Job> = Api::namespaced(client, namespace);
            tasks.push(tokio::spawn(watch(
                cluster.clone(),
                workloads,
                Kind::Workload,
                |w| Object::Workload(Box::new(w)),
                tx.clone(),
            )));
            tasks.push(tokio::spawn(watch(
                cluster,
                jobs,
                Kind::Job,
                |j| Object::Job(Box::new(j)),
                tx.clone(),
            )));
        }
        Watches { tasks }
    }

    /// How many watches run (each reports [`Change::Synced`] once).
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn watch<K>(
    cluster: String,
    api: Api<K>,
    kind: Kind,
    wrap: fn(K) -> Object,
    tx: mpsc::UnboundedSender<Report>,
) where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // After a re-list (a broken watch), listed objects are changes like any other.
    let mut synced = false;
    while let Some(event) = events.next().await {
        let change = match event {
            Ok(watcher::Event::Init) => continue,
            Ok(watcher::Event::InitApply(o)) if !synced => Change::Baseline(wrap(o)),
            Ok(watcher::Event::InitApply(o) | watcher::Event::Apply(o)) => Change::Applied(wrap(o)),
            Ok(watcher::Event::InitDone) if !synced => {
                synced = true;
                Change::Synced
            }
            Ok(watcher::Event::InitDone) => continue,
            Ok(watcher::Event::Delete(o)) => Change::Deleted(kind, o.name_any()),
            Err(e) => {
                tracing::debug!(%cluster, error = %e, "demo watch interrupted; retrying");
                continue;
            }
        };
        let report = Report {
            cluster: cluster.clone(),
            at: Instant::now(),
            change,
        };
        if tx.send(report).is_err() {
            return;
        }
    }
}
