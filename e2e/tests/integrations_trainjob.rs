//! Kubeflow Trainer TrainJobs (`trainer.kubeflow.org/v1alpha1`, the CRDs as Trainer ships
//! them) through the real `baton manager` and `baton worker`s (issue 27), on the testbed's
//! stand-in Trainer and JobSet controllers: the TrainJob's Workload is built from its
//! ClusterTrainingRuntime and `numNodes` (the trainer step runs `numNodes` pods with the
//! TrainJob's `resourcesPerNode`), only the winner gets a copy (without MultiKueue's
//! `managedBy`), which the worker starts with its flavors as a `runtimePatches` entry; the
//! copy's status is mirrored; evicted on its worker (its pods gone first) it runs again
//! elsewhere; deleting the TrainJob cleans every worker.

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::integrations::{
    KindEnv, KindSetup, integrations_dir, owned_workload, pod_set_counts, shipped_crd,
};
use baton_e2e::multikueue::Env;
use kube::ResourceExt;
use kube::api::DeleteParams;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 2;
/// The pods of TrainJob `train` (of its JobSet, which has its name).
const PODS: &str = "jobset.sigs.k8s.io/jobset-name=train";

async fn workload_owned(env: &Env, name: &str) -> Option<Workload> {
    owned_workload(&env.manager_workloads(), "TrainJob", name).await
}

/// The runtime of Trainer's examples (`torch-distributed`), as shipped.
fn runtime() -> Value {
    let path = integrations_dir()
        .join("examples")
        .join("trainer-runtime-torch_distributed.yaml");
    let text = std::fs::read_to_string(&path).expect("runtime example");
    serde_saphyr::from_str(&text).expect("runtime YAML")
}

/// The clusters with Trainer's and JobSet's CRDs and the runtime, a shim on each worker and
/// the manager when `manager` is given.
async fn start(workers: usize, manager: Option<&str>) -> KindEnv {
    KindSetup {
        workers,
        crds: &[
            shipped_crd("trainer.kubeflow.org_trainjobs.yaml").expect("CRD"),
            shipped_crd("trainer.kubeflow.org_clustertrainingruntimes.yaml").expect("CRD"),
            shipped_crd("jobset.x-k8s.io_jobsets.yaml").expect("CRD"),
        ],
        objects: &[runtime()],
        manager,
    }
    .start()
    .await
    .expect("environment")
}

/// TrainJob `train`, queued and suspended, on the example runtime with `num_nodes` nodes of
/// 1 CPU; `managed_by`: its `spec.managedBy`, if any.
fn trainjob(num_nodes: i32, managed_by: Option<&str>) -> Value {
    let mut job = json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
            "annotations": {baton_e2e::jobs::RUN_SECONDS: "600"}},
        "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
            "suspend": true,
            "trainer": {"numNodes": num_nodes, "image": "python:3.11-slim", "resourcesPerNode": {"requests": {"cpu": "1"}}}},
    });
    if let Some(by) = managed_by {
        job["spec"]["managedBy"] = json!(by);
    }
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainjob_gets_its_workload_from_its_runtime_and_runs_its_copy_on_one_worker() {
    // A TrainJob runs as a JobSet, from the runtime applied on every cluster.
    let KindEnv {
        env,
        processes: _processes,
        resource: trainjobs,
    } = start(WORKERS, Some("gcInterval: 1s\n")).await;

    env.create_object(
        0,
        &trainjobs,
        trainjob(3, Some("kueue.x-k8s.io/multikueue")),
    )
    .await
    .expect("manager TrainJob");
    let wl = eventually(WAIT, "the TrainJob's Workload", || async {
        workload_owned(&env, "train").await
    })
    .await;
    assert_eq!(
        pod_set_counts(&wl),
        vec![("node", 3)],
        "the runtime's replicated job, numNodes pods"
    );
    let winner = eventually(WAIT, "admitted on a worker", || async {
        let status = workload_owned(&env, "train").await?.status?;
        let cluster = status.cluster_name?;
        is_condition_true(&status.conditions, condition::ADMITTED)
            .then(|| (1..=WORKERS).find(|&i| env.cluster(i) == cluster))?
    })
    .await;
    let copy = eventually(WAIT, "the copy started on the winner", || async {
        env.object(winner, &trainjobs, "train")
            .await
            .filter(|j| j.data.pointer("/spec/suspend") == Some(&json!(false)))
    })
    .await;
    // Removed from the copy; the CRD defaults it to Trainer's own controller.
    assert_eq!(
        copy.data.pointer("/spec/managedBy"),
        Some(&json!("trainer.kubeflow.org/trainjob-controller")),
        "run by the worker's Trainer controller, not MultiKueue"
    );
    assert_eq!(
        copy.data.pointer("/spec/runtimePatches/0/manager"),
        Some(&json!("kueue.x-k8s.io/manager")),
        "the flavors as a runtime patch"
    );
    assert_eq!(
        env.holders(&trainjobs, "train").await,
        vec![winner],
        "no copy on the loser"
    );
    eventually(WAIT, "numNodes pods on the winner", || async {
        (env.pods(winner, PODS).await.len() == 3).then_some(())
    })
    .await;
    assert!(
        env.pods(3 - winner, PODS).await.is_empty(),
        "pods on the loser"
    );
    eventually(
        WAIT,
        "the manager TrainJob's status mirrors the copy's",
        || async {
            let manager = env.object(0, &trainjobs, "train").await?;
            let copy = env.object(winner, &trainjobs, "train").await?;
            let jobs = manager.data.pointer("/status/jobsStatus")?;
            (jobs.as_array().is_some_and(|a| !a.is_empty())
                && manager.data.get("status") == copy.data.get("status"))
            .then_some(())
        },
    )
    .await;

    // Evicted on its worker by local work of higher priority: it runs again on the other.
    env.submit_on_worker(winner, "local", 4, 1000, json!({}))
        .await
        .expect("local");
    let second = 3 - winner;
    eventually(WAIT, "the copy started on the other worker", || async {
        env.object(second, &trainjobs, "train")
            .await
            .filter(|j| j.data.pointer("/spec/suspend") == Some(&json!(false)))
    })
    .await;
    eventually(
        WAIT,
        "only the new winner holds a copy, with its pods",
        || async {
            (env.holders(&trainjobs, "train").await == vec![second]
                && env.pods(second, PODS).await.len() == 3)
                .then_some(())
        },
    )
    .await;

    let name = wl.name_any();
    env.objects(0, &trainjobs)
        .delete("train", &DeleteParams::background())
        .await
        .expect("delete");
    eventually(WAIT, "every worker clean", || async {
        for i in 1..=WORKERS {
            if env.object(i, &trainjobs, "train").await.is_some()
                || env.replica(i, &name).await.is_some()
                || !env.pods(i, PODS).await.is_empty()
            {
                return false;
            }
        }
        true
    })
    .await;
}

/// A TrainJob queued on a worker directly (no manager): the worker reads its runtime, builds
/// the Workload from it and `numNodes`, admits it and starts it with its flavors as a
/// `runtimePatches` entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainjob_queued_on_a_worker_gets_its_workload_from_its_runtime() {
    let KindEnv {
        env,
        processes: _processes,
        resource: trainjobs,
    } = start(1, None).await;

    env.create_object(1, &trainjobs, trainjob(2, None))
        .await
        .expect("worker TrainJob");
    let wl = eventually(WAIT, "the TrainJob's Workload on the worker", || async {
        owned_workload(&env.worker_workloads(1), "TrainJob", "train").await
    })
    .await;
    assert_eq!(
        pod_set_counts(&wl),
        vec![("node", 2)],
        "the runtime's replicated job, numNodes pods"
    );
    let started = eventually(WAIT, "the TrainJob started", || async {
        env.object(1, &trainjobs, "train")
            .await
            .filter(|j| j.data.pointer("/spec/suspend") == Some(&json!(false)))
    })
    .await;
    assert_eq!(
        started.data.pointer("/spec/runtimePatches/0/manager"),
        Some(&json!("kueue.x-k8s.io/manager")),
        "the flavors as a runtime patch"
    );
    eventually(WAIT, "numNodes pods", || async {
        (env.pods(1, PODS).await.len() == 2).then_some(())
    })
    .await;
    let admitted = owned_workload(&env.worker_workloads(1), "TrainJob", "train")
        .await
        .and_then(|w| w.status)
        .is_some_and(|s| is_condition_true(&s.conditions, condition::ADMITTED));
    assert!(admitted, "its Workload admitted");
}
