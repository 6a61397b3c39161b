//! MultiKueue parity of the manager: upstream Kueue's MultiKueue integration specs
//! (kubernetes-sigs/kueue at ff69552, `test/integration/multikueue/`), ported through the real
//! `baton manager` (and, where a worker must really schedule, real `baton worker` shims) on
//! the testbed. Each test is named after its upstream spec (`jobs_` from `jobs_test.go`,
//! `scheduler_` from `scheduler/scheduler_test.go`) and asserts what upstream asserts: the
//! same reasons and words where upstream checks them. One test states a deliberate
//! difference (the manager-preemption case).

use std::time::Duration;

use baton_crds::conditions::{ConditionStatus, NewCondition, find_condition, set_condition};
use baton_crds::constants::{condition, reason};
use baton_crds::workload::{AdmissionCheckState, CheckState, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::jobs::{is_suspended, multikueue_job};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use chrono::Utc;
use k8s_openapi::api::core::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);

/// The manager's WorkloadPriorityClasses (the workers get none).
async fn manager_classes(env: &Env) {
    let class = |name: &str, value: i32| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
               "metadata": {"name": env.name(name)}, "value": value})
    };
    env.install_docs(0, [class("high", 1000), class("low", 10)])
        .await
        .expect("priority classes");
}

/// Starts a shim on each of `workers` workers (queues of `cpus` CPUs).
async fn shims(env: &mut Env, workers: usize, cpus: u32) -> Vec<BatonProcess> {
    let mut processes = Vec::new();
    for i in 1..=workers {
        env.install_worker_queues(i, cpus, json!({}))
            .await
            .expect("queues");
        processes.push(env.start_worker(i, "").expect("worker"));
    }
    processes
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

/// Waits for Job `job`'s manager Workload to pass `check`.
async fn job_workload(
    env: &Env,
    job: &str,
    what: &str,
    check: impl Fn(&Workload) -> bool,
) -> Workload {
    eventually(WAIT, what, || async {
        workload_of(env, job).await.filter(|w| check(w))
    })
    .await
}

fn check_of(wl: &Workload, env: &Env) -> Option<AdmissionCheckState> {
    wl.status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|c| c.name == env.check())
        .cloned()
}

fn cluster_of(wl: &Workload) -> Option<String> {
    wl.status.as_ref()?.cluster_name.clone()
}

/// The events on object `name` in the environment's namespace, as (type, reason, message).
async fn events_on(
    client: kube::Client,
    namespace: &str,
    name: &str,
) -> Vec<(String, String, String)> {
    let api: Api<Event> = Api::namespaced(client, namespace);
    api.list(&ListParams::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter(|e| e.involved_object.name.as_deref() == Some(name))
                .map(|e| {
                    (
                        e.type_.unwrap_or_default(),
                        e.reason.unwrap_or_default(),
                        e.message.unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for the event (type, reason, message) on manager object `name`.
async fn expect_event(env: &Env, name: &str, type_: &str, reason: &str, message: &str) {
    eventually(
        WAIT,
        &format!("event {type_}/{reason} {message:?} on {name}"),
        || async {
            events_on(env.manager_client(), &env.namespace, name)
                .await
                .iter()
                .any(|(t, r, m)| t == type_ && r == reason && m == message)
                .then_some(())
        },
    )
    .await
}

/// The index of worker `cluster`.
fn index_of(env: &Env, cluster: &str) -> usize {
    (1..=env.worker_count())
        .find(|&i| env.cluster(i) == cluster)
        .expect("a known worker")
}

/// The manager Job's `spec.suspend` and kubectl's STATUS for it.
fn kubectl_job(env: &Env, name: &str) -> String {
    env.kubectl(
        "manager",
        &[
            "get",
            "jobs",
            name,
            "--no-headers",
            "-o",
            "custom-columns=SUSPEND:.spec.suspend",
        ],
    )
    .trim()
    .to_string()
}

/// Upstream: jobs_test.go "Should run a job on worker if admitted (ManagedBy)": the check
/// turns Ready with `The workload was admitted on "worker1"`, the event `MultiKueue` says the
/// same, the other worker's replica is removed, and the manager Job is unsuspended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_should_run_a_job_on_worker_if_admitted_managed_by() {
    let mut env = Env::start(2).await.expect("env");
    let _manager = env
        .start_manager("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n")
        .expect("manager");
    env.create_job(0, multikueue_job("job", &env.namespace, 1, 1, 600, 1))
        .await
        .expect("manager Job");
    // Replicas everywhere, no worker scheduler yet: the manager Job stays suspended.
    let wl = job_workload(&env, "job", "replicas on both workers", |_| true).await;
    let name = wl.name_any();
    for i in 1..=2 {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, &name).await
        })
        .await;
    }
    assert_eq!(kubectl_job(&env, "job"), "true", "suspended until admitted");
    // What the operator guide says `kubectl get jobs` shows on the manager before: STATUS is
    // derived from the status conditions, and no controller writes any there.
    let listed = env.kubectl("manager", &["get", "jobs", "job", "--no-headers"]);
    assert!(
        listed.contains("Running") && listed.contains("0/1"),
        "{listed}"
    );

    // The workers' schedulers start; one admits.
    let _shims = shims(&mut env, 2, 4).await;
    let wl = job_workload(&env, "job", "admitted on a worker", |w| {
        check_of(w, &env).is_some_and(|c| c.state == CheckState::Ready)
    })
    .await;
    let winner = cluster_of(&wl).expect("clusterName");
    let message = format!("The workload was admitted on {winner:?}");
    assert_eq!(check_of(&wl, &env).expect("check").message, message);
    expect_event(&env, &name, "Normal", "MultiKueue", &message).await;
    let loser = 3 - index_of(&env, &winner);
    eventually(WAIT, "the other worker's replica removed", || async {
        env.replica(loser, &name).await.is_none().then_some(())
    })
    .await;

    // Upstream: "waiting for the Job on the manager to be unsuspended".
    eventually(WAIT, "the manager Job unsuspended", || async {
        env.job(0, "job").await.filter(|j| !is_suspended(j))
    })
    .await;
    assert_eq!(kubectl_job(&env, "job"), "false");
    let cq = env.cluster_queue();
    expect_event(
        &env,
        "job",
        "Normal",
        "Started",
        &format!("Admitted by clusterQueue {cq}"),
    )
    .await;
    // Nothing runs on the manager: its Job is managedBy MultiKueue.
    let on_manager = env.kubectl("manager", &["get", "pods", "--no-headers"]);
    assert!(on_manager.trim().is_empty(), "{on_manager}");
}

/// Upstream: scheduler_test.go "should update the workload's priority class on the worker if
/// it changes on the manager", on workers that have none of the manager's
/// WorkloadPriorityClasses: the replica is admitted by the `spec.priority` it carries, and a
/// new class on the Job reaches the live replica (class and value) without replacing it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_should_update_the_workloads_priority_class_on_the_worker_if_it_changes_on_the_manager()
 {
    let mut env = Env::start(2).await.expect("env");
    manager_classes(&env).await;
    let _shims = shims(&mut env, 2, 4).await;
    let _manager = env
        .start_manager("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n")
        .expect("manager");
    let mut doc = multikueue_job("job", &env.namespace, 1, 1, 600, 1);
    doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!(env.name("high"));
    env.create_job(0, doc).await.expect("manager Job");

    let wl = job_workload(&env, "job", "admitted on a worker", |w| {
        cluster_of(w).is_some() && check_of(w, &env).is_some_and(|c| c.state == CheckState::Ready)
    })
    .await;
    let name = wl.name_any();
    let winner = index_of(&env, &cluster_of(&wl).expect("winner"));
    assert_eq!(
        wl.spec.priority,
        Some(1000),
        "the manager Workload carries its priority"
    );
    let replica = env.replica(winner, &name).await.expect("winner's replica");
    assert!(
        is_admitted(&replica),
        "admitted by its spec.priority, with no class on the worker"
    );
    assert_eq!(replica.spec.priority, Some(1000));
    let mut expected = wl.spec.clone();
    expected.preemption_gates = replica.spec.preemption_gates.clone();
    assert_eq!(
        replica.spec, expected,
        "the replica's spec is the manager's (gates aside)"
    );
    let uid = replica.uid();

    // Upstream: "Setting a low priority class on the job".
    let patch = json!({"metadata": {"labels": {"kueue.x-k8s.io/priority-class": env.name("low")}}});
    env.manager_jobs()
        .patch("job", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("relabel");
    // Upstream: "Checking that the workload priority class updated in the worker".
    let low = env.name("low");
    let updated = eventually(WAIT, "the class and value on the live replica", || async {
        env.replica(winner, &name).await.filter(|r| {
            r.spec.priority == Some(10)
                && r.spec.priority_class_ref.as_ref().map(|c| c.name.as_str()) == Some(low.as_str())
        })
    })
    .await;
    assert_eq!(updated.uid(), uid, "updated in place, not replaced");
    assert!(is_admitted(&updated), "still admitted");
    let wl = workload_of(&env, "job").await.expect("manager Workload");
    assert_eq!(wl.spec.priority, Some(10));
    assert_eq!(
        wl.spec.priority_class_ref.map(|c| c.name),
        Some(low.clone())
    );
    expect_event(
        &env,
        "job",
        "Normal",
        "UpdatedWorkload",
        &format!("Updated workload priority class: {}/{name}", env.namespace),
    )
    .await;
}

/// Upstream: jobs_test.go "Should retry a Job whose remote workload finishes OutOfSync
/// instead of finishing the manager workload": the check goes to Retry with a Warning event
/// `MultiKueue`, and the workload is dispatched again, never finished that way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_should_retry_a_job_whose_remote_workload_finishes_out_of_sync_instead_of_finishing_the_manager_workload()
 {
    let mut env = Env::start(2).await.expect("env");
    let _manager = env
        .start_manager("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n")
        .expect("manager");
    env.create_job(0, multikueue_job("job-oos", &env.namespace, 1, 1, 600, 1))
        .await
        .expect("manager Job");
    let wl = job_workload(&env, "job-oos", "the manager Workload", |_| true).await;
    let name = wl.name_any();
    let first = eventually(WAIT, "replica on worker-1", || async {
        env.replica(1, &name).await
    })
    .await;
    // Upstream: "setting workload reservation on the manager and worker1, AC becomes Ready".
    env.admit(1, &name, Utc::now()).await.expect("admit");
    job_workload(&env, "job-oos", "Ready on worker-1", |w| {
        check_of(w, &env).is_some_and(|c| {
            c.state == CheckState::Ready
                && c.message == format!("The workload was admitted on {:?}", env.cluster(1))
        })
    })
    .await;
    // Upstream: "finishing the remote workload OutOfSync (simulating a worker-mutated
    // mirrored Job)".
    env.update_replica_status(1, &name, |s| {
        set_condition(
            &mut s.conditions,
            NewCondition::new(
                condition::FINISHED,
                ConditionStatus::True,
                reason::OUT_OF_SYNC,
                "The prebuilt workload is out of sync with its user job",
            ),
            Utc::now(),
        );
    })
    .await
    .expect("finish OutOfSync");
    // Upstream: "the manager emits a reset event and does not finish the manager workload".
    let reset = format!(
        "Remote workload on worker cluster {:?} is out of sync with its user job, resetting for re-dispatch, Previously: \"Ready\"",
        env.cluster(1)
    );
    expect_event(&env, &name, "Warning", "MultiKueue", &reset).await;
    // Dispatched afresh: a new replica on worker-1; by then the workload never finished.
    eventually(WAIT, "a fresh replica on worker-1", || async {
        env.replica(1, &name)
            .await
            .filter(|r| r.uid() != first.uid())
    })
    .await;
    let wl = workload_of(&env, "job-oos")
        .await
        .expect("manager Workload");
    let status = wl.status.clone().unwrap_or_default();
    assert!(
        find_condition(&status.conditions, condition::FINISHED).is_none(),
        "{status:?}"
    );
    assert_eq!(check_of(&wl, &env).and_then(|c| c.retry_count), Some(1));
}

/// Upstream: jobs_test.go "Should requeue the workload with a delay when the connection to the
/// admitting worker is lost": after `workerLostTimeout` the check is reset with `retryCount`
/// 1. (Upstream's manager runs no scheduler in that test, so its workload also stays without
/// a reservation; Baton's manager reserves again at once and dispatches afresh.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_should_requeue_the_workload_with_a_delay_when_the_connection_to_the_admitting_worker_is_lost()
 {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let _manager = env
        .start_manager(
            "singleClusterPreemptionTimeout: 2s\nworkerLostTimeout: 3s\ngcInterval: 1s\n",
        )
        .expect("manager");
    env.submit("job", 1).await.expect("submit");
    for i in 1..=2 {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, "job").await
        })
        .await;
    }
    env.admit(2, "job", Utc::now()).await.expect("admit");
    let admitted = |w: &Workload| cluster_of(w) == Some(env.cluster(2));
    eventually(WAIT, "admitted on worker-2", || async {
        env.manager_workloads()
            .get_opt("job")
            .await
            .ok()
            .flatten()
            .filter(|w| admitted(w))
    })
    .await;
    assert_eq!(
        env.manager_workloads()
            .get("job")
            .await
            .ok()
            .and_then(|w| check_of(&w, &env))
            .and_then(|c| c.retry_count),
        None
    );

    let stale = env
        .replica(2, "job")
        .await
        .expect("worker-2's replica")
        .uid();
    env.testbed_worker(2).expect("testbed").go_offline().await;
    // Upstream: "waiting for the local workload admission check state to be set to pending".
    eventually(WAIT, "the check reset with retryCount 1", || async {
        env.manager_workloads()
            .get_opt("job")
            .await
            .ok()
            .flatten()
            .filter(|w| {
                check_of(w, &env)
                    .is_some_and(|c| c.retry_count == Some(1) && c.state != CheckState::Retry)
                    && cluster_of(w).is_none()
            })
    })
    .await;
    expect_event(
        &env,
        "job",
        "Warning",
        "MultiKueue",
        "Admitting remote lost, Previously: \"Ready\"",
    )
    .await;

    // Upstream: "the worker2 wl is removed since the local one no longer has a reservation"
    // (here: it predates the re-dispatch, so it goes, and a fresh one is dispatched there).
    env.testbed_worker(2)
        .expect("testbed")
        .go_online()
        .await
        .expect("online");
    eventually(
        Duration::from_secs(30),
        "the stale replica on worker-2 replaced",
        || async { env.replica(2, "job").await.filter(|r| r.uid() != stale) },
    )
    .await;
}

/// Baton's deliberate difference: after a preemption on the manager, upstream first has the
/// worker's Job copy suspended (the remote Workload is deactivated) and removes the copy once
/// the manager Workload lost its reservation; Baton deletes the copy with the replica at
/// once. Nothing more runs either way; deleting skips a write and a round trip per worker,
/// and the copy could not be resumed anyway (the next dispatch makes a new one). The manager
/// Job is suspended again (event `Stopped`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_preemption_deletes_the_workers_job_copy_rather_than_suspending_it() {
    let mut env = Env::start(1).await.expect("env");
    manager_classes(&env).await;
    // One CPU on the manager, preempting lower priorities; plenty on the worker.
    env.size_manager_queue(1).await.expect("size");
    let api: Api<baton_crds::ClusterQueue> = Api::all(env.manager_client());
    api.patch(
        &env.cluster_queue(),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}})),
    )
    .await
    .expect("preemption policy");
    let _shims = shims(&mut env, 1, 4).await;
    let _manager = env
        .start_manager("singleClusterPreemptionTimeout: 10s\ngcInterval: 1s\n")
        .expect("manager");
    let job = |name: &str, class: &str| {
        let mut doc = multikueue_job(name, &env.namespace, 1, 1, 600, 1);
        doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = json!(env.name(class));
        doc
    };
    env.create_job(0, job("low", "low")).await.expect("low");
    eventually(WAIT, "low's copy running on the worker", || async {
        env.job(1, "low").await.filter(|j| !is_suspended(j))
    })
    .await;
    env.create_job(0, job("high", "high")).await.expect("high");
    eventually(WAIT, "low's copy deleted", || async {
        env.job(1, "low").await.is_none().then_some(())
    })
    .await;
    eventually(WAIT, "high's copy on the worker", || async {
        env.job(1, "high").await
    })
    .await;
    eventually(WAIT, "the manager's low Job suspended again", || async {
        env.job(0, "low").await.filter(is_suspended)
    })
    .await;
    let events = events_on(env.manager_client(), &env.namespace, "low").await;
    assert!(events.iter().any(|(_, r, _)| r == "Stopped"), "{events:?}");
}
