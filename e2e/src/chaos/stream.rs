//! The workload stream: submits the plan's workloads on the manager when they are due,
//! deletes the ones the plan deletes, and marks a workload's winning replica Finished once
//! it has held quota for its run time (plain Workloads have no job to finish them). Every
//! call may fail (injected errors, outages): what failed is tried again on the next tick.

use std::sync::Arc;
use std::time::Duration;

use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::log::Event;
use super::plan::Arrival;
use super::recorder::Shared;

const TICK: Duration = Duration::from_millis(200);

/// Where the stream writes.
#[derive(Clone)]
pub struct Target {
    pub namespace: String,
    pub manager: Api<Workload>,
    /// `workers[i - 1]`: worker `i`'s Workloads.
    pub workers: Vec<Api<Workload>>,
    /// `cluster_names[i - 1]`: worker `i`'s MultiKueueCluster name.
    pub cluster_names: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct Progress {
    submitted: bool,
    deleted: bool,
    finished: bool,
}

/// The stream's state, shared with the soak so it can tell when the backlog is done.
pub struct Stream {
    arrivals: Vec<Arrival>,
    progress: std::sync::Mutex<Vec<Progress>>,
    /// After this, nothing more is submitted or deleted (faults are over; only finishing).
    pub draining: std::sync::atomic::AtomicBool,
}

impl Stream {
    pub fn new(arrivals: Vec<Arrival>) -> Arc<Self> {
        let progress = vec![Progress::default(); arrivals.len()];
        Arc::new(Self {
            arrivals,
            progress: std::sync::Mutex::new(progress),
            draining: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Submitted workloads neither deleted nor finished yet.
    pub fn outstanding(&self, shared: &Shared) -> usize {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        self.arrivals
            .iter()
            .zip(progress.iter())
            .filter(|(a, p)| {
                p.submitted
                    && !p.deleted
                    && !p.finished
                    && !shared.live(0, &a.name).is_some_and(|l| l.snapshot.finished)
            })
            .count()
    }

    fn progress(&self, i: usize) -> Progress {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())[i].clone()
    }

    fn update(&self, i: usize, change: impl FnOnce(&mut Progress)) {
        change(&mut self.progress.lock().unwrap_or_else(|e| e.into_inner())[i]);
    }

    /// Runs until the task is aborted.
    pub async fn run(self: Arc<Self>, shared: Arc<Shared>, target: Target) {
        loop {
            for i in 0..self.arrivals.len() {
                self.step(i, &shared, &target).await;
            }
            tokio::time::sleep(TICK).await;
        }
    }

    async fn step(&self, i: usize, shared: &Shared, target: &Target) {
        let arrival = &self.arrivals[i];
        let now = shared.now();
        let progress = self.progress(i);
        let draining = self.draining.load(std::sync::atomic::Ordering::Relaxed);
        if !progress.submitted {
            if arrival.at <= now && !draining && submit(target, arrival).await {
                self.update(i, |p| p.submitted = true);
                shared.push(Event::Submitted {
                    at: shared.now(),
                    name: arrival.name.clone(),
                    priority: arrival.priority,
                    cpus: arrival.cpus,
                });
            }
            return;
        }
        if progress.deleted || progress.finished {
            return;
        }
        let manager = shared.live(0, &arrival.name);
        if manager.as_ref().is_some_and(|m| m.snapshot.finished) {
            self.update(i, |p| p.finished = true);
            return;
        }
        if arrival.delete_at.is_some_and(|t| t <= now) && !draining {
            if delete(target, &arrival.name).await {
                self.update(i, |p| p.deleted = true);
                shared.push(Event::Deleted {
                    at: shared.now(),
                    name: arrival.name.clone(),
                });
            }
            return;
        }
        let Some(winner) = manager
            .filter(|m| m.snapshot.admitted)
            .and_then(|m| m.snapshot.cluster_name)
            .and_then(|c| target.cluster_names.iter().position(|n| *n == c))
            .map(|i| i + 1)
        else {
            return;
        };
        let Some(replica) = shared.live(winner, &arrival.name) else {
            return;
        };
        let Some(since) = replica.holding_since else {
            return;
        };
        if now.saturating_sub(since) < arrival.run {
            return;
        }
        let api = &target.workers[winner - 1];
        if finish(api, &arrival.name, &replica.snapshot.uid).await {
            self.update(i, |p| p.finished = true);
            shared.push(Event::Finished {
                at: shared.now(),
                name: arrival.name.clone(),
                worker: winner,
            });
        }
    }
}

/// Creates the manager Workload: `cpus` pods of one CPU. True once it exists.
async fn submit(target: &Target, arrival: &Arrival) -> bool {
    let doc = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": arrival.name, "namespace": target.namespace},
        "spec": {"queueName": "user-queue", "priority": arrival.priority, "podSets": [{"name": "main", "count": arrival.cpus, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    });
    let Ok(wl) = serde_json::from_value::<Workload>(doc) else {
        return false;
    };
    match target.manager.create(&PostParams::default(), &wl).await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) => s.reason == "AlreadyExists",
        Err(_) => false,
    }
}

/// Deletes the manager Workload. True once it is gone or going.
async fn delete(target: &Target, name: &str) -> bool {
    match target.manager.delete(name, &DeleteParams::default()).await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) => s.code == 404,
        Err(_) => false,
    }
}

/// Marks the replica `uid` Finished (its job succeeded), with resourceVersion concurrency.
async fn finish(api: &Api<Workload>, name: &str, uid: &str) -> bool {
    let Ok(Some(mut replica)) = api.get_opt(name).await else {
        return false;
    };
    if replica.metadata.uid.as_deref() != Some(uid) {
        return false;
    }
    let status = replica.status.get_or_insert_with(Default::default);
    set_condition(
        &mut status.conditions,
        NewCondition::new(
            condition::FINISHED,
            ConditionStatus::True,
            "Succeeded",
            "the job ran to completion (chaos stream)",
        ),
        chrono::Utc::now(),
    );
    api.replace_status(name, &PostParams::default(), &replica)
        .await
        .is_ok()
}
