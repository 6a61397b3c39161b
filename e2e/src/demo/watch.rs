//! Watches Workloads on every cluster of the sandbox and reports each change, stamped with
//! the time it arrived, on one channel: the demo's single view of what happens where.

use std::time::Instant;

use baton_crds::workload::Workload;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a watch saw.
#[derive(Debug)]
pub enum Change {
    /// An object of the first list: the state before anything is observed.
    Baseline(Box<Workload>),
    /// The first list is complete.
    Synced,
    Applied(Box<Workload>),
    Deleted(String),
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
    /// One watch per `(cluster, api)`, all reporting on `tx`.
    pub fn start(apis: Vec<(String, Api<Workload>)>, tx: &mpsc::UnboundedSender<Report>) -> Self {
        let tasks = apis
            .into_iter()
            .map(|(cluster, api)| tokio::spawn(watch(cluster, api, tx.clone())))
            .collect();
        Watches { tasks }
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn watch(cluster: String, api: Api<Workload>, tx: mpsc::UnboundedSender<Report>) {
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // After a re-list (a broken watch), listed objects are changes like any other.
    let mut synced = false;
    while let Some(event) = events.next().await {
        let change = match event {
            Ok(watcher::Event::Init) => continue,
            Ok(watcher::Event::InitApply(wl)) if !synced => Change::Baseline(Box::new(wl)),
            Ok(watcher::Event::InitApply(wl) | watcher::Event::Apply(wl)) => {
                Change::Applied(Box::new(wl))
            }
            Ok(watcher::Event::InitDone) if !synced => {
                synced = true;
                Change::Synced
            }
            Ok(watcher::Event::InitDone) => continue,
            Ok(watcher::Event::Delete(wl)) => Change::Deleted(wl.name_any()),
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
