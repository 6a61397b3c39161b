//! Victim selection through the real `baton worker`: a workload whose class tolerates the
//! preemptor and one protected by a PodDisruptionBudget hard guarantee survive a preemption
//! that evicts a third.

use std::time::Duration;

use baton_e2e::harness::{apply, eventually};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn class_ref(name: &str) -> serde_json::Value {
    json!({"spec": {"priority": null, "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerated_and_budget_protected_workloads_survive_a_preemption() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 3, json!({}))
        .await
        .expect("queues");
    let client = env.worker_client(1);
    let prefix = "preemption-toleration.scheduling.x-k8s.io/";
    let classes = [
        // Tolerates any preemptor below 10000, forever.
        (
            "tolerant",
            json!({format!("{prefix}minimum-preemptable-priority"): "10000", format!("{prefix}toleration-seconds"): "-1"}),
        ),
        // Its budget may only be broken by preemptors of priority 5000 or more.
        (
            "guarded",
            json!({format!("{prefix}allow-disruption-by-priority-greater-than-or-equal"): "5000"}),
        ),
        ("plain", json!({})),
    ];
    for (name, annotations) in &classes {
        let resource = apply(&client, &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": format!("{name}{}", env.namespace), "annotations": annotations}, "value": 100}))
            .await
            .expect("class");
        env.clusters
            .track(1, resource, &format!("{name}{}", env.namespace));
    }
    apply(
        &client,
        &json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded", "namespace": env.namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}}),
    )
    .await
    .expect("pdb");
    let _worker = env.start_worker(1, "").expect("worker");
    for (name, _) in &classes {
        env.submit_on_worker(
            1,
            name,
            1,
            0,
            class_ref(&format!("{name}{}", env.namespace)),
        )
        .await
        .expect("submit");
        eventually(WAIT, &format!("{name} admitted"), || async {
            env.worker_workload(1, name).await.filter(is_admitted)
        })
        .await;
    }
    env.submit_on_worker(1, "urgent", 1, 1000, json!({}))
        .await
        .expect("submit");
    eventually(WAIT, "urgent admitted", || async {
        env.worker_workload(1, "urgent").await.filter(is_admitted)
    })
    .await;
    let plain = env.worker_workload(1, "plain").await.expect("plain");
    assert!(
        is_evicted(&plain),
        "the only unprotected workload is the victim: {:?}",
        plain.status
    );
    for survivor in ["tolerant", "guarded"] {
        let wl = env.worker_workload(1, survivor).await.expect("survivor");
        assert!(
            is_admitted(&wl) && !is_evicted(&wl),
            "{survivor}: {:?}",
            wl.status
        );
    }
}
