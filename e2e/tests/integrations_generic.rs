//! The manager's generic adapter (issue 27, Kueue's `multiKueue.externalFrameworks`) with a
//! purpose-made kind `Sleeper` (`spec.suspend`, `spec.managedBy`, a status), through the real
//! `baton manager` and two real `baton worker` shims: the object's Workload (made by the
//! kind's own integration, played here by the test) is dispatched, only the winner gets a copy
//! (without `managedBy`, bound to its replica), the copy's status is mirrored whole, and
//! deleting the manager object cleans every worker. A kind whose CRD has no `spec.managedBy`
//! stops the manager at start-up with a message saying so.

use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::integrations::{KindSetup, SLEEPER_KIND, sleeper_crd};
use baton_e2e::multikueue::Env;
use kube::ResourceExt;
use kube::api::{ApiResource, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(40);
const WORKERS: usize = 2;
const CONFIG: &str =
    "gcInterval: 1s\nmultiKueue:\n  externalFrameworks:\n  - name: Sleeper.v1.e2e.baton.dev\n";

/// Two workers and their shims, the Sleeper CRD (with or without `spec.managedBy`)
/// everywhere; the test starts the manager.
async fn environment(managed_by: bool) -> (Env, Vec<BatonProcess>, ApiResource) {
    KindSetup {
        workers: WORKERS,
        crds: &[sleeper_crd(managed_by)],
        objects: &[],
        manager: None,
    }
    .parts()
    .await
}

/// The manager Workload the kind's own integration would make for Sleeper `name` (uid
/// `uid`): owned by it, queued, one pod set of `cpus` CPUs.
fn integration_workload(env: &Env, name: &str, uid: &str, cpus: u32) -> Workload {
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": format!("sleeper-{name}"), "namespace": env.namespace,
            "ownerReferences": [{"apiVersion": "e2e.baton.dev/v1", "kind": SLEEPER_KIND,
                "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpus.to_string()}}}]}}}]},
    }))
    .expect("workload")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generic_adapter_runs_a_configured_kind_on_one_worker_and_mirrors_its_status() {
    let (mut env, mut processes, sleepers) = environment(true).await;
    processes.push(env.start_manager(CONFIG).expect("manager"));
    let created = env
        .create_object(0, &sleepers, json!({
            "apiVersion": "e2e.baton.dev/v1", "kind": SLEEPER_KIND,
            "metadata": {"name": "nap", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
            "spec": {"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue", "work": {"seconds": 600}},
        }))
        .await
        .expect("manager Sleeper");
    let uid = created.uid().expect("uid");
    env.manager_workloads()
        .create(
            &PostParams::default(),
            &integration_workload(&env, "nap", &uid, 2),
        )
        .await
        .expect("the integration's Workload");

    let winner = eventually(
        WAIT,
        "the Sleeper's workload admitted on a worker",
        || async {
            let wl = env
                .manager_workloads()
                .get_opt("sleeper-nap")
                .await
                .ok()??;
            let status = wl.status?;
            let cluster = status.cluster_name?;
            is_condition_true(&status.conditions, condition::ADMITTED)
                .then(|| (1..=WORKERS).find(|&i| env.cluster(i) == cluster))?
        },
    )
    .await;
    let copy = eventually(WAIT, "the copy on the winner", || async {
        env.object(winner, &sleepers, "nap").await
    })
    .await;
    assert_eq!(
        copy.data.pointer("/spec/managedBy"),
        None,
        "run by the worker's own controller"
    );
    assert_eq!(
        copy.data.pointer("/spec/work/seconds"),
        Some(&json!(600)),
        "the spec copied"
    );
    assert_eq!(
        copy.labels()
            .get("kueue.x-k8s.io/prebuilt-workload-name")
            .map(String::as_str),
        Some("sleeper-nap")
    );
    assert_eq!(
        copy.labels().get("kueue.x-k8s.io/multikueue-origin"),
        Some(&env.origin)
    );
    assert_eq!(
        env.holders(&sleepers, "nap").await,
        vec![winner],
        "no copy on the loser"
    );

    // The kind's controller on the worker reports; the manager object shows the same, whole.
    let status = json!({"phase": "Napping", "dreams": [{"about": "sheep", "count": 3}]});
    env.objects(winner, &sleepers)
        .patch_status(
            "nap",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .expect("copy status");
    eventually(
        WAIT,
        "the manager Sleeper's status mirrors the copy's",
        || async {
            let obj = env.object(0, &sleepers, "nap").await?;
            (obj.data.get("status") == Some(&status)).then_some(())
        },
    )
    .await;
    let manager = env
        .object(0, &sleepers, "nap")
        .await
        .expect("manager object");
    assert_eq!(
        manager.data.pointer("/spec/suspend"),
        Some(&json!(true)),
        "an external kind's suspend is its own integration's, not the adapter's"
    );

    // Deleting the manager object: its Workload goes (owner), then the replicas and the copy.
    env.objects(0, &sleepers)
        .delete(
            "nap",
            &DeleteParams {
                propagation_policy: Some(PropagationPolicy::Background),
                ..Default::default()
            },
        )
        .await
        .expect("delete");
    eventually(WAIT, "every worker clean", || async {
        for i in 1..=WORKERS {
            if env.object(i, &sleepers, "nap").await.is_some()
                || env.replica(i, "sleeper-nap").await.is_some()
            {
                return false;
            }
        }
        true
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_without_managed_by_in_its_crd_is_refused_at_start_up() {
    let (mut env, _workers, _) = environment(false).await;
    let manager = std::sync::Mutex::new(env.start_manager(CONFIG).expect("manager"));
    let status = eventually(WAIT, "the manager exits", || async {
        manager.lock().expect("lock").exited()
    })
    .await;
    let manager = manager.into_inner().expect("lock");
    assert!(!status.success(), "the manager must not run with this kind");
    let log = manager.log_text();
    for says in [
        "Sleeper.v1.e2e.baton.dev",
        "sleepers.e2e.baton.dev",
        "has no spec.managedBy",
    ] {
        assert!(log.contains(says), "the log does not say {says:?}:\n{log}");
    }
}
