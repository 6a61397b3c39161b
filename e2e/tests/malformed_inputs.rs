//! The malformed-input campaign (issue 14 part 3): bad objects submitted through the API to
//! clusters where the real `baton` binaries run. For each: the API refuses it naming the
//! field, or it is stored and gets a condition or Event naming the object and the field; no
//! process panics; a good workload submitted after it in the same queue is still admitted;
//! and nothing stored is lost. One environment per group, its cases submitted together.
//!
//! `cargo test -p baton-e2e --test malformed_inputs -- --nocapture` prints the case table.

use std::time::Duration;

use baton_e2e::harness::apply;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::malformed::cases::{KUEUE, WORKER_CPUS};
use baton_e2e::malformed::forged::{Forged, GATE, forged_cases, future_open};
use baton_e2e::malformed::manager_cases::{
    manager_cases, manager_found_cases, manager_quota_cases, secret_docs,
};
use baton_e2e::malformed::worker_cases::worker_cases;
use baton_e2e::malformed::{Case, Runner, alive};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// How long the asynchronous signals of one group may take in all (a loaded machine).
const SIGNALS: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(40);

/// Polls `check` (the shared poll helper) until it gives `Some`, or `None` once `deadline`
/// has passed.
async fn within<T, F, Fut>(deadline: Duration, check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    baton_e2e::harness::poll(deadline, check).await.ok()
}

/// Checks common to every group: the processes are alive, nothing stored was lost, and the
/// table passed; prints the table.
async fn finish(runner: &mut Runner<'_>, cases: &[Case], processes: &[&BatonProcess], group: &str) {
    for (i, process) in processes.iter().enumerate() {
        if let Err(why) = alive(process) {
            runner
                .failures
                .push(format!("process {i} of {group}: {why}"));
        }
    }
    runner.check_nothing_lost(cases).await;
    eprintln!("── {group}: {} cases ──\n{}", cases.len(), runner.table());
    assert!(
        runner.failures.is_empty(),
        "{} failure(s) in {group}:\n{}",
        runner.failures.len(),
        runner.failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_worker_inputs_are_refused_or_reported_and_never_stall_the_queue() {
    let Some(mut env) = Env::start_for_faults(1).await else {
        return;
    };
    env.install_worker_queues(1, WORKER_CPUS, json!({}))
        .await
        .expect("queues");
    let worker = env.start_worker(1, "").expect("worker");
    let cases = worker_cases(&env);
    let mut runner = Runner::new(&env);
    runner.run(&cases, SIGNALS).await;

    // A good workload submitted after all of them, in the same queue, is admitted.
    env.submit_on_worker(1, "good-after", 1, 0, json!({}))
        .await
        .expect("good workload");
    let admitted = within(WAIT, || async {
        env.worker_workload(1, "good-after")
            .await
            .filter(is_admitted)
    })
    .await;
    if admitted.is_none() {
        let last = env
            .worker_workload(1, "good-after")
            .await
            .and_then(|w| w.status);
        runner.failures.push(format!(
            "stalled queue: good-after not admitted within {WAIT:?}: {last:?}"
        ));
    }
    finish(&mut runner, &cases, &[&worker], "worker inputs").await;
}

/// The manager group's environment: worker-1 with its shim, the kubeconfig Secrets the
/// cluster cases name, and the manager; `None` on real clusters.
async fn manager_environment() -> Option<(Env, BatonProcess, BatonProcess)> {
    let mut env = Env::start_for_faults(1).await?;
    env.install_worker_queues(1, WORKER_CPUS, json!({}))
        .await
        .expect("worker queues");
    let secrets_api: Api<Secret> = Api::namespaced(env.manager_client(), &env.namespace);
    let mut secrets: Vec<Value> = secret_docs(&env)
        .into_iter()
        .map(|(name, text)| json!({"metadata": {"name": name}, "stringData": {"kubeconfig": text}}))
        .collect();
    secrets
        .push(json!({"metadata": {"name": "keyless-kubeconfig"}, "stringData": {"config": "x"}}));
    for doc in secrets {
        let secret: Secret = serde_json::from_value(doc).expect("secret");
        secrets_api
            .create(&PostParams::default(), &secret)
            .await
            .expect("secret");
    }
    // A config naming a missing cluster has no status of its own: its check reports it.
    let ghost = json!({"apiVersion": KUEUE, "kind": "MultiKueueConfig", "metadata": {"name": env.name("ghost-config")},
        "spec": {"clusters": [env.name("no-such-cluster")]}});
    apply(&env.manager_client(), &ghost)
        .await
        .expect("ghost config");
    let worker = env.start_worker(1, "").expect("worker");
    let manager = env
        .start_manager("singleClusterPreemptionTimeout: 2s\ngcInterval: 1s\n")
        .expect("manager");
    Some((env, manager, worker))
}

/// A good workload submitted on the manager after the bad ones is admitted through worker-1.
async fn good_workload_runs(env: &Env, runner: &mut Runner<'_>) {
    env.submit("good-after", 1).await.expect("good workload");
    let admitted = within(WAIT, || async {
        let wl = env
            .manager_workloads()
            .get_opt("good-after")
            .await
            .ok()
            .flatten()?;
        let status = wl.status?;
        baton_crds::conditions::is_condition_true(&status.conditions, "Admitted").then_some(())
    })
    .await;
    if admitted.is_none() {
        runner.failures.push(format!(
            "stalled dispatch: good-after not admitted within {WAIT:?}"
        ));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_manager_inputs_are_refused_or_reported_and_never_stall_dispatch() {
    let Some((env, manager, worker)) = manager_environment().await else {
        return;
    };
    let cases = manager_cases(&env);
    let mut runner = Runner::new(&env);
    runner.run(&cases, SIGNALS).await;
    good_workload_runs(&env, &mut runner).await;
    finish(&mut runner, &cases, &[&manager, &worker], "manager inputs").await;
}

/// Inputs that showed manager bugs, fixed since: a kubeconfig naming files on the manager's
/// host, and a replica name a worker's own Workload already holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_bugs_found_by_the_campaign_stay_fixed() {
    let Some((env, manager, worker)) = manager_environment().await else {
        return;
    };
    env.submit_on_worker(1, "collide", 1, 0, json!({}))
        .await
        .expect("the worker's own workload");
    let cases = manager_found_cases(&env);
    let mut runner = Runner::new(&env);
    runner.run(&cases, SIGNALS).await;
    good_workload_runs(&env, &mut runner).await;
    finish(&mut runner, &cases, &[&manager, &worker], "manager bugs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_managers_quota_reports_what_cannot_fit() {
    let Some((env, manager, worker)) = manager_environment().await else {
        return;
    };
    let cases = manager_quota_cases(&env);
    let mut runner = Runner::new(&env);
    runner.run(&cases, SIGNALS).await;
    good_workload_runs(&env, &mut runner).await;
    finish(&mut runner, &cases, &[&manager, &worker], "manager quota").await;
}

/// Two workers without shims (the test plays them) and the manager with a 2 s timeout: each
/// case's workload is submitted, its worker-1 replica gets the forged status, worker-2
/// signals; the expected gate must open, the manager must live and lose nothing.
async fn run_forged(cases: Vec<Forged>) {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let manager = env
        .start_manager(
            "singleClusterPreemptionTimeout: 2s\nworkerLostTimeout: 60s\ngcInterval: 1s\n",
        )
        .expect("manager");
    let mut failures = Vec::new();
    let mut table = Vec::new();
    for case in &cases {
        let name = case.name;
        env.submit(name, 1).await.expect("submit");
        for i in 1..=2 {
            if within(WAIT, || async { env.replica(i, name).await })
                .await
                .is_none()
            {
                failures.push(format!("{name}: no replica on worker-{i}"));
            }
        }
        let patch = json!({ "status": case.status });
        if let Err(e) = env
            .worker_workloads(1)
            .patch_status(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            failures.push(format!("{name}: the forged status was refused: {e}"));
            continue;
        }
        env.signal_gated(2, name, chrono::Utc::now())
            .await
            .expect("signal");
    }
    for case in &cases {
        let (name, worker) = (case.name, case.opens_on);
        let open = within(WAIT, || async {
            let replica = env.replica(worker, name).await?;
            (baton_crds::gates::gate_state(&replica, GATE)
                == Some(baton_crds::workload::GateState::Open))
            .then_some(())
        })
        .await;
        // First come, first served: the other worker's gate must not have opened first.
        let other = 3 - worker;
        let opened_at = |w: Option<baton_crds::workload::Workload>| {
            w.and_then(|w| w.status)
                .and_then(|s| s.preemption_gates.into_iter().find(|g| g.name == GATE))
                .filter(|g| {
                    baton_crds::gates::entry_state(g) == baton_crds::workload::GateState::Open
                })
                .map(|g| g.last_transition_time.0)
        };
        let (mine, theirs) = (
            opened_at(env.replica(worker, name).await),
            opened_at(env.replica(other, name).await),
        );
        if let (Some(mine), Some(theirs)) = (&mine, &theirs)
            && theirs < mine
        {
            failures.push(format!(
                "{name}: worker-{other}'s gate opened first ({theirs:?} < {mine:?})"
            ));
        }
        match open {
            Some(()) => table.push(format!("{name:<16} → gate opened on worker-{worker}")),
            None => failures.push(format!(
                "{name}: no gate opened on worker-{worker} within {WAIT:?}"
            )),
        }
        if env
            .manager_workloads()
            .get_opt(name)
            .await
            .ok()
            .flatten()
            .is_none()
        {
            failures.push(format!("{name}: the manager workload is gone"));
        }
    }
    if let Err(why) = alive(&manager) {
        failures.push(format!("manager: {why}"));
    }
    eprintln!("── forged replica statuses ──\n{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replica_statuses_never_stall_the_baton() {
    run_forged(forged_cases()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_opened_in_the_future_does_not_hold_the_baton() {
    run_forged(vec![future_open()]).await;
}
