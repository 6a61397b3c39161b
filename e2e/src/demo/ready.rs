//! When the controllers are up: every MultiKueueCluster on the manager is Active (the manager
//! runs and reaches every worker), and every worker's ClusterQueue carries an Active=True
//! condition (only a running `baton worker` writes queue status). Both are visible through
//! the API, so this needs no knowledge of the controllers' ephemeral ports.

use std::time::{Duration, Instant};

use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::{ClusterQueue, MultiKueueCluster};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::controllers::Controllers;
use super::setup::{CLUSTER_QUEUE, worker_name};
use crate::harness::sandbox::Sandbox;

/// What is not up yet, one line each; empty when everything is.
pub fn not_ready(
    clusters: &[MultiKueueCluster],
    expected: usize,
    worker_queues: &[(String, Option<ClusterQueue>)],
) -> Vec<String> {
    let mut out = Vec::new();
    for i in 1..=expected {
        let name = worker_name(i);
        let found = clusters.iter().find(|c| c.name_any() == name);
        let conditions = found
            .and_then(|c| c.status.as_ref())
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        if !is_condition_true(conditions, condition::ACTIVE) {
            let why = find_condition(conditions, condition::ACTIVE)
                .map(|c| format!("{}: {}", c.reason, c.message))
                .unwrap_or_else(|| "no Active condition yet".into());
            out.push(format!("MultiKueueCluster {name} is not Active ({why})"));
        }
    }
    for (worker, queue) in worker_queues {
        let active = queue
            .as_ref()
            .and_then(|q| q.status.as_ref())
            .is_some_and(|s| is_condition_true(&s.conditions, condition::ACTIVE));
        if !active {
            out.push(format!(
                "{worker}: ClusterQueue {CLUSTER_QUEUE} has no Active status from baton worker yet"
            ));
        }
    }
    out
}

async fn observe(sandbox: &Sandbox) -> anyhow::Result<Vec<String>> {
    let manager = sandbox.manager.client()?;
    let clusters = Api::<MultiKueueCluster>::all(manager)
        .list(&ListParams::default())
        .await?
        .items;
    let mut queues = Vec::new();
    for (i, worker) in sandbox.workers.iter().enumerate() {
        let api = Api::<ClusterQueue>::all(worker.client()?);
        queues.push((worker_name(i + 1), api.get_opt(CLUSTER_QUEUE).await?));
    }
    Ok(not_ready(&clusters, sandbox.workers.len(), &queues))
}

/// Waits until the controllers are up; fails early when one exits, or after `deadline`
/// naming what is still missing.
pub async fn wait(
    sandbox: &Sandbox,
    controllers: &mut Controllers,
    deadline: Duration,
) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        if let Some(exited) = controllers.exited() {
            anyhow::bail!("{exited}");
        }
        let missing = match observe(sandbox).await {
            Ok(missing) if missing.is_empty() => return Ok(()),
            Ok(missing) => missing,
            Err(e) => vec![format!("cannot read the clusters: {e:#}")],
        };
        if start.elapsed() > deadline {
            let logs: Vec<String> = controllers
                .logs()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            anyhow::bail!(
                "the controllers were not up after {deadline:?}:\n  {}\nlogs: {}",
                missing.join("\n  "),
                logs.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(name: &str, active: Option<(&str, &str)>) -> MultiKueueCluster {
        let conditions = match active {
            Some((status, reason)) => json!([{"type": "Active", "status": status, "reason": reason,
                "message": "m", "lastTransitionTime": "2025-01-01T00:00:00Z"}]),
            None => json!([]),
        };
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
            "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "s"}}},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    fn queue(active: bool) -> ClusterQueue {
        let status = if active {
            json!({"conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}]})
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": CLUSTER_QUEUE}, "spec": {}, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn ready_when_every_cluster_is_active_and_every_worker_wrote_status() {
        let clusters = [
            cluster("worker-1", Some(("True", "Active"))),
            cluster("worker-2", Some(("True", "Active"))),
        ];
        let queues = [
            ("worker-1".to_string(), Some(queue(true))),
            ("worker-2".to_string(), Some(queue(true))),
        ];
        assert!(not_ready(&clusters, 2, &queues).is_empty());
    }

    #[test]
    fn says_what_is_missing() {
        let clusters = [cluster(
            "worker-1",
            Some(("False", "ClientConnectionFailed")),
        )];
        let queues = [
            ("worker-1".to_string(), Some(queue(false))),
            ("worker-2".to_string(), None),
        ];
        let missing = not_ready(&clusters, 2, &queues);
        assert_eq!(
            missing,
            [
                "MultiKueueCluster worker-1 is not Active (ClientConnectionFailed: m)",
                "MultiKueueCluster worker-2 is not Active (no Active condition yet)",
                "worker-1: ClusterQueue cluster-queue has no Active status from baton worker yet",
                "worker-2: ClusterQueue cluster-queue has no Active status from baton worker yet",
            ]
        );
    }
}
