//! KEP-8303 through the real `baton manager` binary: the manager passes the right to preempt
//! to one worker at a time, first come first served, and passes it on only after
//! `singleClusterPreemptionTimeout`. Tests play the workers' schedulers.

use std::time::Duration;

use baton_crds::constants::MULTIKUEUE_GATE;
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::multikueue::{Env, connected, reconciled_after};
use chrono::Utc;
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};

const WAIT: Duration = Duration::from_secs(20);

fn config(timeout_secs: u64) -> String {
    format!(
        "singleClusterPreemptionTimeout: {timeout_secs}s\nworkerLostTimeout: 60s\ngcInterval: 1s\n"
    )
}

async fn replicas(env: &Env, name: &str) {
    for i in 1..=env.worker_count() {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, name).await
        })
        .await;
    }
}

/// Submits `job`, waits for its replicas, and has `first` then `second` signal a second apart.
async fn two_signal(env: &Env, first: usize, second: usize) {
    env.submit("job", 1).await.expect("submit");
    replicas(env, "job").await;
    let t0 = Utc::now();
    env.signal_gated(first, "job", t0)
        .await
        .expect("first signal");
    env.signal_gated(second, "job", t0 + chrono::Duration::seconds(1))
        .await
        .expect("second signal");
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

/// Waits until `timeout` has passed since `since` (an opening the test observed, so no earlier
/// than the manager's): a wall-clock timer cannot be checked any sooner. What follows is a
/// reconcile the test waits for, never an assertion straight after the wait.
async fn wait_out(since: tokio::time::Instant, timeout: Duration) {
    tokio::time::sleep_until(since + timeout).await;
}

/// Counts the manager's PreemptionGateOpened events for a workload (via kubectl, as a user would).
fn openings(env: &Env, name: &str) -> usize {
    let described = env.kubectl("manager", &["describe", "kwl", name]);
    described
        .lines()
        .filter(|l| l.contains("PreemptionGateOpened"))
        .map(|l| {
            // "Normal  PreemptionGateOpened  3s (x2 over 5s)  ..." counts twice.
            l.split("(x")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(1)
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kep_sequence_one_gate_at_a_time_then_the_timeout_passes_the_baton() {
    let mut env = Env::start(3).await.expect("env");
    let manager = env.start_manager(&config(3)).expect("manager");
    env.submit("job", 1).await.expect("submit");
    replicas(&env, "job").await;

    let t0 = Utc::now();
    env.signal_gated(2, "job", t0)
        .await
        .expect("worker-2 signals first");
    env.signal_gated(1, "job", t0 + chrono::Duration::seconds(1))
        .await
        .expect("worker-1 signals second");

    let first = opened(&env, 2, "job").await;
    let opened_at = Utc::now();
    assert_eq!(
        gate(&env, 1, "job").await,
        Some(GateState::Closed),
        "only the first signaller is opened"
    );
    assert_eq!(gate(&env, 3, "job").await, Some(GateState::Closed));
    let entry = &first.status.as_ref().expect("status").preemption_gates[0];
    assert_eq!(
        (entry.state, entry.position),
        (Some(GateState::Open), Some(GateState::Open)),
        "both fields written"
    );

    // Within the timeout the manager looks at the workload again (worker-1's signal is in
    // view: it was written before the opening) and leaves worker-1 waiting.
    env.manager_reconciled(&manager, "job").await;
    assert!(
        Utc::now() - opened_at < chrono::Duration::seconds(3),
        "the manager looked again within the timeout (else the check below means nothing)"
    );
    assert_eq!(
        gate(&env, 1, "job").await,
        Some(GateState::Closed),
        "no second opening within the timeout"
    );

    // Worker-2 did not admit: the baton passes to worker-1 after the timeout.
    opened(&env, 1, "job").await;
    assert!(
        Utc::now() - opened_at >= chrono::Duration::milliseconds(2800),
        "opened after the timeout, not before"
    );
    assert_eq!(
        gate(&env, 3, "job").await,
        Some(GateState::Closed),
        "a worker that never signals is never opened"
    );

    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    assert!(
        described.contains(&format!(
            "opened preemption gate on {}; signalled first at",
            env.cluster(2)
        )),
        "{described}"
    );
    assert!(
        described.contains(&format!(
            "the preemption gate opened on {} at",
            env.cluster(2)
        )) && described.contains(&format!(
            "timed out after 3s without admission; passing the baton to {}",
            env.cluster(1)
        )),
        "{described}"
    );
    assert!(
        described.contains(&format!("opened preemption gate on {}", env.cluster(1))),
        "{described}"
    );
    let on_worker = env.kubectl("worker-2", &["describe", "kwl", "job"]);
    assert!(on_worker.contains("PreemptionGateOpened"), "{on_worker}");
    let listed = env.kubectl("worker-1", &["get", "kwl", "job"]);
    assert!(
        listed.contains("Open") && listed.contains("True"),
        "Gate and Blocked columns: {listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_first_admits_no_second_gate_ever_opens() {
    let mut env = Env::start(2).await.expect("env");
    let manager = env.start_manager(&config(2)).expect("manager");
    two_signal(&env, 1, 2).await;
    opened(&env, 1, "job").await;
    let opened_at = tokio::time::Instant::now();
    env.admit(1, "job", Utc::now()).await.expect("admit");
    eventually(WAIT, "worker-2 replica deleted", || async {
        env.replica(2, "job").await.is_none().then_some(())
    })
    .await;
    // Past the timeout, when an unadmitted opening would pass the baton on, the manager looks
    // at the workload again: still exactly one opening.
    wait_out(opened_at, Duration::from_secs(2)).await;
    env.manager_reconciled(&manager, "job").await;
    assert_eq!(openings(&env, "job"), 1);
    assert!(env.replica(2, "job").await.is_none());
}

/// Waits until both gate gauges of the manager's metrics read `value`.
async fn gate_gauges_reach(manager: &baton_e2e::harness::process::BatonProcess, value: u64) {
    for name in ["baton_preemption_gates_open", "baton_workloads_gated"] {
        let line = format!("{name} {value}");
        eventually(WAIT, &line, || async {
            manager.metrics().lines().any(|l| l == line).then_some(())
        })
        .await;
    }
}

/// A Workload deleted while it holds the baton, the holder offline: the manager deletes the
/// replicas it can reach and lets the Workload go (or someone clears its finalizer by hand);
/// it is counted neither as holding the baton nor as waiting once it is gone. (The watch's
/// delete and relist paths, for a Workload gone without a last reconcile, are unit-tested:
/// `manager::shell::controller`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_workload_that_held_the_baton_leaves_the_gate_gauges() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let manager = env.start_manager(&config(60)).expect("manager");
    two_signal(&env, 1, 2).await;
    opened(&env, 1, "job").await;
    // Seen by the manager: the workload holds the baton, and waits for worker-2's gate.
    gate_gauges_reach(&manager, 1).await;
    env.testbed_worker(1).expect("testbed").go_offline().await;
    env.delete("job").await.expect("delete");
    // The manager saw the deletion: the replica on the online worker is gone.
    eventually(WAIT, "worker-2 replica deleted", || async {
        env.replica(2, "job").await.is_none().then_some(())
    })
    .await;
    let api = env.manager_workloads();
    let clear = serde_json::json!({"metadata": {"finalizers": null}});
    // By hand, if the manager has not let it go yet.
    let _ = api
        .patch("job", &PatchParams::default(), &Patch::Merge(&clear))
        .await;
    eventually(WAIT, "manager Workload gone", || async {
        env.manager_workload("job").await.is_none().then_some(())
    })
    .await;
    gate_gauges_reach(&manager, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signalling_worker_that_goes_offline_loses_the_baton_after_the_timeout() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let _manager = env.start_manager(&config(2)).expect("manager");
    two_signal(&env, 1, 2).await;
    opened(&env, 1, "job").await;
    env.testbed_worker(1).expect("testbed").go_offline().await;
    opened(&env, 2, "job").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_restart_between_signal_and_timeout_opens_nothing_early() {
    let mut env = Env::start(2).await.expect("env");
    let manager = env.start_manager(&config(5)).expect("manager");
    two_signal(&env, 1, 2).await;
    let first = opened(&env, 1, "job").await;
    let opened_at = first.status.as_ref().expect("status").preemption_gates[0]
        .last_transition_time
        .clone();
    manager.kill();
    let manager = env.start_manager(&config(5)).expect("manager again");
    // The restarted manager sees both workers' replicas and has looked at the workload.
    for i in 1..=2 {
        let cluster = env.cluster(i);
        eventually(
            WAIT,
            &format!("the new manager connected to {cluster}"),
            || async { connected(&manager, &cluster) },
        )
        .await;
    }
    env.manager_reconciled(&manager, "job").await;
    assert_eq!(
        gate(&env, 2, "job").await,
        Some(GateState::Closed),
        "the restarted manager remembers the opening"
    );
    let second = opened(&env, 2, "job").await;
    let second_at = second.status.as_ref().expect("status").preemption_gates[0]
        .last_transition_time
        .clone();
    assert!(
        second_at.0.as_second() - opened_at.0.as_second() >= 5,
        "{opened_at:?} → {second_at:?}"
    );
    assert_eq!(
        opened_at,
        env.replica(1, "job")
            .await
            .expect("first")
            .status
            .expect("status")
            .preemption_gates[0]
            .last_transition_time
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_orchestration_replicas_have_no_gate_and_nothing_is_opened() {
    let mut env = Env::start(2).await.expect("env");
    let manager = env
        .start_manager(&format!("orchestratedPreemption: false\n{}", config(1)))
        .expect("manager");
    env.submit("job", 1).await.expect("submit");
    replicas(&env, "job").await;
    for i in 1..=2 {
        let replica = env.replica(i, "job").await.expect("replica");
        assert!(
            replica.spec.preemption_gates.is_empty(),
            "{}",
            replica.name_any()
        );
    }
    // The manager reconciles the workload once it sees the signal (a replica change)...
    let signalled = tokio::time::Instant::now();
    reconciled_after(&manager, "worker-1's signal", async {
        env.signal_gated(1, "job", Utc::now())
            .await
            .expect("signal")
    })
    .await;
    // ... and once more after the 1s timeout, which would pass a baton if there were one.
    wait_out(signalled, Duration::from_secs(1)).await;
    env.manager_reconciled(&manager, "job").await;
    let replica = env.replica(1, "job").await.expect("replica");
    assert!(replica.status.expect("status").preemption_gates.is_empty());
    assert_eq!(openings(&env, "job"), 0);
}
