//! Orchestration without the wait (issue 25), through the real `baton manager` and, where the
//! worker's side matters, the real `baton worker` shims:
//! - release on failure (`releaseOnFailure: true`): a holder that can no longer make room (its
//!   ClusterQueue's quota lowered below the request once it holds the baton) gives the baton
//!   back, and the manager passes it on within 2 s instead of after
//!   `singleClusterPreemptionTimeout`; FCFS by default (KEP-8303 exactly) keeps the holder's
//!   gate Open and passes the baton on after the timeout;
//! - `SoonestRoom`: the worker whose victims stop sooner (`preemptionCost.stopSeconds`, from
//!   their pods' `terminationGracePeriodSeconds`) gets the baton although it signalled second,
//!   and the workload is admitted once those 3-s victims are gone; FCFS gives it to the first
//!   signaller, which admits it only once its 30-s victims' pods are gone (the testbed's
//!   kubelet keeps a deleted pod running for its grace period);
//! - upstream-Kueue-shaped replicas (no cost, no release) fall back to FCFS with the timeout.

use std::time::{Duration, Instant};

use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{
    MULTIKUEUE_GATE, RELEASE_ON_FAILURE_ANNOTATION, ReleaseReason, condition, reason,
};
use baton_crds::gates::{gate_state, gates};
use baton_crds::workload::{GateState, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::jobs::queued_job;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted, is_gated, low};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);
const CPUS: u32 = 4;

/// FCFS with release on failure asked for explicitly.
fn config_releasing(policy: &str, timeout: &str) -> String {
    format!("{}releaseOnFailure: true\n", config(policy, timeout))
}

fn config(policy: &str, timeout: &str) -> String {
    format!(
        "singleClusterPreemptionTimeout: {timeout}\nungatingPolicy: {policy}\nleastDisruptionWindow: 5s\nworkerLostTimeout: 60s\ngcInterval: 1s\n"
    )
}

/// Fills worker `i` with `CPUS` local 1-CPU workloads of priority 0 whose pods stop within
/// `grace` seconds, and waits until each is admitted (its shim must run).
async fn fill_with_grace(env: &Env, i: usize, grace: i64) {
    for j in 1..=CPUS as usize {
        let name = low(j);
        let wl: Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": env.namespace},
            "spec": {"queueName": "user-queue", "priority": 0, "podSets": [{"name": "main", "count": 1, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"terminationGracePeriodSeconds": grace,
                         "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        }))
        .expect("a workload");
        env.worker_workloads(i)
            .create(&PostParams::default(), &wl)
            .await
            .expect("low-priority workload");
    }
    for j in 1..=CPUS as usize {
        let name = low(j);
        eventually(WAIT, &format!("{name} admitted on worker-{i}"), || async {
            env.worker_workload(i, &name).await.filter(is_admitted)
        })
        .await;
    }
}

/// Two workers with `CPUS` CPUs each, full of low-priority work (pods stopping within
/// `graces[i]` seconds), with their shims running.
async fn full_workers(graces: [i64; 2]) -> (Env, Vec<Option<BatonProcess>>) {
    let mut env = Env::start(2).await.expect("env");
    let mut shims = Vec::new();
    for i in 1..=2 {
        env.install_worker_queues(i, CPUS, json!({}))
            .await
            .expect("queues");
        shims.push(Some(env.start_worker(i, "").expect("worker")));
    }
    for i in 1..=2 {
        fill_with_grace(&env, i, graces[i - 1]).await;
    }
    (env, shims)
}

async fn submit_high(env: &Env) {
    env.submit_with_priority("high", 2, Some(1000))
        .await
        .expect("submit");
    for i in 1..=2 {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, "high").await
        })
        .await;
    }
}

fn gate_of(wl: &Workload) -> Option<(GateState, Option<DateTime<Utc>>)> {
    gates(wl)
        .into_iter()
        .find(|g| g.name == MULTIKUEUE_GATE)
        .map(|g| (g.state, g.last_transition_time))
}

/// Waits until worker `i`'s gate of `high` is Open; returns when the manager opened it.
async fn opened_at(env: &Env, i: usize, within: Duration) -> DateTime<Utc> {
    eventually(within, &format!("gate open on worker-{i}"), || async {
        env.replica(i, "high")
            .await
            .as_ref()
            .and_then(gate_of)
            .filter(|(state, _)| *state == GateState::Open)
            .and_then(|(_, at)| at)
    })
    .await
}

/// Waits until the manager's `high` is admitted; returns the cluster it runs on.
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

async fn evicted_on(env: &Env, i: usize) -> usize {
    env.count_low(i, CPUS as usize, is_evicted).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_that_can_no_longer_make_room_passes_the_baton_within_two_seconds() {
    let (mut env, mut shims) = full_workers([30, 30]).await;
    // Both shims stop: worker-1 gets the baton while its shim is down (the test signals for
    // it, as it would have), so that its quota can be lowered before it can preempt.
    for shim in shims.iter_mut() {
        if let Some(mut s) = shim.take() {
            s.stop();
        }
    }
    // A timeout far beyond the test's patience: only a release can pass the baton on.
    let manager = env
        .start_manager(&config_releasing("FCFS", "120s"))
        .expect("manager");
    submit_high(&env).await;
    env.signal_gated(1, "high", Utc::now())
        .await
        .expect("worker-1 signals");
    opened_at(&env, 1, WAIT).await;
    // worker-1's ClusterQueue now has 1 CPU: the 2-CPU workload can never fit there.
    env.install_worker_queues(1, 1, json!({}))
        .await
        .expect("lower worker-1's quota");
    // worker-2's shim comes back and signals; worker-1 still holds the baton.
    shims[1] = Some(env.start_worker(2, "").expect("worker-2"));
    eventually(WAIT, "worker-2 signals", || async {
        env.replica(2, "high").await.filter(is_gated)
    })
    .await;
    env.manager_reconciled(&manager, "high").await;
    assert_eq!(
        env.replica(2, "high")
            .await
            .and_then(|r| gate_state(&r, MULTIKUEUE_GATE)),
        Some(GateState::Closed),
        "worker-1 holds the baton: worker-2 waits"
    );
    // worker-1's shim comes back: it cannot make room and gives the baton back.
    shims[0] = Some(env.start_worker(1, "").expect("worker-1"));
    let started = Instant::now();
    let released = eventually(WAIT, "worker-1 gives the baton back", || async {
        let r = env.replica(1, "high").await?;
        let (state, at) = gate_of(&r)?;
        let blocked = r
            .status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, condition::QUOTA_RESERVATION_BLOCKED))?;
        (state == GateState::Closed
            && blocked.status == "False"
            && ReleaseReason::parse(&blocked.reason).is_some())
        .then_some((at?, blocked.reason.clone()))
    })
    .await;
    let released_after = started.elapsed();
    let open_2 = opened_at(&env, 2, Duration::from_secs(10)).await;
    let passed_after = started.elapsed();
    // Stored times are floored to the second: the gate opened within 2 s of the release.
    assert!(
        open_2 - released.0 <= chrono::Duration::seconds(2),
        "released at {}, worker-2 opened at {open_2}",
        released.0
    );
    assert!(
        passed_after <= released_after + Duration::from_secs(2),
        "the baton passed {passed_after:?} after worker-1's shim started (release seen after {released_after:?})"
    );
    assert_eq!(
        released.1,
        ReleaseReason::Insufficient.as_str(),
        "the reason names the failure"
    );
    // worker-2 preempts and the workload runs there; worker-1 evicted nothing.
    assert_eq!(admitted_on(&env).await, env.cluster(2));
    assert_eq!(evicted_on(&env, 1).await, 0, "worker-1 evicted nothing");
    assert!(evicted_on(&env, 2).await >= 1);
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    assert!(described.contains("PreemptionGateReleased"), "{described}");
    assert!(
        described.contains(&format!("{} gave the baton back at", env.cluster(1))),
        "{described}"
    );
    let counted = manager.metric(&format!(
        "baton_preemption_gate_releases_total{{cluster=\"{}\",reason=\"PreemptionInsufficient\"}}",
        env.cluster(1)
    ));
    assert_eq!(counted, Some(1.0));
    assert_eq!(
        manager.metric("baton_preemption_gate_timeouts_total"),
        Some(0.0),
        "no timeout passed the baton"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fcfs_by_default_keeps_the_holders_gate_until_the_timeout() {
    // The same failure as above, under FCFS without `releaseOnFailure`: KEP-8303 exactly.
    let (mut env, mut shims) = full_workers([30, 30]).await;
    for shim in shims.iter_mut() {
        if let Some(mut s) = shim.take() {
            s.stop();
        }
    }
    let timeout = 12;
    let manager = env
        .start_manager(&config("FCFS", &format!("{timeout}s")))
        .expect("manager");
    submit_high(&env).await;
    env.signal_gated(1, "high", Utc::now())
        .await
        .expect("worker-1 signals");
    let opened_1 = opened_at(&env, 1, WAIT).await;
    let replica_1 = env.replica(1, "high").await.expect("replica on worker-1");
    assert!(
        !replica_1
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(RELEASE_ON_FAILURE_ANNOTATION),
        "FCFS by default asks for no release"
    );
    env.install_worker_queues(1, 1, json!({}))
        .await
        .expect("lower worker-1's quota");
    shims[1] = Some(env.start_worker(2, "").expect("worker-2"));
    eventually(WAIT, "worker-2 signals", || async {
        env.replica(2, "high").await.filter(is_gated)
    })
    .await;
    // worker-1's shim comes back and cannot make room: it keeps its Open gate (it says why
    // in its pending status, but does not give the baton back).
    shims[0] = Some(env.start_worker(1, "").expect("worker-1"));
    eventually(WAIT, "worker-1 sees that it cannot make room", || async {
        let r = env.replica(1, "high").await?;
        let reserved = r
            .status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, condition::QUOTA_RESERVED))?;
        (reserved.status == "False" && reserved.message.contains("insufficient")).then_some(())
    })
    .await;
    assert_eq!(
        env.replica(1, "high")
            .await
            .as_ref()
            .and_then(gate_of)
            .map(|g| g.0),
        Some(GateState::Open),
        "the holder keeps its gate"
    );
    let opened_2 = opened_at(&env, 2, WAIT).await;
    println!(
        "FCFS default: worker-1 opened at {opened_1}, worker-2 at {opened_2} ({} s later; timeout {timeout} s)",
        (opened_2 - opened_1).num_seconds()
    );
    assert!(
        opened_2 - opened_1 >= chrono::Duration::seconds(timeout),
        "opened at {opened_1} then {opened_2}: only the timeout passes the baton"
    );
    assert_eq!(
        manager.metric("baton_preemption_gate_timeouts_total"),
        Some(1.0)
    );
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    assert!(!described.contains("PreemptionGateReleased"), "{described}");
    assert_eq!(admitted_on(&env).await, env.cluster(2));
}

/// Fills worker `i` with `CPUS` queued 1-CPU Jobs of priority 0 whose pods take `grace`
/// seconds to stop (the testbed's kubelet keeps a deleted pod running for its grace period,
/// here capped at a minute), and waits until each runs.
async fn fill_with_jobs(env: &Env, i: usize, grace: i64) {
    if let Some(tb) = env.testbed_worker(i) {
        tb.set_termination_grace_cap(Duration::from_secs(60));
    }
    for j in 1..=CPUS as usize {
        let doc = queued_job(&low(j), &env.namespace, 1, 1, 3600, grace);
        env.create_job(i, doc).await.expect("low-priority Job");
    }
    for j in 1..=CPUS as usize {
        let name = low(j);
        eventually(WAIT, &format!("{name} running on worker-{i}"), || async {
            env.job(i, &name)
                .await
                .filter(|job| job.status.as_ref().and_then(|s| s.active) == Some(1))
        })
        .await;
    }
}

/// The pods being deleted on worker `i`: (pod, when it will be gone — its
/// `deletionTimestamp` — and its grace period).
async fn terminating_pods(env: &Env, i: usize) -> Vec<(String, DateTime<Utc>, i64)> {
    let api: Api<Pod> = Api::namespaced(env.worker_client(i), &env.namespace);
    let pods = api.list(&ListParams::default()).await.map(|l| l.items);
    pods.unwrap_or_default()
        .into_iter()
        .filter_map(|p| {
            let gone = baton_crds::time::to_chrono(p.metadata.deletion_timestamp.as_ref()?);
            let grace = p.metadata.deletion_grace_period_seconds?;
            Some((p.name_any(), gone, grace))
        })
        .collect()
}

/// What one run of (b) measured.
struct Race {
    winner: usize,
    /// From `high`'s submission to its admission on the manager, as the test saw it.
    admitted_after: Duration,
    /// The winner's replica's `QuotaReserved=True` transition.
    reserved_at: DateTime<Utc>,
    /// When the manager opened the winner's gate (stored, whole seconds).
    opened_at: DateTime<Utc>,
    /// Victims' pods seen terminating, by worker: (pod, gone at, grace).
    terminating: Vec<(usize, String, DateTime<Utc>, i64)>,
}

/// Worker-1 signals first (its shim alone runs when `high` arrives), worker-2 a moment later;
/// worker-1's victims are Jobs whose pods take 30 s to stop, worker-2's 3 s.
async fn first_slow_then_fast(policy: &str) -> (Env, Race) {
    let mut env = Env::start(2).await.expect("env");
    if !env.is_testbed() {
        panic!("needs the testbed's kubelet model (pods that stop after their grace period)");
    }
    let mut shims = Vec::new();
    for i in 1..=2 {
        env.install_worker_queues(i, CPUS, json!({}))
            .await
            .expect("queues");
        shims.push(Some(env.start_worker(i, "").expect("worker")));
    }
    fill_with_jobs(&env, 1, 30).await;
    fill_with_jobs(&env, 2, 3).await;
    if let Some(mut s) = shims[1].take() {
        s.stop();
    }
    let _manager = env.start_manager(&config(policy, "120s")).expect("manager");
    let submitted = Instant::now();
    submit_high(&env).await;
    eventually(WAIT, "worker-1 signals", || async {
        env.replica(1, "high").await.filter(is_gated)
    })
    .await;
    // A second later (stored times are whole seconds), worker-2's shim signals too.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    shims[1] = Some(env.start_worker(2, "").expect("worker-2"));
    // Until admission, note every victim pod seen terminating (they are gone afterwards).
    let seen = std::sync::Mutex::new(Vec::new());
    let cluster = eventually(Duration::from_secs(120), "high admitted", || async {
        for i in 1..=2 {
            for (pod, gone, grace) in terminating_pods(&env, i).await {
                let mut seen = seen.lock().expect("not poisoned");
                if !seen.iter().any(|(w, p, _, _)| *w == i && *p == pod) {
                    seen.push((i, pod, gone, grace));
                }
            }
        }
        admitted_cluster(&env).await
    })
    .await;
    let admitted_after = submitted.elapsed();
    let winner = (1..=2)
        .find(|&i| env.cluster(i) == cluster)
        .expect("a known worker");
    let winner_replica = env.replica(winner, "high").await;
    let opened_at = winner_replica
        .as_ref()
        .and_then(gate_of)
        .and_then(|(_, at)| at)
        .expect("the winner's gate was opened");
    let reserved_at = winner_replica
        .and_then(|r| {
            let s = r.status?;
            let c = find_condition(&s.conditions, condition::QUOTA_RESERVED)?;
            (c.status == "True").then(|| baton_crds::time::to_chrono(&c.last_transition_time))
        })
        .expect("the winner's replica reserved quota");
    let other = 3 - winner;
    assert_eq!(
        evicted_workloads(&env, other).await,
        0,
        "worker-{other} evicted nothing"
    );
    drop(shims);
    let terminating = seen.into_inner().expect("not poisoned");
    println!(
        "{policy}: high admitted on worker-{winner} {:.1} s after submission; gate opened at {opened_at}, quota reserved at {reserved_at} ({} s later); victim pods seen terminating: {terminating:?}",
        admitted_after.as_secs_f64(),
        (reserved_at - opened_at).num_seconds()
    );
    let race = Race {
        winner,
        admitted_after,
        reserved_at,
        opened_at,
        terminating,
    };
    (env, race)
}

/// The manager's `high`, admitted: the cluster it runs on.
async fn admitted_cluster(env: &Env) -> Option<String> {
    let wl = env
        .manager_workloads()
        .get_opt("high")
        .await
        .ok()
        .flatten()?;
    let status = wl.status?;
    let cluster = status.cluster_name.clone()?;
    baton_crds::conditions::is_condition_true(&status.conditions, "Admitted").then_some(cluster)
}

/// How many workloads on worker `i` were evicted.
async fn evicted_workloads(env: &Env, i: usize) -> usize {
    let list = env.worker_workloads(i).list(&ListParams::default()).await;
    list.map(|l| l.items.iter().filter(|w| is_evicted(w)).count())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soonest_room_admits_on_the_worker_whose_victims_stop_sooner() {
    let (env, race) = first_slow_then_fast("SoonestRoom").await;
    assert_eq!(
        race.winner, 2,
        "worker-2's victims stop in 3 s, worker-1's in 30 s"
    );
    // Only worker-2's 3-s victims stopped for it.
    assert!(!race.terminating.is_empty(), "victims were seen stopping");
    assert!(
        race.terminating
            .iter()
            .all(|(w, _, _, grace)| *w == 2 && *grace == 3),
        "{:?}",
        race.terminating
    );
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    assert!(
        described.contains(&format!(
            "opened preemption gate on {}: victims gone soonest of 2 signalling clusters (3s,",
            env.cluster(2)
        )),
        "{described}"
    );
    assert!(race.opened_at <= race.reserved_at);
    println!(
        "SoonestRoom: admitted {:.1} s after submission",
        race.admitted_after.as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fcfs_admits_on_the_first_signaller_once_its_slow_victims_are_gone() {
    let (_env, race) = first_slow_then_fast("FCFS").await;
    assert_eq!(race.winner, 1, "worker-1 signalled first");
    // It really waited for its 30-s victims: their pods were deleted with a 30-s grace
    // period and the replica reserved quota only once they were gone (the deletion
    // timestamp is when a pod is due to go; stored times are whole seconds).
    let slow: Vec<_> = race
        .terminating
        .iter()
        .filter(|(w, _, _, _)| *w == 1)
        .collect();
    assert!(!slow.is_empty(), "worker-1's victims were seen stopping");
    assert!(slow.iter().all(|(_, _, _, grace)| *grace == 30), "{slow:?}");
    let last_gone = slow.iter().map(|(_, _, gone, _)| *gone).max().expect("one");
    assert!(
        race.reserved_at + chrono::Duration::seconds(1) >= last_gone,
        "reserved at {} before the victims' pods were due to go at {last_gone}",
        race.reserved_at
    );
    assert!(race.opened_at <= race.reserved_at);
    println!(
        "FCFS: admitted {:.1} s after submission",
        race.admitted_after.as_secs_f64()
    );
}

/// Worker `i` signals as upstream Kueue does: the condition only, no cost.
async fn kueue_signal(env: &Env, i: usize, at: DateTime<Utc>) {
    env.update_replica_status(i, "high", |s| {
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
        s.preemption_cost = None;
    })
    .await
    .unwrap_or_else(|e| panic!("worker-{i} signals: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_kueue_replicas_fall_back_to_fcfs_with_the_timeout() {
    let mut env = Env::start(2).await.expect("env");
    let timeout = 8;
    let manager = env
        .start_manager(&config("SoonestRoom", &format!("{timeout}s")))
        .expect("manager");
    submit_high(&env).await;
    let t0 = Utc::now();
    kueue_signal(&env, 1, t0).await;
    kueue_signal(&env, 2, t0 + chrono::Duration::seconds(1)).await;
    // No cost to compare: the first signaller, at once.
    let opened_1 = opened_at(&env, 1, WAIT).await;
    // The holder stops signalling as upstream Kueue does when it cannot preempt (its gate
    // stays Open, no release reason): the baton stays with it until the timeout.
    env.update_replica_status(1, "high", |s| {
        set_condition(
            &mut s.conditions,
            NewCondition::new(
                condition::QUOTA_RESERVATION_BLOCKED,
                ConditionStatus::False,
                "Pending",
                "no candidates",
            ),
            Utc::now(),
        );
    })
    .await
    .expect("worker-1 stops signalling");
    env.manager_reconciled(&manager, "high").await;
    assert_eq!(
        env.replica(2, "high")
            .await
            .and_then(|r| gate_state(&r, MULTIKUEUE_GATE)),
        Some(GateState::Closed),
        "no release: worker-2 waits for the timeout"
    );
    let opened_2 = opened_at(&env, 2, WAIT).await;
    assert!(
        opened_2 - opened_1 >= chrono::Duration::seconds(timeout),
        "opened at {opened_1} then {opened_2}: the timeout passed the baton"
    );
    assert_eq!(
        manager.metric("baton_preemption_gate_timeouts_total"),
        Some(1.0)
    );
    let described = env.kubectl("manager", &["describe", "kwl", "high"]);
    assert!(
        described.contains("reports no preemption cost, so first come, first served"),
        "{described}"
    );
    assert!(!described.contains("PreemptionGateReleased"), "{described}");
}
