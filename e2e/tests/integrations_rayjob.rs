//! RayJobs (`ray.io/v1`, the CRD as KubeRay ships it) end to end with the real `baton
//! manager` and real `baton worker` shims (issue 27), on the testbed's stand-in KubeRay
//! controller (head and worker pods, `jobDeploymentStatus` and `jobStatus`). What is checked:
//!
//! - a RayJob applied on the manager gets a Workload with pod sets `head` (1) and one per
//!   worker group, runs on exactly one worker (started there by the worker's integration),
//!   its `jobStatus` and `jobDeploymentStatus` are mirrored on the manager, and its completion
//!   finishes the workload and removes the copy; deleting another one cleans every worker;
//! - a winner evicted on its worker runs again on the other;
//! - on a worker, preemption suspends the victim RayJob, and its quota is freed only once its
//!   pods are gone (KubeRay reports `Suspending`, then `Suspended`).

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::integrations::{
    KindEnv, KindSetup, LONG, Timing, is_suspended, one_worker, owned_workload, pod_set_counts,
    queued_rayjob, shipped_crd,
};
use baton_e2e::workers::is_admitted;
use kube::ResourceExt;
use kube::api::DeleteParams;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 2;
const CRD: &str = "ray.io_rayjobs.yaml";

async fn workload_owned(api: &kube::Api<Workload>, name: &str) -> Option<Workload> {
    owned_workload(api, "RayJob", name).await
}

/// Two workers and their shims, the RayJob CRD everywhere, and the manager.
async fn environment() -> KindEnv {
    KindSetup {
        workers: WORKERS,
        crds: &[shipped_crd(CRD).expect("RayJob CRD")],
        objects: &[],
        manager: Some("gcInterval: 1s\n"),
    }
    .start()
    .await
    .expect("environment")
}

/// The selector of RayJob pods (head and workers).
const RAY_PODS: &str = "ray.io/node-type";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rayjob_runs_on_exactly_one_worker_and_its_status_follows() {
    let KindEnv {
        env,
        processes: _processes,
        resource: rayjobs,
    } = environment().await;
    env.create_object(
        0,
        &rayjobs,
        queued_rayjob(
            "ray",
            2,
            1,
            true,
            Timing {
                run_seconds: 4,
                grace_seconds: 0,
            },
        ),
    )
    .await
    .expect("manager RayJob");
    let wl = eventually(WAIT, "the manager Workload", || async {
        workload_owned(&env.manager_workloads(), "ray").await
    })
    .await;
    assert_eq!(pod_set_counts(&wl), vec![("head", 1), ("workers", 2)]);
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

    eventually(WAIT, "head and 2 workers running on the winner", || async {
        (env.pods(winner, RAY_PODS).await.len() == 3).then_some(())
    })
    .await;
    assert!(
        env.pods(3 - winner, RAY_PODS).await.is_empty(),
        "pods on the loser"
    );
    eventually(WAIT, "the manager RayJob shows Running", || async {
        let obj = env.object(0, &rayjobs, "ray").await?;
        (obj.data.pointer("/status/jobDeploymentStatus") == Some(&json!("Running"))
            && obj.data.pointer("/status/jobStatus") == Some(&json!("RUNNING")))
        .then_some(())
    })
    .await;
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
    env.create_object(0, &rayjobs, queued_rayjob("gone", 1, 1, true, LONG))
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
async fn preemption_suspends_a_rayjob_and_frees_its_quota_only_once_its_pods_are_gone() {
    let KindEnv {
        env,
        processes: _worker,
        resource: rayjobs,
    } = one_worker(&shipped_crd(CRD).expect("CRD")).await;
    let slow_stop = Timing {
        run_seconds: 600,
        grace_seconds: 3,
    };
    env.create_object(1, &rayjobs, queued_rayjob("victim", 1, 1, false, slow_stop))
        .await
        .expect("RayJob");
    eventually(WAIT, "the RayJob's head and worker running", || async {
        let started = env
            .object(1, &rayjobs, "victim")
            .await
            .is_some_and(|j| !is_suspended(&j));
        (started && env.pods(1, RAY_PODS).await.len() == 2).then_some(())
    })
    .await;
    env.submit_on_worker(1, "urgent", 4, 1000, json!({}))
        .await
        .expect("urgent");
    eventually(WAIT, "the victim RayJob suspended", || async {
        env.object(1, &rayjobs, "victim").await.filter(is_suspended)
    })
    .await;
    let saw_pods = std::sync::atomic::AtomicBool::new(false);
    eventually(WAIT, "the preemptor admitted", || async {
        let admitted = env
            .worker_workload(1, "urgent")
            .await
            .is_some_and(|w| is_admitted(&w));
        let pods = env.pods(1, RAY_PODS).await;
        assert!(
            !admitted || pods.is_empty(),
            "the preemptor was admitted while {} victim pods remained",
            pods.len()
        );
        if !pods.is_empty() {
            saw_pods.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        admitted
    })
    .await;
    assert!(
        saw_pods.load(std::sync::atomic::Ordering::Relaxed),
        "the victim's pods were never seen stopping (the check saw nothing)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winner_evicted_on_its_worker_runs_again_elsewhere() {
    let KindEnv {
        env,
        processes: _processes,
        resource: rayjobs,
    } = environment().await;
    env.create_object(0, &rayjobs, queued_rayjob("long", 1, 2, true, LONG))
        .await
        .expect("manager RayJob");
    let first = eventually(WAIT, "the copy started somewhere", || async {
        for i in 1..=WORKERS {
            if env
                .object(i, &rayjobs, "long")
                .await
                .is_some_and(|j| !is_suspended(&j))
            {
                return Some(i);
            }
        }
        None
    })
    .await;
    env.submit_on_worker(first, "local", 4, 1000, json!({}))
        .await
        .expect("local workload");
    let second = 3 - first;
    eventually(
        WAIT,
        "the copy started on the other worker, and only there",
        || async {
            let started = env
                .object(second, &rayjobs, "long")
                .await
                .is_some_and(|j| !is_suspended(&j));
            (started && env.holders(&rayjobs, "long").await == vec![second]).then_some(())
        },
    )
    .await;
    eventually(WAIT, "its pods there", || async {
        (env.pods(second, RAY_PODS).await.len() == 2).then_some(())
    })
    .await;
}
