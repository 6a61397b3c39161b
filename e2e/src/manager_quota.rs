//! Harness of the manager-quota suite (issue 13, `tests/manager_quota.rs`): manager
//! ClusterQueues of a chosen size fed by their own LocalQueues, watches that record every
//! Workload change on every cluster (so "never dispatched", "never above quota" and
//! short-lived states are checked on the whole history), predicates on manager Workloads in
//! Kueue's terms, and waits that fail with what each cluster holds and the processes' logs.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::{condition, reason};
use baton_crds::workload::{CheckState, Workload, WorkloadStatus};
use baton_crds::{ClusterQueue, LocalQueue};
use chrono::Utc;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::harness::eventually;
use crate::harness::process::BatonProcess;
use crate::multikueue::Env;
use crate::workers::merge;

/// How long a suite step may take.
pub const WAIT: Duration = Duration::from_secs(30);
/// The manager's timeouts, short for tests.
pub const FAST: &str =
    "singleClusterPreemptionTimeout: 2s\nworkerLostTimeout: 3s\ngcInterval: 1s\n";
/// Worker clusters in every environment of the suite.
pub const WORKERS: usize = 2;
/// Log lines of each process a failure shows (`BATON_TEST_LOG_LINES` overrides).
fn diagnostic_lines() -> usize {
    std::env::var("BATON_TEST_LOG_LINES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(80)
}

// ---------------------------------------------------------------------------------------
// What the watches saw.

/// One change a watch saw: an object as written, or the name of one deleted.
#[derive(Clone, Debug)]
pub enum Seen {
    Applied(Box<Workload>),
    Deleted(String),
}

/// Every Workload change seen, in order, with its cluster (0 = the manager, i = worker-i).
#[derive(Clone, Default)]
pub struct History(Arc<Mutex<Vec<(usize, Seen)>>>);

impl History {
    fn lock(&self) -> MutexGuard<'_, Vec<(usize, Seen)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every status the manager's Workload `name` had, in order.
    pub fn manager_states(&self, name: &str) -> Vec<Workload> {
        self.lock()
            .iter()
            .filter_map(|(cluster, seen)| match seen {
                Seen::Applied(wl) if *cluster == 0 && wl.name_any() == name => Some((**wl).clone()),
                _ => None,
            })
            .collect()
    }

    /// The names of every replica ever seen on a worker, with the workers that held one.
    pub fn replicas_ever(&self) -> BTreeMap<String, BTreeSet<usize>> {
        let mut seen: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
        for (cluster, change) in self.lock().iter() {
            if let (1.., Seen::Applied(wl)) = (*cluster, change) {
                seen.entry(wl.name_any()).or_default().insert(*cluster);
            }
        }
        seen
    }

    /// The most CPUs the manager's ClusterQueue `cq` ever had reserved at once, replaying
    /// the manager's changes in order (one watch: one consistent order).
    pub fn max_reserved(&self, cq: &str, sizes: &BTreeMap<String, u32>) -> (u32, Vec<String>) {
        let mut holding: BTreeMap<String, u32> = BTreeMap::new();
        let (mut max, mut at_max) = (0, Vec::new());
        for (cluster, change) in self.lock().iter() {
            if *cluster != 0 {
                continue;
            }
            match change {
                // A finished workload keeps its admission (as in Kueue) but no quota; nor
                // does one being deleted (held by Baton's finalizer until its replicas go).
                Seen::Applied(wl)
                    if reserved_in(wl, cq)
                        && !is_true(wl, condition::FINISHED)
                        && wl.metadata.deletion_timestamp.is_none() =>
                {
                    let cpus = sizes.get(&wl.name_any()).copied().unwrap_or(0);
                    holding.insert(wl.name_any(), cpus);
                }
                Seen::Applied(wl) => {
                    holding.remove(&wl.name_any());
                }
                Seen::Deleted(name) => {
                    holding.remove(name);
                }
            }
            let now: u32 = holding.values().sum();
            if now > max {
                max = now;
                at_max = holding.keys().cloned().collect();
            }
        }
        (max, at_max)
    }

    /// The latest state of every Workload on every cluster (for failure messages).
    pub fn latest(&self) -> BTreeMap<(usize, String), Option<Workload>> {
        let mut latest = BTreeMap::new();
        for (cluster, change) in self.lock().iter() {
            match change {
                Seen::Applied(wl) => {
                    latest.insert((*cluster, wl.name_any()), Some((**wl).clone()));
                }
                Seen::Deleted(name) => {
                    latest.insert((*cluster, name.clone()), None);
                }
            }
        }
        latest
    }
}

/// Watches on the manager's and the workers' Workloads, feeding one [`History`].
pub struct Watches {
    history: History,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Starts the watches and waits until each has listed its cluster once.
pub async fn watch_all(env: &Env) -> Watches {
    let history = History::default();
    let mut tasks = Vec::new();
    let mut listed = Vec::new();
    for i in 0..=env.worker_count() {
        let api = if i == 0 {
            env.manager_workloads()
        } else {
            env.worker_workloads(i)
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        listed.push(rx);
        let history = history.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                let seen = match event {
                    Ok(watcher::Event::InitApply(wl) | watcher::Event::Apply(wl)) => {
                        Seen::Applied(Box::new(wl))
                    }
                    Ok(watcher::Event::Delete(wl)) => Seen::Deleted(wl.name_any()),
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    Ok(watcher::Event::Init) | Err(_) => continue,
                };
                history.lock().push((i, seen));
            }
        }));
    }
    for rx in listed {
        tokio::time::timeout(WAIT, rx)
            .await
            .expect("watch listed in time")
            .expect("watch task alive");
    }
    Watches { history, tasks }
}

// ---------------------------------------------------------------------------------------
// Reading Workloads.

/// The Workload's status, or an empty one.
pub fn status(wl: &Workload) -> WorkloadStatus {
    wl.status.clone().unwrap_or_default()
}

/// The Workload's condition of type `type_`.
pub fn cond(wl: &Workload, type_: &str) -> Option<Condition> {
    wl.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, type_).cloned())
}

/// Whether the Workload has condition `type_` with this status and reason.
pub fn has(wl: &Workload, type_: &str, value: &str, why: &str) -> bool {
    cond(wl, type_).is_some_and(|c| c.status == value && c.reason == why)
}

/// Whether the Workload's condition `type_` is True.
pub fn is_true(wl: &Workload, type_: &str) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| is_condition_true(&s.conditions, type_))
}

/// Quota reserved on the manager, in the manager's ClusterQueue `cq`.
pub fn reserved_in(wl: &Workload, cq: &str) -> bool {
    is_true(wl, condition::QUOTA_RESERVED)
        && status(wl).admission.is_some_and(|a| a.cluster_queue == cq)
}

/// The state of the Workload's admission check `check`.
pub fn check_state(wl: &Workload, check: &str) -> Option<CheckState> {
    status(wl)
        .admission_checks
        .iter()
        .find(|c| c.name == check)
        .map(|c| c.state)
}

/// Reserved in `cq`, its MultiKueue check Pending, not Admitted yet: dispatched, waiting
/// for a worker.
pub fn reserved_awaiting_worker(wl: &Workload, cq: &str, check: &str) -> bool {
    reserved_in(wl, cq)
        && check_state(wl, check) == Some(CheckState::Pending)
        && !is_true(wl, condition::ADMITTED)
}

/// Waiting on the manager because it does not fit: `QuotaReserved=False`, reason
/// `Pending`, a message that says why, no admission.
pub fn waiting_for_quota(wl: &Workload) -> bool {
    let Some(c) = cond(wl, condition::QUOTA_RESERVED) else {
        return false;
    };
    c.status == "False"
        && c.reason == reason::PENDING
        && (c.message.contains("insufficient") || c.message.contains("fit"))
        && status(wl).admission.is_none()
}

/// One-line summary of a Workload's status (for failure messages).
pub fn summary(wl: &Workload) -> String {
    let s = status(wl);
    let conditions: Vec<String> = s
        .conditions
        .iter()
        .map(|c| format!("{}={}/{} ({})", c.type_, c.status, c.reason, c.message))
        .collect();
    let checks: Vec<String> = s
        .admission_checks
        .iter()
        .map(|c| format!("{}:{:?}", c.name, c.state))
        .collect();
    let created = wl
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    format!(
        "created={created} admission={:?} cluster={:?} checks={checks:?} conditions={conditions:?}",
        s.admission.map(|a| a.cluster_queue),
        s.cluster_name
    )
}

// ---------------------------------------------------------------------------------------
// The suite's environment.

/// A manager ClusterQueue and the LocalQueue that feeds it.
pub struct Queue {
    /// The ClusterQueue (unique to the environment).
    pub cq: String,
    /// The LocalQueue, in the suite's namespace.
    pub lq: &'static str,
    /// Nominal CPU quota of its one flavor, the environment's `default-flavor`.
    pub cpus: u32,
    /// Merged into the ClusterQueue's spec (cohort, preemption).
    pub extra: Value,
}

/// The ClusterQueue `base` (made unique to `env`), fed by LocalQueue `lq`.
pub fn queue(env: &Env, base: &str, lq: &'static str, cpus: u32, extra: Value) -> Queue {
    Queue {
        cq: env.name(base),
        lq,
        cpus,
        extra,
    }
}

/// One environment of the suite: two workers, the manager queues, the watches, the
/// processes started, and what the test submitted.
pub struct Suite {
    // Fields drop in this order: the processes stop before their clusters go.
    pub manager: Option<BatonProcess>,
    pub workers: Vec<BatonProcess>,
    pub watches: Watches,
    pub env: Env,
    /// CPUs of each submitted workload.
    pub sizes: Mutex<BTreeMap<String, u32>>,
    /// Details where Baton differs from Kueue, collected so that one test run reports all
    /// of them ([`Suite::done`] fails on any).
    pub deviations: Mutex<Vec<String>>,
}

impl Suite {
    /// Two workers, the manager queues `make` names, and the watches; the manager is not
    /// started. Returns the suite and its queues.
    pub async fn new(make: impl FnOnce(&Env) -> Vec<Queue>) -> (Suite, Vec<Queue>) {
        let env = Env::start(WORKERS).await.expect("env");
        let queues = make(&env);
        let mut docs = Vec::new();
        for q in &queues {
            let mut spec = json!({"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                    {"name": env.name("default-flavor"), "resources": [{"name": "cpu", "nominalQuota": q.cpus}]}]}],
                "admissionChecksStrategy": {"admissionChecks": [{"name": env.check()}]}});
            merge(&mut spec, &q.extra);
            docs.push(
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": q.cq}, "spec": spec}),
            );
            docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": q.lq, "namespace": env.namespace}, "spec": {"clusterQueue": q.cq}}));
        }
        env.install_docs(0, docs).await.expect("manager queues");
        let watches = watch_all(&env).await;
        let suite = Suite {
            env,
            watches,
            manager: None,
            workers: Vec::new(),
            sizes: Mutex::new(BTreeMap::new()),
            deviations: Mutex::new(Vec::new()),
        };
        (suite, queues)
    }

    /// [`Suite::new`] with one queue, then the manager.
    pub async fn started(make: impl FnOnce(&Env) -> Queue) -> (Suite, Queue) {
        let (mut suite, mut queues) = Suite::new(|env| vec![make(env)]).await;
        suite.start_manager();
        let q = queues.pop().expect("one queue");
        (suite, q)
    }

    /// Starts a `baton worker` shim on every worker, each with a ClusterQueue of `cpus` CPUs
    /// (lower-priority preemption), the LocalQueue `user-queue` for local work, and the
    /// LocalQueue `lq`: replicas keep the manager's queue name.
    pub async fn start_worker_shims(&mut self, cpus: u32, lq: &str) {
        for i in 1..=self.env.worker_count() {
            self.env
                .install_worker_queues(i, cpus, json!({}))
                .await
                .expect("worker queues");
            let queue = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": self.env.namespace},
                "spec": {"clusterQueue": self.env.cluster_queue()}});
            self.env
                .install_docs(i, [queue])
                .await
                .expect("worker LocalQueue");
            let worker = self.env.start_worker(i, "").expect("worker");
            self.workers.push(worker);
        }
    }

    /// Starts (or restarts) `baton manager`.
    pub fn start_manager(&mut self) {
        self.manager = Some(self.env.start_manager(FAST).expect("manager"));
    }

    /// Records a difference from Kueue's behaviour unless `ok`.
    pub fn expect_kueue(&self, ok: bool, what: String) {
        if !ok {
            eprintln!("DEVIATION: {what}");
            self.deviations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(what);
        }
    }

    /// Fails on the recorded differences from Kueue.
    pub fn done(self) {
        let deviations = self
            .deviations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        assert!(
            deviations.is_empty(),
            "differences from Kueue:\n- {}",
            deviations.join("\n- ")
        );
    }

    /// What the watches saw so far.
    pub fn history(&self) -> &History {
        &self.watches.history
    }

    /// CPUs of each submitted workload, by name.
    pub fn sizes(&self) -> BTreeMap<String, u32> {
        self.sizes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Submits a Workload on the manager in LocalQueue `lq`: one pod of `cpus` CPUs.
    pub async fn submit(&self, name: &str, lq: &str, cpus: u32, priority: i32) {
        let wl: Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": self.env.namespace},
            "spec": {"queueName": lq, "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpus.to_string()}}}]}}}]},
        }))
        .expect("workload");
        self.sizes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(name.to_string(), cpus);
        self.env
            .manager_workloads()
            .create(&PostParams::default(), &wl)
            .await
            .expect("submit");
    }

    /// Waits until the clock is past the second the manager's Workload `name` was created
    /// in: creation times have whole seconds, so a workload submitted next is strictly
    /// behind it in FIFO order (the testbed shares this process's clock).
    pub async fn after_creation_second_of(&self, name: &str) {
        let created = self
            .manager_wl(name)
            .await
            .and_then(|w| w.metadata.creation_timestamp)
            .map(|t| t.0.as_second())
            .expect("creation time");
        self.wait(
            &format!("the clock past {name}'s creation second"),
            || async { (Utc::now().timestamp() > created).then_some(()) },
        )
        .await;
    }

    /// The manager's Workload `name`, if it exists.
    pub async fn manager_wl(&self, name: &str) -> Option<Workload> {
        self.env
            .manager_workloads()
            .get_opt(name)
            .await
            .ok()
            .flatten()
    }

    /// Waits with the harness's `eventually`; on timeout, fails with what every cluster
    /// holds and the processes' logs.
    pub async fn wait<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        match tokio::time::timeout(WAIT, eventually(WAIT * 2, what, check)).await {
            Ok(value) => value,
            Err(_) => panic!(
                "timed out after {WAIT:?} waiting for: {what}\n{}",
                self.diagnostics()
            ),
        }
    }

    /// Waits until exactly `reserved` of `names` hold a reservation in `cq` and wait for a
    /// worker (`check` Pending), and exactly `waiting` wait for manager quota; returns both.
    pub async fn wait_reserved_and_waiting(
        &self,
        names: &[String],
        (cq, check): (&str, &str),
        (reserved, waiting): (usize, usize),
    ) -> (Vec<String>, Vec<String>) {
        let what = format!("{reserved} reserved on the manager and {waiting} waiting for quota");
        self.wait(&what, || async {
            let (mut holding, mut queued) = (Vec::new(), Vec::new());
            for name in names {
                let wl = self.manager_wl(name).await?;
                if reserved_awaiting_worker(&wl, cq, check) {
                    holding.push(name.clone());
                } else if waiting_for_quota(&wl) {
                    queued.push(name.clone());
                }
            }
            (holding.len() == reserved && queued.len() == waiting).then_some((holding, queued))
        })
        .await
    }

    /// Waits until the manager's Workload `name` passes `test`; returns it.
    pub async fn wait_wl(
        &self,
        name: &str,
        what: &str,
        test: impl Fn(&Workload) -> bool,
    ) -> Workload {
        self.wait(&format!("{name}: {what}"), || async {
            self.manager_wl(name).await.filter(|w| test(w))
        })
        .await
    }

    /// Waits until `name` has a replica on every worker; returns them.
    pub async fn wait_replicas_everywhere(&self, name: &str) -> Vec<Workload> {
        self.wait(&format!("{name}: a replica on every worker"), || async {
            let mut all = Vec::new();
            for i in 1..=self.env.worker_count() {
                all.push(self.env.replica(i, name).await?);
            }
            Some(all)
        })
        .await
    }

    /// Waits until `name` has no replica on any worker.
    pub async fn wait_no_replicas(&self, name: &str) {
        self.wait(&format!("{name}: no replica on any worker"), || async {
            for i in 1..=self.env.worker_count() {
                if self.env.replica(i, name).await.is_some() {
                    return None;
                }
            }
            Some(())
        })
        .await
    }

    /// Worker `i` admits `name`, then reports it finished.
    pub async fn finish_on(&self, i: usize, name: &str) {
        self.env.admit(i, name, Utc::now()).await.expect("admit");
        self.wait_wl(name, &format!("admitted on worker-{i}"), |w| {
            status(w).cluster_name == Some(self.env.cluster(i)) && is_true(w, condition::ADMITTED)
        })
        .await;
        self.report_finished(i, name).await;
    }

    /// Worker `i`'s replica of `name` reports `Finished=True` (the job succeeded).
    pub async fn report_finished(&self, i: usize, name: &str) {
        self.env
            .update_replica_status(i, name, |s| {
                baton_crds::conditions::set_condition(
                    &mut s.conditions,
                    baton_crds::conditions::NewCondition::new(
                        condition::FINISHED,
                        baton_crds::conditions::ConditionStatus::True,
                        "Succeeded",
                        "finished by the test",
                    ),
                    Utc::now(),
                );
            })
            .await
            .expect("finish");
        self.wait_wl(name, "Finished mirrored on the manager", |w| {
            is_true(w, condition::FINISHED)
        })
        .await;
    }

    /// Waits until the manager's ClusterQueue `cq` passes `test`; on timeout, fails with
    /// its last status.
    pub async fn wait_cq(&self, cq: &str, what: &str, test: impl Fn(&ClusterQueue) -> bool) {
        let last = Mutex::new(String::new());
        let found = tokio::time::timeout(
            WAIT,
            eventually(WAIT * 2, what, || async {
                let queue = self.cluster_queue(cq).await?;
                *last.lock().unwrap_or_else(|p| p.into_inner()) =
                    serde_json::to_string(&queue.status).unwrap_or_default();
                test(&queue).then_some(())
            }),
        )
        .await;
        if found.is_err() {
            panic!(
                "timed out after {WAIT:?} waiting for: {cq}: {what}\nlast status: {}\n{}",
                last.lock().unwrap_or_else(|p| p.into_inner()),
                self.diagnostics()
            );
        }
    }

    /// The manager's ClusterQueue `cq`.
    pub async fn cluster_queue(&self, cq: &str) -> Option<ClusterQueue> {
        let api: Api<ClusterQueue> = Api::all(self.env.manager_client());
        api.get_opt(cq).await.ok().flatten()
    }

    /// The manager's LocalQueue `lq` in the suite's namespace.
    pub async fn local_queue(&self, lq: &str) -> Option<LocalQueue> {
        let api: Api<LocalQueue> = Api::namespaced(self.env.manager_client(), &self.env.namespace);
        api.get_opt(lq).await.ok().flatten()
    }

    /// Asserts that no replica of `names` was ever created on any worker.
    pub fn assert_never_dispatched(&self, names: &[String]) {
        let ever = self.history().replicas_ever();
        for name in names {
            assert!(
                !ever.contains_key(name),
                "{name} was dispatched to workers {:?} without manager quota\n{}",
                ever.get(name),
                self.diagnostics()
            );
        }
    }

    /// The latest state of every Workload seen, and the tail of every process's log.
    pub fn diagnostics(&self) -> String {
        let mut out = String::from("--- latest state seen\n");
        for ((cluster, name), wl) in self.history().latest() {
            let place = if cluster == 0 {
                "manager".to_string()
            } else {
                format!("worker-{cluster}")
            };
            let text = wl.as_ref().map_or("deleted".to_string(), summary);
            out.push_str(&format!("{place} {name}: {text}\n"));
        }
        for process in self.manager.iter().chain(&self.workers) {
            let log = process.log_text();
            let tail: Vec<&str> = log.lines().rev().take(diagnostic_lines()).collect();
            out.push_str(&format!(
                "--- {} (last {} lines)\n",
                process.log.display(),
                tail.len()
            ));
            for line in tail.iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// CPUs in a flavor-usage list (`flavorsReservation`/`flavorsUsage`): (total, borrowed).
pub fn cpu_usage(list: &[baton_crds::cluster_queue::FlavorUsage]) -> (String, String) {
    let resource = list
        .iter()
        .flat_map(|f| f.resources.iter())
        .find(|r| r.name == "cpu");
    let quantity = |q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        q.map_or("0".to_string(), |q| q.0.clone())
    };
    (
        quantity(resource.and_then(|r| r.total.as_ref())),
        quantity(resource.and_then(|r| r.borrowed.as_ref())),
    )
}

/// (pending, reserving, admitted) of a ClusterQueue's status.
pub fn cq_counts(cq: &ClusterQueue) -> (i32, i32, i32) {
    let s = cq.status.clone().unwrap_or_default();
    (
        s.pending_workloads.unwrap_or(0),
        s.reserving_workloads.unwrap_or(0),
        s.admitted_workloads.unwrap_or(0),
    )
}

/// (pending, reserving, admitted) of a LocalQueue's status.
pub fn lq_counts(lq: &LocalQueue) -> (i32, i32, i32) {
    let s = lq.status.clone().unwrap_or_default();
    (
        s.pending_workloads.unwrap_or(0),
        s.reserving_workloads.unwrap_or(0),
        s.admitted_workloads.unwrap_or(0),
    )
}

/// `prefix1`, `prefix2`, … for the numbers in `range`.
pub fn names(prefix: &str, range: std::ops::RangeInclusive<usize>) -> Vec<String> {
    range.map(|j| format!("{prefix}{j}")).collect()
}
