//! Kubeflow Trainer TrainJobs (`trainer.kubeflow.org/v1alpha1`, the CRDs as Trainer ships
//! them) through the real `baton manager` (issue 27), manager side: the TrainJob's Workload is
//! built from its ClusterTrainingRuntime and `numNodes` (the trainer step runs `numNodes` pods
//! with the TrainJob's `resourcesPerNode`), only the winner gets a copy (without
//! `managedBy`), the copy's status is mirrored, and deleting the TrainJob cleans every
//! worker. Baton's worker does not start TrainJobs (no `podTemplateOverrides` yet): the test
//! plays the worker's Trainer controller by writing the copy's status.

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::{apply, eventually};
use baton_e2e::integrations::{integrations_dir, shipped_crd};
use baton_e2e::multikueue::Env;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 2;

async fn workload_owned(env: &Env, name: &str) -> Option<Workload> {
    let all = env
        .manager_workloads()
        .list(&ListParams::default())
        .await
        .ok()?;
    all.items.into_iter().find(|w| {
        w.owner_references()
            .iter()
            .any(|o| o.kind == "TrainJob" && o.name == name)
    })
}

/// The runtime of Trainer's examples (`torch-distributed`), as shipped.
fn runtime() -> Value {
    let path = integrations_dir()
        .join("examples")
        .join("trainer-runtime-torch_distributed.yaml");
    let text = std::fs::read_to_string(&path).expect("runtime example");
    serde_saphyr::from_str(&text).expect("runtime YAML")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainjob_gets_its_workload_from_its_runtime_and_runs_its_copy_on_one_worker() {
    let mut env = Env::start(WORKERS).await.expect("env");
    let trainjobs = env
        .install_crd_everywhere(&shipped_crd("trainer.kubeflow.org_trainjobs.yaml").expect("CRD"))
        .await
        .expect("TrainJob CRD");
    env.install_crd_everywhere(
        &shipped_crd("trainer.kubeflow.org_clustertrainingruntimes.yaml").expect("CRD"),
    )
    .await
    .expect("runtime CRD");
    apply(&env.manager_client(), &runtime())
        .await
        .expect("runtime on the manager");
    let mut processes = Vec::new();
    for i in 1..=WORKERS {
        apply(&env.worker_client(i), &runtime())
            .await
            .expect("runtime on a worker");
        env.install_worker_queues(i, 4, json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    processes.push(env.start_manager("gcInterval: 1s\n").expect("manager"));

    env.create_object(0, &trainjobs, json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
            "suspend": true, "managedBy": "kueue.x-k8s.io/multikueue",
            "trainer": {"numNodes": 3, "image": "python:3.11-slim", "resourcesPerNode": {"requests": {"cpu": "1"}}}},
    }))
    .await
    .expect("manager TrainJob");
    let wl = eventually(WAIT, "the TrainJob's Workload", || async {
        workload_owned(&env, "train").await
    })
    .await;
    assert_eq!(
        wl.spec
            .pod_sets
            .iter()
            .map(|p| (p.name.as_str(), p.count))
            .collect::<Vec<_>>(),
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
    let copy = eventually(WAIT, "the copy on the winner", || async {
        env.object(winner, &trainjobs, "train").await
    })
    .await;
    // Removed from the copy; the CRD defaults it to Trainer's own controller.
    assert_eq!(
        copy.data.pointer("/spec/managedBy"),
        Some(&json!("trainer.kubeflow.org/trainjob-controller")),
        "run by the worker's Trainer controller, not MultiKueue"
    );
    assert_eq!(copy.data.pointer("/spec/trainer/numNodes"), Some(&json!(3)));
    assert_eq!(
        env.holders(&trainjobs, "train").await,
        vec![winner],
        "no copy on the loser"
    );

    let status = json!({"jobsStatus": [{"name": "node", "active": 3, "ready": 3, "succeeded": 0, "failed": 0, "suspended": 0}]});
    env.objects(winner, &trainjobs)
        .patch_status(
            "train",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .expect("copy status");
    eventually(
        WAIT,
        "the manager TrainJob's status mirrors the copy's",
        || async {
            let obj = env.object(0, &trainjobs, "train").await?;
            (obj.data.pointer("/status/jobsStatus/0/active") == Some(&json!(3))).then_some(())
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
            {
                return false;
            }
        }
        true
    })
    .await;
}
