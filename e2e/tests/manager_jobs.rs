//! batch/v1 Jobs through MultiKueue, end to end with the real `baton manager` and three real
//! `baton worker` shims: a Job applied on the manager runs on exactly one worker, the manager
//! Job's status follows the copy's, finishing frees the worker's quota and finishes the
//! manager workload, a winner evicted on its worker runs again elsewhere, and deleting the
//! manager Job removes everything it caused on every worker.

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::jobs::{counts, has_condition, is_suspended, multikueue_job};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, PropagationPolicy};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 3;

/// Three workers with 4 CPUs each and their shims, and the manager.
async fn environment() -> (Env, Vec<BatonProcess>) {
    let mut env = Env::start(WORKERS).await.expect("env");
    let mut processes = Vec::new();
    for i in 1..=WORKERS {
        env.install_worker_queues(i, 4, json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    processes.push(
        env.start_manager("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n")
            .expect("manager"),
    );
    (env, processes)
}

/// The manager Workload owned by Job `job`.
async fn workload_of(env: &Env, job: &str) -> Option<Workload> {
    let all = env
        .manager_workloads()
        .list(&ListParams::default())
        .await
        .ok()?;
    all.items.into_iter().find(|w| {
        w.owner_references()
            .iter()
            .any(|o| o.kind == "Job" && o.name == job)
    })
}

/// Waits until Job `job`'s manager workload is admitted; returns the worker index it runs on.
async fn running_on(env: &Env, job: &str) -> usize {
    let cluster = eventually(WAIT, &format!("{job} admitted on a worker"), || async {
        let status = workload_of(env, job).await?.status?;
        is_condition_true(&status.conditions, condition::ADMITTED).then_some(status.cluster_name?)
    })
    .await;
    (1..=WORKERS)
        .find(|&i| env.cluster(i) == cluster)
        .expect("a known worker")
}

/// Which workers hold a copy of Job `job` right now.
async fn copies(env: &Env, job: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for i in 1..=WORKERS {
        if env.job(i, job).await.is_some() {
            found.push(i);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_exactly_one_worker_and_its_status_follows() {
    let (env, _processes) = environment().await;
    env.create_job(0, multikueue_job("train", &env.namespace, 2, 1, 4, 1))
        .await
        .expect("manager Job");

    let winner = running_on(&env, "train").await;
    // The copy runs there, unsuspended by the worker's shim, with two pods.
    let copy = eventually(WAIT, "the copy running on the winner", || async {
        env.job(winner, "train")
            .await
            .filter(|j| !is_suspended(j) && counts(j).0 == 2)
    })
    .await;
    assert_eq!(
        copy.spec.as_ref().and_then(|s| s.managed_by.clone()),
        None,
        "the copy is run by the worker's job controller"
    );
    assert_eq!(
        copies(&env, "train").await,
        vec![winner],
        "no copy on losers"
    );
    assert_eq!(env.job_pods(winner, "train").await.len(), 2);
    // The manager Job tells what runs.
    eventually(WAIT, "the manager Job shows 2 active pods", || async {
        env.job(0, "train").await.filter(|j| counts(j).0 == 2)
    })
    .await;

    // Finishing: the manager Job completes, its workload finishes, the copy goes, and the
    // worker's quota is free again.
    let done = eventually(WAIT, "the manager Job complete", || async {
        env.job(0, "train")
            .await
            .filter(|j| has_condition(j, "Complete"))
    })
    .await;
    assert_eq!(counts(&done).3, 2, "two pods succeeded");
    eventually(WAIT, "the manager workload finished", || async {
        let status = workload_of(&env, "train").await?.status?;
        is_condition_true(&status.conditions, condition::FINISHED).then_some(())
    })
    .await;
    eventually(WAIT, "the copy removed", || async {
        copies(&env, "train").await.is_empty().then_some(())
    })
    .await;
    // The whole worker is free: a 4-CPU Job runs there now.
    env.create_job(0, multikueue_job("next", &env.namespace, 4, 1, 60, 1))
        .await
        .expect("next Job");
    running_on(&env, "next").await;
    assert!(
        copies(&env, "train").await.is_empty(),
        "never a copy of a finished Job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_winner_evicted_on_its_worker_runs_again_elsewhere() {
    let (env, _processes) = environment().await;
    env.create_job(0, multikueue_job("long", &env.namespace, 4, 1, 600, 1))
        .await
        .expect("manager Job");
    let first = running_on(&env, "long").await;
    eventually(WAIT, "the copy running", || async {
        env.job(first, "long").await.filter(|j| counts(j).0 == 4)
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
    let second = eventually(WAIT, "long running on another worker", || async {
        let status = workload_of(&env, "long").await?.status?;
        let cluster = status.cluster_name?;
        let i = (1..=WORKERS).find(|&i| env.cluster(i) == cluster)?;
        (i != first && is_condition_true(&status.conditions, condition::ADMITTED)).then_some(i)
    })
    .await;
    eventually(WAIT, "the copy running on the new winner", || async {
        env.job(second, "long").await.filter(|j| counts(j).0 == 4)
    })
    .await;
    eventually(WAIT, "only the new winner holds a copy", || async {
        (copies(&env, "long").await == vec![second]).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_manager_job_cleans_every_worker() {
    let (env, _processes) = environment().await;
    env.create_job(0, multikueue_job("gone", &env.namespace, 2, 1, 600, 1))
        .await
        .expect("manager Job");
    let winner = running_on(&env, "gone").await;
    let workload = workload_of(&env, "gone")
        .await
        .expect("workload")
        .name_any();
    eventually(WAIT, "pods on the winner", || async {
        (env.job_pods(winner, "gone").await.len() == 2).then_some(())
    })
    .await;

    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    env.manager_jobs()
        .delete("gone", &params)
        .await
        .expect("delete");
    eventually(WAIT, "everything gone on every worker", || async {
        for i in 1..=WORKERS {
            if env.replica(i, &workload).await.is_some()
                || env.job(i, "gone").await.is_some()
                || !env.job_pods(i, "gone").await.is_empty()
            {
                return None;
            }
        }
        workload_of(&env, "gone").await.is_none().then_some(())
    })
    .await;
}
