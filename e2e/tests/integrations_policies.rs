//! The chart's admission policy for every built-in integration (issue 27): installed on a
//! testbed cluster that serves the kind (its CRD as its project ships it), a queued object
//! created unsuspended comes back suspended, and an unqueued one is left alone.

use std::time::Duration;

use baton_e2e::harness::eventually;
use baton_e2e::integrations::{
    LONG, install_crd, is_suspended, queued_jobset, queued_rayjob, shipped_crd,
};
use baton_testbed::server::TestCluster;
use kube::api::{Api, DynamicObject};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const MAP_API: &str = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy";

/// Installs the chart's policies (rendered for a cluster serving `api`) and the CRD, then
/// checks a queued `doc` created unsuspended is stored suspended and an unqueued one is not.
async fn policy_suspends(cluster_name: &str, crd_file: &str, api: &str, doc: Value) {
    let Some(helm) = baton_e2e::chart::helm().expect("HELM") else {
        eprintln!("skipped: no helm");
        return;
    };
    let docs = baton_e2e::chart::render(
        &helm,
        "baton",
        "baton-system",
        &[
            "--set",
            "mode=worker",
            "--api-versions",
            MAP_API,
            "--api-versions",
            api,
        ],
    )
    .expect("render");
    let policies: Vec<Value> = docs
        .into_iter()
        .filter(|d| baton_e2e::chart::component(d) == "job-admission")
        .collect();
    let cluster = TestCluster::start_named(cluster_name).await.expect("start");
    let ns = "team-a";
    cluster
        .apply_object(
            "",
            "v1",
            "namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )
        .expect("namespace");
    let client = cluster.client().expect("client");
    let resource = install_crd(&client, &shipped_crd(crd_file).expect("CRD"))
        .await
        .expect("CRD");
    baton_e2e::chart::install(&client, &policies)
        .await
        .expect("policies");
    let objects = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &resource);
    let unsuspended = |name: String, queued: bool| {
        let mut d = doc.clone();
        d["metadata"]["name"] = json!(name);
        d["metadata"]["namespace"] = json!(ns);
        d["spec"]["suspend"] = json!(false);
        if !queued {
            d["metadata"]["labels"] = json!({"app": "free"});
        }
        serde_json::from_value::<DynamicObject>(d).expect("doc")
    };
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    eventually(
        WAIT,
        "a queued object created unsuspended comes back suspended",
        || async {
            let n = attempts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match objects
                .create(
                    &Default::default(),
                    &unsuspended(format!("probe-{n}"), true),
                )
                .await
            {
                Ok(created) => is_suspended(&created),
                Err(e) => panic!("creating a probe: {e}"),
            }
        },
    )
    .await;
    let free = objects
        .create(&Default::default(), &unsuspended("free".into(), false))
        .await
        .expect("unqueued");
    assert!(!is_suspended(&free), "an unqueued object is not Baton's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_policy_suspends_a_queued_jobset_created_unsuspended() {
    policy_suspends(
        "jobset-policy",
        "jobset.x-k8s.io_jobsets.yaml",
        "jobset.x-k8s.io/v1alpha2/JobSet",
        queued_jobset("x", 1, 1, 1, false),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_policy_suspends_a_queued_rayjob_created_unsuspended() {
    policy_suspends(
        "rayjob-policy",
        "ray.io_rayjobs.yaml",
        "ray.io/v1/RayJob",
        queued_rayjob("x", 1, 1, false, LONG),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_policy_suspends_a_queued_trainjob_created_unsuspended() {
    let trainjob = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "x", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
    });
    policy_suspends(
        "trainjob-policy",
        "trainer.kubeflow.org_trainjobs.yaml",
        "trainer.kubeflow.org/v1alpha1/TrainJob",
        trainjob,
    )
    .await;
}
