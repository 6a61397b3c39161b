//! The worker side of the MultiKueue environment: Kueue queues on the worker clusters and
//! the real `baton worker` shim running against them.

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::harness::process::BatonProcess;
use crate::multikueue::Env;

/// Merges `extra` into `base`, object by object (a small JSON merge patch).
pub(crate) fn merge(base: &mut Value, extra: &Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e.clone(),
    }
}

impl Env {
    /// Installs on worker `i` a flavor, a ClusterQueue of `cpus` CPUs (lower-priority
    /// preemption within the queue; `extra` is merged into its spec) and the LocalQueue
    /// `user-queue`: the same names the manager routes to.
    pub async fn install_worker_queues(
        &self,
        i: usize,
        cpus: u32,
        extra: Value,
    ) -> anyhow::Result<()> {
        let (flavor, cq) = (self.name("default-flavor"), self.cluster_queue());
        let mut spec = json!({"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpus}]}]}],
                "preemption": {"withinClusterQueue": "LowerPriority"}});
        merge(&mut spec, &extra);
        let docs = [
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": spec}),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                   "metadata": {"name": "user-queue", "namespace": self.namespace}, "spec": {"clusterQueue": cq}}),
        ];
        self.install_docs(i, docs).await
    }

    /// Starts `baton worker` against worker `i`.
    pub fn start_worker(&mut self, i: usize, config_yaml: &str) -> anyhow::Result<BatonProcess> {
        let kubeconfig = self.kubeconfig(&format!("worker-{i}"));
        // The leader Lease lives in the environment's namespace (it exists on every cluster).
        let namespace = self.namespace.clone();
        self.start_baton(
            "worker",
            &kubeconfig,
            &["--namespace", &namespace],
            config_yaml,
        )
    }

    /// Creates a Workload directly on worker `i` (local work, not a replica): one pod set of
    /// `cpus` CPUs, with `priority` and an optional priority class and labels.
    pub async fn submit_on_worker(
        &self,
        i: usize,
        name: &str,
        cpus: u32,
        priority: i32,
        extra: Value,
    ) -> anyhow::Result<Workload> {
        let mut doc = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {"queueName": "user-queue", "priority": priority, "podSets": [{"name": "main", "count": 1, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpus.to_string()}}}]}}}]},
        });
        merge(&mut doc, &extra);
        let wl: Workload = serde_json::from_value(doc)?;
        Ok(self
            .worker_workloads(i)
            .create(&PostParams::default(), &wl)
            .await?)
    }

    /// Fills worker `i` with `count` local 1-CPU workloads `low-1`… of priority 0, and waits
    /// (up to `deadline`) until every one is admitted.
    pub async fn fill_worker(&self, i: usize, count: usize, deadline: std::time::Duration) {
        for j in 1..=count {
            self.submit_on_worker(i, &low(j), 1, 0, json!({}))
                .await
                .expect("low-priority workload");
        }
        for j in 1..=count {
            let name = low(j);
            crate::harness::eventually(
                deadline,
                &format!("{name} admitted on worker-{i}"),
                || async { self.worker_workload(i, &name).await.filter(is_admitted) },
            )
            .await;
        }
    }

    /// How many of worker `i`'s `low-1`…`low-<count>` match `test` right now.
    pub async fn count_low(&self, i: usize, count: usize, test: fn(&Workload) -> bool) -> usize {
        let mut n = 0;
        for j in 1..=count {
            if self
                .worker_workload(i, &low(j))
                .await
                .is_some_and(|w| test(&w))
            {
                n += 1;
            }
        }
        n
    }

    /// Worker `i`'s Workload `name`, if it exists.
    pub async fn worker_workload(&self, i: usize, name: &str) -> Option<Workload> {
        let api: Api<Workload> = self.worker_workloads(i);
        api.get_opt(name).await.ok().flatten()
    }
}

/// The name of the `j`th low-priority filler workload.
pub fn low(j: usize) -> String {
    format!("low-{j}")
}

/// Whether the workload holds quota.
pub fn is_admitted(wl: &Workload) -> bool {
    wl.status.as_ref().is_some_and(|s| {
        s.admission.is_some() && is_condition_true(&s.conditions, condition::QUOTA_RESERVED)
    })
}

/// Whether the workload waits on a Closed preemption gate: `QuotaReservationBlocked=True` with
/// reason `PreemptionGated` (not `RoomExpected`, which asks for no gate).
pub fn is_gated(wl: &Workload) -> bool {
    wl.status.as_ref().is_some_and(|s| {
        baton_crds::conditions::find_condition(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED)
            .is_some_and(|c| {
                c.status == "True" && c.reason == baton_crds::constants::reason::PREEMPTION_GATED
            })
    })
}

/// Whether the workload was evicted (preempted).
pub fn is_evicted(wl: &Workload) -> bool {
    wl.status
        .as_ref()
        .is_some_and(|s| is_condition_true(&s.conditions, condition::EVICTED))
}
