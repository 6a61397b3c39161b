//! The worker shim through the real `baton worker` binary on one cluster: admission against
//! quota, queue status, preemption, KEP-8303 gates, and bad input that never stalls others.

use std::time::Duration;

use baton_crds::WorkloadKey;
use baton_crds::conditions::find_condition;
use baton_crds::constants::{MULTIKUEUE_GATE, PREEMPTED_BY_ANNOTATION, condition};
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted, is_gated};
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);
const NO_CONFIG: &str = "";

async fn wait_for(env: &Env, name: &str, what: &str, test: impl Fn(&Workload) -> bool) -> Workload {
    eventually(WAIT, &format!("{name}: {what}"), || async {
        env.worker_workload(1, name).await.filter(|w| test(w))
    })
    .await
}

fn condition_of(wl: &Workload, type_: &str) -> (String, String, String) {
    wl.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, type_))
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_are_admitted_against_quota_and_queues_show_it() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let _worker = env.start_worker(1, NO_CONFIG).expect("worker");
    for name in ["a", "b", "c"] {
        env.submit_on_worker(1, name, 2, 0, json!({}))
            .await
            .expect("submit");
    }
    let a = wait_for(&env, "a", "admitted", is_admitted).await;
    let admission = a
        .status
        .as_ref()
        .and_then(|s| s.admission.clone())
        .expect("admission");
    assert_eq!(admission.cluster_queue, env.cluster_queue());
    assert_eq!(
        admission.pod_set_assignments[0]
            .resource_usage
            .get("cpu")
            .expect("cpu usage")
            .0,
        "2"
    );
    wait_for(&env, "b", "admitted", is_admitted).await;
    let c = wait_for(&env, "c", "pending with a reason", |w| {
        condition_of(w, condition::QUOTA_RESERVED)
            .2
            .contains("insufficient unused quota")
    })
    .await;
    assert!(!is_admitted(&c));
    assert_eq!(condition_of(&c, condition::QUOTA_RESERVATION_BLOCKED).0, "");

    // kubectl shows what Kueue users expect.
    eventually(WAIT, "cq status", || async {
        // NAME COHORT STRATEGY PENDING ADMITTED (no cohort: an empty column).
        let out = env.kubectl(
            "worker-1",
            &["get", "cq", &env.cluster_queue(), "-o", "wide"],
        );
        let row = out
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>();
        (row == vec![env.cluster_queue().as_str(), "BestEffortFIFO", "1", "2"]).then_some(())
    })
    .await;
    let lq = env.kubectl(
        "worker-1",
        &[
            "get",
            "lq",
            "user-queue",
            "-o",
            "jsonpath={.status.pendingWorkloads} {.status.admittedWorkloads}",
        ],
    );
    assert_eq!(lq.trim(), "1 2");

    // Finishing a workload releases its quota; the pending one gets it.
    let api = env.worker_workloads(1);
    let finished = json!({"status": {"conditions": [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    api.patch_status("a", &PatchParams::default(), &Patch::Merge(&finished))
        .await
        .expect("finish a");
    wait_for(&env, "c", "admitted after a finished", is_admitted).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lower_priority_work_is_preempted_for_an_ungated_workload() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let _worker = env.start_worker(1, NO_CONFIG).expect("worker");
    for name in ["low-1", "low-2"] {
        env.submit_on_worker(1, name, 2, 0, json!({}))
            .await
            .expect("submit");
        wait_for(&env, name, "admitted", is_admitted).await;
    }
    env.submit_on_worker(1, "high", 2, 100, json!({}))
        .await
        .expect("submit");
    wait_for(&env, "high", "admitted", is_admitted).await;
    let mut evicted = Vec::new();
    for name in ["low-1", "low-2"] {
        let wl = env.worker_workload(1, name).await.expect("exists");
        let recorded = wl.annotations().get(PREEMPTED_BY_ANNOTATION).cloned();
        if is_evicted(&wl) {
            let (status, reason, message) = condition_of(&wl, condition::PREEMPTED);
            assert_eq!(
                (status.as_str(), reason.as_str()),
                ("True", "InClusterQueue")
            );
            assert!(message.contains("/high"), "{message}");
            assert!(!is_admitted(&wl));
            // The preemptor is recorded as data on the victim (its own patch: a status
            // write cannot change metadata).
            let preemptor = WorkloadKey::new(&wl.namespace().unwrap_or_default(), "high");
            assert_eq!(recorded.as_deref(), Some(preemptor.as_str()));
            evicted.push(name);
        } else {
            assert_eq!(recorded, None, "{name} was not evicted");
        }
    }
    assert_eq!(
        evicted.len(),
        1,
        "exactly one 2-CPU victim is needed: {evicted:?}"
    );
    let described = env.kubectl("worker-1", &["describe", "kwl", evicted[0]]);
    assert!(described.contains("Preempted"), "{described}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_gate_holds_preemption_until_it_opens() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 2, json!({}))
        .await
        .expect("queues");
    let _worker = env.start_worker(1, NO_CONFIG).expect("worker");
    env.submit_on_worker(1, "low", 2, 0, json!({}))
        .await
        .expect("submit");
    wait_for(&env, "low", "admitted", is_admitted).await;
    let gated = json!({"spec": {"preemptionGates": [{"name": MULTIKUEUE_GATE}]}});
    env.submit_on_worker(1, "high", 2, 100, gated)
        .await
        .expect("submit");
    let high = wait_for(&env, "high", "gated", is_gated).await;
    let (_, reason, message) = condition_of(&high, condition::QUOTA_RESERVATION_BLOCKED);
    assert_eq!(reason, "PreemptionGated");
    assert!(message.contains("needs to preempt 1 workload"), "{message}");
    // The missing status entry was initialised Closed, and nothing was evicted.
    assert_eq!(
        high.status.as_ref().map(|s| s.preemption_gates.len()),
        Some(1)
    );
    assert_eq!(gate_state(&high, MULTIKUEUE_GATE), Some(GateState::Closed));
    let low = env.worker_workload(1, "low").await.expect("low");
    assert!(is_admitted(&low) && !is_evicted(&low));
    let columns = env.kubectl("worker-1", &["get", "kwl", "high"]);
    assert!(
        columns.contains("Closed") && columns.contains("True"),
        "{columns}"
    );

    // The manager's move: open the gate.
    let open = json!({"status": {"preemptionGates": [{"name": MULTIKUEUE_GATE, "state": "Open", "position": "Open", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    env.worker_workloads(1)
        .patch_status("high", &PatchParams::default(), &Patch::Merge(&open))
        .await
        .expect("open gate");
    let high = wait_for(&env, "high", "admitted after the gate opened", is_admitted).await;
    assert_eq!(
        condition_of(&high, condition::QUOTA_RESERVATION_BLOCKED).0,
        "False"
    );
    let low = env.worker_workload(1, "low").await.expect("low");
    assert!(is_evicted(&low), "{:?}", low.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_workloads_get_a_reason_and_never_stall_the_others() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let _worker = env.start_worker(1, NO_CONFIG).expect("worker");
    env.submit_on_worker(
        1,
        "lost",
        1,
        0,
        json!({"spec": {"queueName": "no-such-queue"}}),
    )
    .await
    .expect("submit");
    env.submit_on_worker(1, "unknown-class", 1, 0, json!({"spec": {"priority": null,
        "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "missing"}}}))
        .await
        .expect("submit");
    env.submit_on_worker(1, "fine", 1, 0, json!({}))
        .await
        .expect("submit");
    wait_for(&env, "fine", "admitted", is_admitted).await;
    let lost = wait_for(&env, "lost", "inadmissible", |w| {
        condition_of(w, condition::QUOTA_RESERVED).1 == "Inadmissible"
    })
    .await;
    assert!(
        condition_of(&lost, condition::QUOTA_RESERVED)
            .2
            .contains("LocalQueue no-such-queue doesn't exist")
    );
    let unknown = wait_for(&env, "unknown-class", "inadmissible", |w| {
        condition_of(w, condition::QUOTA_RESERVED).1 == "Inadmissible"
    })
    .await;
    let message = condition_of(&unknown, condition::QUOTA_RESERVED).2;
    assert!(
        message.contains("WorkloadPriorityClass") && message.contains("missing"),
        "{message}"
    );
    let described = env.kubectl("worker-1", &["describe", "kwl", "lost"]);
    assert!(described.contains("Inadmissible"), "{described}");
}

/// An inactive ClusterQueue says why with Kueue's reasons (`Stopped`, `FlavorNotFound`), its
/// LocalQueue follows, and its workloads wait with a message naming the cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inactive_cluster_queue_says_why_and_admits_nothing() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let (stopped, unflavored) = (env.name("stopped"), env.name("unflavored"));
    let queue = |name: &str, flavor: String, extra: serde_json::Value| {
        let mut doc = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": {"namespaceSelector": {}, "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [
                    {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": 4}]}]}]}});
        if let (Some(spec), Some(extra)) = (doc["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        doc
    };
    let flavor = env.name("default-flavor");
    env.install_docs(
        1,
        vec![
            queue(&stopped, flavor, json!({"stopPolicy": "Hold"})),
            queue(&unflavored, env.name("no-such-flavor"), json!({})),
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": "stopped-queue", "namespace": env.namespace},
                "spec": {"clusterQueue": stopped}}),
        ],
    )
    .await
    .expect("queues");
    let _worker = env.start_worker(1, NO_CONFIG).expect("worker");
    env.submit_on_worker(
        1,
        "held",
        1,
        0,
        json!({"spec": {"queueName": "stopped-queue"}}),
    )
    .await
    .expect("submit");

    let active = |kind: &str, name: &str| {
        env.kubectl(
            "worker-1",
            &[
                "get",
                kind,
                name,
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Active")].reason}: {.status.conditions[?(@.type=="Active")].message}"#,
            ],
        )
    };
    eventually(WAIT, "the queues' Active conditions", || async {
        let stopped_cq = active("clusterqueues", &stopped);
        let unflavored_cq = active("clusterqueues", &unflavored);
        let stopped_lq = active("localqueues", "stopped-queue");
        (stopped_cq == "Stopped: Can't admit new workloads: stopPolicy is Hold"
            && unflavored_cq.starts_with("FlavorNotFound: ")
            && unflavored_cq.contains(&env.name("no-such-flavor"))
            && stopped_lq.starts_with("ClusterQueueIsInactive: "))
        .then_some(())
    })
    .await;
    let held = wait_for(&env, "held", "pending with a reason", |w| {
        condition_of(w, condition::QUOTA_RESERVED)
            .2
            .contains("is inactive")
    })
    .await;
    assert!(!is_admitted(&held), "{:?}", held.status);
    assert!(
        condition_of(&held, condition::QUOTA_RESERVED)
            .2
            .contains("stopPolicy is Hold"),
        "{:?}",
        held.status
    );
}
