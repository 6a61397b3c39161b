//! JobSets (`jobset.x-k8s.io/v1alpha2`, the CRD as the JobSet project ships it) end to end
//! with the real `baton manager` and real `baton worker` shims (issue 27), on the testbed's
//! stand-in JobSet controller (child Jobs, their pods through the job controller and kubelet
//! models, `replicatedJobsStatus` and conditions). What is checked:
//!
//! - a JobSet applied on the manager gets a manager Workload with a pod set per replicated
//!   job, runs on exactly one worker (its copy without `managedBy`, bound to the replica,
//!   started there by the worker's integration with the flavor), the manager JobSet
//!   unsuspended while admitted and its status following the copy's; completion finishes
//!   the workload and removes the copy;
//! - a winner evicted on its worker runs again elsewhere;
//! - deleting the manager JobSet cleans every worker;
//! - on a worker, preemption suspends the victim JobSet and its quota is freed only once its
//!   Jobs are no longer active;
//!
//! The chart's admission policy for JobSets is checked with the other kinds' in
//! `integrations_policies.rs`.

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::integrations::{
    KindEnv, KindSetup, Timing, is_suspended, one_worker, owned_workload, pod_set_counts,
    queued_jobset, shipped_crd, timed_jobset,
};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use kube::ResourceExt;
use kube::api::{ApiResource, DeleteParams, PropagationPolicy};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 3;
const CRD: &str = "jobset.x-k8s.io_jobsets.yaml";

/// Three workers with 4 CPUs each and their shims, the JobSet CRD everywhere, and the manager
/// (which finds the JobSet integration on: the CRD is served).
async fn environment() -> (Env, Vec<BatonProcess>, ApiResource) {
    KindSetup {
        workers: WORKERS,
        crds: &[shipped_crd(CRD).expect("the shipped JobSet CRD")],
        objects: &[],
        manager: Some("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n"),
    }
    .parts()
    .await
}

/// The manager Workload owned by JobSet `name`.
async fn workload_of(env: &Env, name: &str) -> Option<Workload> {
    owned_workload(&env.manager_workloads(), "JobSet", name).await
}

/// Waits until JobSet `name`'s manager workload is admitted; the worker it runs on.
async fn running_on(env: &Env, name: &str, not: Option<usize>) -> usize {
    eventually(WAIT, &format!("{name} admitted on a worker"), || async {
        let status = workload_of(env, name).await?.status?;
        let cluster = status.cluster_name?;
        let i = (1..=WORKERS).find(|&i| env.cluster(i) == cluster)?;
        (Some(i) != not && is_condition_true(&status.conditions, condition::ADMITTED)).then_some(i)
    })
    .await
}

/// The selector of JobSet `name`'s pods.
fn pods_of(name: &str) -> String {
    format!("jobset.sigs.k8s.io/jobset-name={name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobset_runs_on_exactly_one_worker_and_its_status_follows() {
    let (env, _processes, jobsets) = environment().await;
    let quick = Timing {
        run_seconds: 4,
        grace_seconds: 0,
    };
    env.create_object(0, &jobsets, timed_jobset("train", 2, 1, 2, true, quick))
        .await
        .expect("manager JobSet");
    let wl = eventually(WAIT, "the manager Workload", || async {
        workload_of(&env, "train").await
    })
    .await;
    assert!(
        wl.name_any().starts_with("jobset-train-"),
        "{}",
        wl.name_any()
    );
    assert_eq!(
        pod_set_counts(&wl),
        vec![("workers", 2)],
        "a pod set per replicated job: 2 replicas x 1 pod"
    );

    let winner = running_on(&env, "train", None).await;
    let copy = eventually(WAIT, "the copy started on the winner", || async {
        env.object(winner, &jobsets, "train")
            .await
            .filter(|j| !is_suspended(j))
    })
    .await;
    assert_eq!(
        copy.data.pointer("/spec/managedBy"),
        None,
        "run by the worker's JobSet controller"
    );
    assert_eq!(
        copy.labels().get("kueue.x-k8s.io/prebuilt-workload-name"),
        Some(&wl.name_any())
    );
    assert_eq!(
        env.holders(&jobsets, "train").await,
        vec![winner],
        "no copy on losers"
    );
    eventually(
        WAIT,
        "the manager JobSet unsuspended while admitted",
        || async {
            env.object(0, &jobsets, "train")
                .await
                .filter(|j| !is_suspended(j))
        },
    )
    .await;

    eventually(WAIT, "2 pods running on the winner", || async {
        (env.pods(winner, &pods_of("train")).await.len() == 2).then_some(())
    })
    .await;
    for i in (1..=WORKERS).filter(|&i| i != winner) {
        assert!(
            env.pods(i, &pods_of("train")).await.is_empty(),
            "pods on a loser"
        );
    }
    eventually(WAIT, "the manager JobSet shows 2 active Jobs", || async {
        let obj = env.object(0, &jobsets, "train").await?;
        (obj.data.pointer("/status/replicatedJobsStatus/0/active") == Some(&json!(2))).then_some(())
    })
    .await;

    eventually(WAIT, "the manager JobSet completed", || async {
        let obj = env.object(0, &jobsets, "train").await?;
        let conditions = obj.data.pointer("/status/conditions")?.as_array()?.clone();
        conditions
            .iter()
            .any(|c| c["type"] == "Completed" && c["status"] == "True")
            .then_some(())
    })
    .await;
    eventually(WAIT, "the manager workload finished", || async {
        let status = workload_of(&env, "train").await?.status?;
        is_condition_true(&status.conditions, condition::FINISHED).then_some(())
    })
    .await;
    eventually(WAIT, "the copy removed", || async {
        env.holders(&jobsets, "train").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winner_evicted_on_its_worker_runs_again_elsewhere() {
    let (env, _processes, jobsets) = environment().await;
    env.create_object(0, &jobsets, queued_jobset("long", 2, 1, 2, true))
        .await
        .expect("manager JobSet");
    let first = running_on(&env, "long", None).await;
    eventually(WAIT, "the copy started", || async {
        env.object(first, &jobsets, "long")
            .await
            .filter(|j| !is_suspended(j))
    })
    .await;
    // Local work of higher priority takes the whole worker: the copy is preempted there.
    env.submit_on_worker(first, "local", 4, 1000, json!({}))
        .await
        .expect("local workload");
    eventually(WAIT, "the local workload admitted", || async {
        env.worker_workload(first, "local")
            .await
            .filter(is_admitted)
    })
    .await;
    let second = running_on(&env, "long", Some(first)).await;
    eventually(WAIT, "the copy started on the new winner", || async {
        env.object(second, &jobsets, "long")
            .await
            .filter(|j| !is_suspended(j))
    })
    .await;
    eventually(WAIT, "only the new winner holds a copy", || async {
        env.holders(&jobsets, "long").await == vec![second]
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_manager_jobset_cleans_every_worker() {
    let (env, _processes, jobsets) = environment().await;
    env.create_object(0, &jobsets, queued_jobset("gone", 1, 2, 1, true))
        .await
        .expect("manager JobSet");
    let winner = running_on(&env, "gone", None).await;
    let workload = workload_of(&env, "gone")
        .await
        .expect("workload")
        .name_any();
    eventually(WAIT, "the copy on the winner", || async {
        env.object(winner, &jobsets, "gone").await
    })
    .await;
    env.objects(0, &jobsets)
        .delete(
            "gone",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..Default::default()
            },
        )
        .await
        .expect("delete");
    eventually(WAIT, "everything gone on every worker", || async {
        for i in 1..=WORKERS {
            if env.replica(i, &workload).await.is_some()
                || env.object(i, &jobsets, "gone").await.is_some()
            {
                return None;
            }
        }
        workload_of(&env, "gone").await.is_none().then_some(())
    })
    .await;
}

/// The Workload on worker `i` owned by JobSet `name`.
async fn worker_workload_of(env: &Env, i: usize, name: &str) -> Option<Workload> {
    owned_workload(&env.worker_workloads(i), "JobSet", name).await
}

fn holds_quota(wl: &Workload) -> bool {
    wl.status.as_ref().is_some_and(|s| s.admission.is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_suspends_a_jobset_and_frees_its_quota_only_once_its_pods_are_gone() {
    let KindEnv {
        env,
        processes: _worker,
        resource: jobsets,
    } = one_worker(&shipped_crd(CRD).expect("CRD")).await;
    // Pods that take 3 s to stop once deleted.
    let slow_stop = Timing {
        run_seconds: 600,
        grace_seconds: 3,
    };
    env.create_object(
        1,
        &jobsets,
        timed_jobset("victim", 2, 1, 2, false, slow_stop),
    )
    .await
    .expect("JobSet");
    eventually(WAIT, "the JobSet's 2 pods running", || async {
        let started = env
            .object(1, &jobsets, "victim")
            .await
            .is_some_and(|j| !is_suspended(&j));
        (started && env.pods(1, &pods_of("victim")).await.len() == 2).then_some(())
    })
    .await;
    let wl = worker_workload_of(&env, 1, "victim")
        .await
        .expect("its Workload");
    assert_eq!(wl.spec.pod_sets[0].count, 2);

    env.submit_on_worker(1, "urgent", 4, 1000, json!({}))
        .await
        .expect("urgent");
    eventually(WAIT, "the victim JobSet suspended", || async {
        env.object(1, &jobsets, "victim").await.filter(is_suspended)
    })
    .await;
    // Until the preemptor is admitted, every look checks that it was not admitted while a
    // victim pod was still there (the pods cannot come back: the JobSet is suspended).
    let saw_pods = std::sync::atomic::AtomicBool::new(false);
    eventually(WAIT, "the preemptor admitted", || async {
        let admitted = env
            .worker_workload(1, "urgent")
            .await
            .is_some_and(|w| is_admitted(&w));
        let pods = env.pods(1, &pods_of("victim")).await;
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
    let released = worker_workload_of(&env, 1, "victim")
        .await
        .expect("workload");
    assert!(!holds_quota(&released));
}
