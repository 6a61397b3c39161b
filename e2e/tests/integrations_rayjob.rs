//! RayJobs (`ray.io/v1`, the CRD as KubeRay ships it) end to end with the real `baton
//! manager` and real `baton worker` shims (issue 27). Where the testbed runs no KubeRay
//! controller, the test plays it, writing `status.jobDeploymentStatus` and `jobStatus` as
//! KubeRay would. What is checked:
//!
//! - a RayJob applied on the manager gets a Workload with pod sets `head` (1) and one per
//!   worker group, runs on exactly one worker (started there by the worker's integration),
//!   its `jobStatus` and `jobDeploymentStatus` are mirrored on the manager, and its completion
//!   finishes the workload and removes the copy; deleting another one cleans every worker;
//! - on a worker, preemption suspends the victim RayJob, and its quota is freed only once
//!   KubeRay reports the deployment `Suspended` (its cluster gone).

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::integrations::{is_suspended, queued_rayjob, shipped_crd};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use kube::ResourceExt;
use kube::api::{ApiResource, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 2;
const CRD: &str = "ray.io_rayjobs.yaml";

async fn workload_owned(api: &kube::Api<Workload>, name: &str) -> Option<Workload> {
    let all = api.list(&ListParams::default()).await.ok()?;
    all.items.into_iter().find(|w| {
        w.owner_references()
            .iter()
            .any(|o| o.kind == "RayJob" && o.name == name)
    })
}

/// Writes the status KubeRay would.
async fn play_kuberay(
    env: &Env,
    i: usize,
    rayjobs: &ApiResource,
    name: &str,
    deployment: &str,
    job: &str,
) {
    let status = json!({"jobDeploymentStatus": deployment, "jobStatus": job});
    env.objects(i, rayjobs)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .expect("RayJob status");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_runs_on_exactly_one_worker_and_its_status_follows() {
    let mut env = Env::start(WORKERS).await.expect("env");
    let rayjobs = env
        .install_crd_everywhere(&shipped_crd(CRD).expect("RayJob CRD"))
        .await
        .expect("CRD");
    let mut processes = Vec::new();
    for i in 1..=WORKERS {
        env.install_worker_queues(i, 4, json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    processes.push(env.start_manager("gcInterval: 1s\n").expect("manager"));
    env.create_object(0, &rayjobs, queued_rayjob("ray", 2, 1, true))
        .await
        .expect("manager RayJob");
    let wl = eventually(WAIT, "the manager Workload", || async {
        workload_owned(&env.manager_workloads(), "ray").await
    })
    .await;
    assert_eq!(
        wl.spec
            .pod_sets
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect::<Vec<_>>(),
        vec![("head", 1), ("workers", 2)]
    );
    let winner = eventually(WAIT, "admitted on a worker", || async {
        let status = workload_owned(&env.manager_workloads(), "ray")
            .await?
            .status?;
        let cluster = status.cluster_name?;
        is_condition_true(&status.conditions, condition::ADMITTED)
            .then(|| (1..=WORKERS).find(|&i| env.cluster(i) == cluster))?
    })
    .await;
    eventually(WAIT, "the copy started on the winner", || async {
        env.object(winner, &rayjobs, "ray")
            .await
            .filter(|j| !is_suspended(j))
    })
    .await;
    assert_eq!(
        env.holders(&rayjobs, "ray").await,
        vec![winner],
        "no copy on the loser"
    );

    play_kuberay(&env, winner, &rayjobs, "ray", "Running", "RUNNING").await;
    eventually(WAIT, "the manager RayJob shows Running", || async {
        let obj = env.object(0, &rayjobs, "ray").await?;
        (obj.data.pointer("/status/jobDeploymentStatus") == Some(&json!("Running"))
            && obj.data.pointer("/status/jobStatus") == Some(&json!("RUNNING")))
        .then_some(())
    })
    .await;
    play_kuberay(&env, winner, &rayjobs, "ray", "Complete", "SUCCEEDED").await;
    eventually(WAIT, "the manager workload finished", || async {
        let status = workload_owned(&env.manager_workloads(), "ray")
            .await?
            .status?;
        is_condition_true(&status.conditions, condition::FINISHED).then_some(())
    })
    .await;
    eventually(
        WAIT,
        "the manager RayJob shows SUCCEEDED and the copy is gone",
        || async {
            let obj = env.object(0, &rayjobs, "ray").await?;
            (obj.data.pointer("/status/jobStatus") == Some(&json!("SUCCEEDED"))
                && env.holders(&rayjobs, "ray").await.is_empty())
            .then_some(())
        },
    )
    .await;

    // Deleting a running one cleans every worker.
    env.create_object(0, &rayjobs, queued_rayjob("gone", 1, 1, true))
        .await
        .expect("second RayJob");
    let name = eventually(WAIT, "its copy somewhere", || async {
        let wl = workload_owned(&env.manager_workloads(), "gone").await?;
        (!env.holders(&rayjobs, "gone").await.is_empty()).then(|| wl.name_any())
    })
    .await;
    env.objects(0, &rayjobs)
        .delete("gone", &DeleteParams::background())
        .await
        .expect("delete");
    eventually(WAIT, "every worker clean", || async {
        for i in 1..=WORKERS {
            if env.object(i, &rayjobs, "gone").await.is_some()
                || env.replica(i, &name).await.is_some()
            {
                return false;
            }
        }
        true
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_suspends_a_rayjob_and_frees_its_quota_once_its_cluster_is_gone() {
    let mut env = Env::start(1).await.expect("env");
    let rayjobs = env
        .install_crd_everywhere(&shipped_crd(CRD).expect("CRD"))
        .await
        .expect("CRD");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let _worker = env.start_worker(1, "").expect("worker");
    env.create_object(1, &rayjobs, queued_rayjob("victim", 1, 3, false))
        .await
        .expect("RayJob");
    eventually(WAIT, "the RayJob started", || async {
        env.object(1, &rayjobs, "victim")
            .await
            .filter(|j| !is_suspended(j))
    })
    .await;
    play_kuberay(&env, 1, &rayjobs, "victim", "Running", "RUNNING").await;
    env.submit_on_worker(1, "urgent", 4, 1000, json!({}))
        .await
        .expect("urgent");
    eventually(WAIT, "the victim RayJob suspended", || async {
        env.object(1, &rayjobs, "victim").await.filter(is_suspended)
    })
    .await;
    // KubeRay still tears the cluster down: the quota stays.
    let held = workload_owned(&env.worker_workloads(1), "victim")
        .await
        .expect("workload");
    assert!(
        held.status.as_ref().is_some_and(|s| s.admission.is_some()),
        "released too early"
    );
    assert!(
        env.worker_workload(1, "urgent")
            .await
            .is_some_and(|w| !is_admitted(&w))
    );
    play_kuberay(&env, 1, &rayjobs, "victim", "Suspended", "STOPPED").await;
    eventually(WAIT, "the preemptor admitted", || async {
        env.worker_workload(1, "urgent").await.filter(is_admitted)
    })
    .await;
}
