//! `ungatingPolicy: LeastDisruption` through the real `baton manager` binary: when workers
//! signal within the collection window, the one whose preemption evicts least gets the gate,
//! even when it signalled later; under FCFS the first signaller does. Tests play the workers'
//! schedulers and write `status.preemptionCost` as Baton's shim does.

use std::time::Duration;

use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, PreemptionCost, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::multikueue::Env;
use chrono::{DateTime, Utc};

const WAIT: Duration = Duration::from_secs(20);

fn config(policy: &str, window: &str) -> String {
    format!(
        "singleClusterPreemptionTimeout: 60s\nungatingPolicy: {policy}\nleastDisruptionWindow: {window}\nworkerLostTimeout: 60s\ngcInterval: 1s\n"
    )
}

fn cost(victims: i32, highest_priority: i32, pods: i64) -> PreemptionCost {
    PreemptionCost {
        victims,
        highest_priority,
        pods,
        stop_seconds: None,
    }
}

/// Worker `i` signals `PreemptionGated` and, as Baton's shim does in the same write, what the
/// preemption would cost (`None`: an upstream Kueue worker, which writes no cost).
async fn signal(env: &Env, i: usize, name: &str, at: DateTime<Utc>, cost: Option<PreemptionCost>) {
    env.update_replica_status(i, name, |s| {
        set_condition(
            &mut s.conditions,
            NewCondition::new(
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::True,
                reason::PREEMPTION_GATED,
                "needs to preempt",
            ),
            at,
        );
        s.preemption_cost = cost;
    })
    .await
    .unwrap_or_else(|e| panic!("worker-{i} signals: {e}"));
}

async fn submitted(env: &Env, name: &str) {
    env.submit(name, 1).await.expect("submit");
    for i in 1..=env.worker_count() {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, name).await
        })
        .await;
    }
}

async fn gate(env: &Env, i: usize, name: &str) -> Option<GateState> {
    env.replica(i, name)
        .await
        .and_then(|r| gate_state(&r, MULTIKUEUE_GATE))
}

async fn opened(env: &Env, i: usize, name: &str) -> Workload {
    eventually(WAIT, &format!("gate open on worker-{i}"), || async {
        env.replica(i, name)
            .await
            .filter(|r| gate_state(r, MULTIKUEUE_GATE) == Some(GateState::Open))
    })
    .await
}

/// Every gate of `name` other than `open` is still Closed.
async fn only_open(env: &Env, name: &str, open: usize) {
    for i in (1..=env.worker_count()).filter(|&i| i != open) {
        assert_eq!(
            gate(env, i, name).await,
            Some(GateState::Closed),
            "worker-{i}'s gate must stay Closed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_later_but_cheaper_worker_gets_the_gate_after_the_window() {
    let mut env = Env::start(3).await.expect("env");
    let manager = env
        .start_manager(&config("LeastDisruption", "3s"))
        .expect("manager");
    submitted(&env, "job").await;

    // worker-1 first, needing 3 victims; worker-2 a second later, needing 1; worker-3 never
    // signals (it holds the window open until it ends).
    let t0 = Utc::now();
    signal(&env, 1, "job", t0, Some(cost(3, 10, 6))).await;
    signal(
        &env,
        2,
        "job",
        t0 + chrono::Duration::seconds(1),
        Some(cost(1, 10, 2)),
    )
    .await;

    opened(&env, 2, "job").await;
    let waited = Utc::now() - t0;
    assert!(
        waited >= chrono::Duration::seconds(3),
        "opened only once the 3s window had passed (after {waited})"
    );
    only_open(&env, "job", 2).await;
    // Nothing else opens within the timeout: the manager looks at the workload again, with
    // worker-1 still signalling, and leaves its gate closed.
    env.manager_reconciled(&manager, "job").await;
    only_open(&env, "job", 2).await;

    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    assert!(
        described.contains(&format!(
            "opened preemption gate on {}: least disruptive of 2 signalling clusters (1 victim, highest priority 10, 2 pods); signalled at",
            env.cluster(2)
        )),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_worker_has_signalled_the_cheapest_is_opened_without_waiting_out_the_window() {
    let mut env = Env::start(2).await.expect("env");
    // A window far longer than the test's patience: only "everyone signalled" can end it.
    let _manager = env
        .start_manager(&config("LeastDisruption", "30s"))
        .expect("manager");
    submitted(&env, "job").await;
    let t0 = Utc::now();
    signal(&env, 1, "job", t0, Some(cost(1, 50, 1))).await;
    // Same number of victims, lower priority: worker-2 is cheaper.
    signal(
        &env,
        2,
        "job",
        t0 + chrono::Duration::seconds(1),
        Some(cost(1, 5, 4)),
    )
    .await;
    opened(&env, 2, "job").await;
    assert!(Utc::now() - t0 < chrono::Duration::seconds(20));
    only_open(&env, "job", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_fcfs_the_first_signaller_gets_the_gate_whatever_it_costs() {
    let mut env = Env::start(3).await.expect("env");
    let manager = env.start_manager(&config("FCFS", "3s")).expect("manager");
    submitted(&env, "job").await;
    let t0 = Utc::now();
    signal(&env, 1, "job", t0, Some(cost(3, 10, 6))).await;
    signal(
        &env,
        2,
        "job",
        t0 + chrono::Duration::seconds(1),
        Some(cost(1, 10, 2)),
    )
    .await;
    opened(&env, 1, "job").await;
    // Once the 3s window (which FCFS ignores) has ended, when LeastDisruption would open the
    // cheaper worker-2, the manager looks at the workload again: only worker-1 is open. The
    // window cannot be checked before it ends.
    let window_end = t0 + chrono::Duration::seconds(3);
    if let Ok(left) = (window_end - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
    env.manager_reconciled(&manager, "job").await;
    only_open(&env, "job", 1).await;
    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    assert!(
        described.contains(&format!(
            "opened preemption gate on {}; signalled first at",
            env.cluster(1)
        )),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_a_cost_makes_least_disruption_first_come_first_served() {
    let mut env = Env::start(3).await.expect("env");
    let _manager = env
        .start_manager(&config("LeastDisruption", "30s"))
        .expect("manager");
    submitted(&env, "job").await;
    let t0 = Utc::now();
    // worker-1 behaves as upstream Kueue: a signal, no cost.
    signal(&env, 1, "job", t0, None).await;
    signal(
        &env,
        2,
        "job",
        t0 + chrono::Duration::seconds(1),
        Some(cost(0, 0, 0)),
    )
    .await;
    // First come, first served at once: no 30s window.
    opened(&env, 1, "job").await;
    only_open(&env, "job", 1).await;
    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    assert!(
        described.contains("reports no preemption cost, so first come, first served"),
        "{described}"
    );
}

/// With real `baton worker` shims: three 4-CPU workers, worker-2 a little less full. A 2-CPU
/// high-priority workload needs two victims on workers 1 and 3 but one on worker-2, so
/// whoever signals first, LeastDisruption gives worker-2 the gate and only it evicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_shims_report_their_cost_and_the_least_full_worker_preempts() {
    const SHIM_WAIT: Duration = Duration::from_secs(30);
    let mut env = Env::start(3).await.expect("env");
    let mut processes = Vec::new();
    for i in 1..=3 {
        env.install_worker_queues(i, 4, serde_json::json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    let fill = [4, 3, 4];
    for (i, n) in (1..=3).zip(fill) {
        env.fill_worker(i, n, SHIM_WAIT).await;
    }
    processes.push(
        env.start_manager(&config("LeastDisruption", "5s"))
            .expect("manager"),
    );
    env.submit_with_priority("high", 2, Some(1000))
        .await
        .expect("submit");
    let cluster = eventually(SHIM_WAIT, "high admitted on the manager", || async {
        let status = env
            .manager_workloads()
            .get_opt("high")
            .await
            .ok()
            .flatten()?
            .status?;
        let cluster = status.cluster_name.clone()?;
        baton_crds::conditions::is_condition_true(&status.conditions, condition::ADMITTED)
            .then_some(cluster)
    })
    .await;
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    if cluster != env.cluster(2) {
        for p in &processes {
            eprintln!(
                "--- {}\n{}",
                p.log.display(),
                std::fs::read_to_string(&p.log).unwrap_or_default()
            );
        }
    }
    assert_eq!(cluster, env.cluster(2), "{described}");
    assert!(
        described.contains("least disruptive of")
            && described.contains("(1 victim, highest priority 0, 1 pod)"),
        "{described}"
    );
    let mut evicted = Vec::new();
    for (i, n) in (1..=3).zip(fill) {
        evicted.push(env.count_low(i, n, baton_e2e::workers::is_evicted).await);
    }
    assert_eq!(evicted, vec![0, 1, 0], "only worker-2 evicts, one victim");
    // Admitted: the winner's replica no longer carries a cost.
    let winner = env.replica(2, "high").await.expect("winner's replica");
    assert_eq!(
        winner.status.as_ref().and_then(|s| s.preemption_cost),
        None,
        "the cost is cleared once the replica is no longer gated"
    );
}
