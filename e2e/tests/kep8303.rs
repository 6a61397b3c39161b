//! KEP-8303 end to end, through the real `baton manager` and three real `baton worker`
//! shims: every worker is full of low-priority work; one high-priority workload submitted on
//! the manager preempts on exactly one worker and runs there; no other worker evicts anything.
//! The same scenario without orchestration shows the waste Baton prevents.

use std::time::Duration;

use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);
const WORKERS: usize = 3;

/// Three workers with 4 CPUs each, each filled with four 1-CPU low-priority workloads.
async fn full_workers(orchestrated: bool) -> (Env, Vec<BatonProcess>) {
    let mut env = Env::start(WORKERS).await.expect("env");
    let mut processes = Vec::new();
    for i in 1..=WORKERS {
        env.install_worker_queues(i, 4, json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    for i in 1..=WORKERS {
        env.fill_worker(i, 4, WAIT).await;
    }
    let config = format!(
        "orchestratedPreemption: {orchestrated}\nsingleClusterPreemptionTimeout: 60s\ngcInterval: 1s\n"
    );
    processes.push(env.start_manager(&config).expect("manager"));
    (env, processes)
}

/// Submits the high-priority 2-CPU workload on the manager.
async fn submit_high(env: &Env) {
    env.submit_with_priority("high", 2, Some(1000))
        .await
        .expect("submit");
}

/// How many low-priority workloads each worker evicted.
async fn evictions(env: &Env) -> Vec<usize> {
    let mut counts = Vec::new();
    for i in 1..=WORKERS {
        counts.push(env.count_low(i, 4, is_evicted).await);
    }
    counts
}

/// Waits until the manager's workload is admitted and returns the worker it runs on.
async fn admitted_on(env: &Env) -> String {
    eventually(WAIT, "high admitted on the manager", || async {
        let wl = env
            .manager_workloads()
            .get_opt("high")
            .await
            .ok()
            .flatten()?;
        let status = wl.status?;
        let cluster = status.cluster_name.clone()?;
        baton_crds::conditions::is_condition_true(&status.conditions, "Admitted").then_some(cluster)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_high_priority_workload_preempts_on_exactly_one_worker() {
    let (env, processes) = full_workers(true).await;
    submit_high(&env).await;
    let cluster = admitted_on(&env).await;
    let winner: usize = cluster
        .strip_prefix("worker-")
        .and_then(|i| i.split('-').next())
        .and_then(|i| i.parse().ok())
        .expect("a worker name");
    // The other replicas are removed, and the winner holds the high workload.
    eventually(WAIT, "losing replicas removed", || async {
        for i in (1..=WORKERS).filter(|i| *i != winner) {
            if env.replica(i, "high").await.is_some() {
                return None;
            }
        }
        Some(())
    })
    .await;
    let replica = env.replica(winner, "high").await.expect("winner's replica");
    assert!(is_admitted(&replica));
    // Give any stray preemption time to show before counting (the losers' replicas are
    // gone, so none can start now).
    let counts = evictions(&env).await;
    println!("evictions per worker with orchestration: {counts:?}");
    let preempting_clusters = counts.iter().filter(|n| **n > 0).count();
    if preempting_clusters != 1 {
        // Say who evicted what, and what the manager did, before failing.
        for i in 1..=WORKERS {
            eprintln!(
                "--- worker-{i}\n{}",
                env.kubectl(&format!("worker-{i}"), &["get", "kwl", "-o", "yaml"])
            );
        }
        eprintln!(
            "--- manager\n{}",
            env.kubectl("manager", &["describe", "kwl", "high"])
        );
        for p in &processes {
            eprintln!(
                "--- {}\n{}",
                p.log.display(),
                std::fs::read_to_string(&p.log).unwrap_or_default()
            );
        }
    }
    assert_eq!(preempting_clusters, 1, "{counts:?}");
    assert_eq!(
        counts[winner - 1],
        2,
        "two 1-CPU victims make room for 2 CPUs: {counts:?}"
    );
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    assert!(described.contains("PreemptionGateOpened"), "{described}");
    // The manager saw nothing wasted: the losers never held their gate open or any quota.
    let metrics = processes[WORKERS].metrics();
    assert!(
        metrics.contains("baton_preemption_gates_opened_total"),
        "{metrics}"
    );
    let wasted: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("baton_wasted_preemptions_total") && !l.ends_with(" 0"))
        .collect();
    assert!(wasted.is_empty(), "{wasted:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_orchestration_every_worker_may_preempt_for_nothing() {
    let (env, processes) = full_workers(false).await;
    submit_high(&env).await;
    admitted_on(&env).await;
    let counts = evictions(&env).await;
    println!("evictions per worker without orchestration: {counts:?}");
    // Scrape a moment later: the losers' replicas are being removed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let wasted = |p: &BatonProcess, prefix: &str| -> Vec<String> {
        p.metrics()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect()
    };
    println!(
        "manager: {:?}",
        wasted(&processes[WORKERS], "baton_wasted_preemptions_total")
    );
    for (i, worker) in processes.iter().take(WORKERS).enumerate() {
        println!(
            "worker-{}: {:?}",
            i + 1,
            wasted(worker, "baton_worker_wasted_preemptions_total")
        );
    }
    // Every replica could preempt at once; at least the winner did.
    assert!(counts.iter().filter(|n| **n > 0).count() >= 1, "{counts:?}");
    // Once the losing replicas are removed, their victims get their quota back at once
    // (well within the shim's periodic resync).
    let winner = admitted_on(&env).await;
    for i in 1..=WORKERS {
        if winner.starts_with(&format!("worker-{i}")) {
            continue;
        }
        let all_back = baton_e2e::harness::poll(Duration::from_secs(5), || async {
            env.count_low(i, 4, is_admitted).await == 4
        })
        .await;
        if all_back.is_err() {
            let worker = format!("worker-{i}");
            panic!(
                "{worker} did not re-admit its victims within 5s:\n{}\n{}",
                env.kubectl(&worker, &["get", "kwl", "-o", "yaml"]),
                processes[i - 1].log_text()
            );
        }
    }
}
