//! batch/v1 Jobs through the real `baton worker` on a testbed cluster (DESIGN.md §8): a
//! queued Job gets a Workload, runs on its flavor once admitted, is suspended when preempted
//! (its quota released only once its pods are gone), finishes its Workload, takes its
//! Workload with it when deleted, binds to a prebuilt Workload, and is suspended when it
//! starts without admission.
//!
//! The testbed's job-controller and kubelet model runs the pods; the
//! `testbed.baton.dev/run-seconds` annotation makes a Job complete. Real clusters are
//! skipped: the suites rely on that model's timing.

use std::time::Duration;

use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::condition;
use baton_crds::workload::Workload;
use baton_e2e::harness::eventually;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const QUEUE: &str = "job-queue";

/// A testbed environment with one worker whose ClusterQueue has `cpus` CPUs of a flavor
/// with node labels and a toleration, and `baton worker` running; `None` on real clusters.
async fn start(cpus: u32) -> Option<(Env, baton_e2e::harness::process::BatonProcess)> {
    let mut env = Env::start(1).await.expect("env");
    if !env.is_testbed() {
        eprintln!("skipped: needs the testbed's job controller model");
        return None;
    }
    let (flavor, cq) = (env.name("job-flavor"), env.name("job-cq"));
    let docs = [
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor},
            "spec": {"nodeLabels": {"pool": "batch"},
                     "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}]}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": cq},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpus}]}]}],
                "preemption": {"withinClusterQueue": "LowerPriority"}}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": QUEUE, "namespace": env.namespace}, "spec": {"clusterQueue": cq}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
            "metadata": {"name": env.name("job-high")}, "value": 1000}),
    ];
    env.install_docs(1, docs).await.expect("queues");
    let worker = env.start_worker(1, "").expect("worker");
    Some((env, worker))
}

/// Merges `extra` into `base` (a small JSON merge patch; null deletes).
fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                if v.is_null() {
                    b.remove(&k);
                } else {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (b, e) => *b = e,
    }
}

fn jobs(env: &Env) -> Api<Job> {
    Api::namespaced(env.worker_client(1), &env.namespace)
}

/// Creates a queued, suspended Job of `pods` pods of one CPU each; `extra` is merged in.
async fn submit(env: &Env, name: &str, pods: i32, extra: Value) -> Job {
    let mut doc = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": env.namespace,
                     "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {"suspend": true, "parallelism": pods, "completions": pods,
                 "template": {"spec": {"restartPolicy": "Never",
                    "nodeSelector": {"team": "a"},
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}}}]}}}
    });
    merge(&mut doc, extra);
    let job: Job = serde_json::from_value(doc).expect("job");
    jobs(env)
        .create(&PostParams::default(), &job)
        .await
        .expect("create job")
}

async fn job(env: &Env, name: &str) -> Job {
    jobs(env).get(name).await.expect("get job")
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

fn counts(job: &Job) -> (i32, i32) {
    let s = job.status.clone().unwrap_or_default();
    (s.active.unwrap_or(0), s.terminating.unwrap_or(0))
}

/// The Workload the shim made for `job` (by the name Kueue's scheme gives it).
async fn workload_of(env: &Env, job: &Job) -> Option<Workload> {
    env.worker_workload(1, &baton::jobs::workload_name(job))
        .await
}

async fn wait_workload(
    env: &Env,
    job: &Job,
    what: &str,
    test: impl Fn(&Workload) -> bool,
) -> Workload {
    eventually(WAIT, &format!("{}: {what}", job.name_any()), || async {
        workload_of(env, job).await.filter(|w| test(w))
    })
    .await
}

async fn wait_job(env: &Env, name: &str, what: &str, test: impl Fn(&Job) -> bool) -> Job {
    eventually(WAIT, &format!("Job {name}: {what}"), || async {
        Some(job(env, name).await).filter(|j| test(j))
    })
    .await
}

/// Events on the Job `name` with `reason`.
async fn events(env: &Env, name: &str, reason: &str) -> Vec<Event> {
    let api: Api<Event> = Api::namespaced(env.worker_client(1), &env.namespace);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

async fn wait_event(env: &Env, name: &str, reason: &str) -> Event {
    eventually(WAIT, &format!("event {reason} on Job {name}"), || async {
        events(env, name, reason).await.into_iter().next()
    })
    .await
}

async fn pods_of(env: &Env, name: &str) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(env.worker_client(1), &env.namespace);
    api.list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={name}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

fn condition_of(wl: &Workload, type_: &str) -> (String, String, String) {
    wl.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, type_))
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_gets_a_workload_and_runs_on_its_flavor() {
    let Some((env, _worker)) = start(4).await else {
        return;
    };
    let created = submit(&env, "sample", 2, json!({})).await;
    let wl = wait_workload(&env, &created, "admitted", is_admitted).await;
    let owner = &wl.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Job", "sample", Some(true))
    );
    assert_eq!(owner.uid, created.uid().unwrap_or_default());
    assert_eq!(wl.spec.queue_name.as_deref(), Some(QUEUE));
    assert_eq!(wl.spec.pod_sets[0].count, 2);

    let running = wait_job(&env, "sample", "unsuspended", |j| !suspended(j)).await;
    let spec = running
        .spec
        .clone()
        .unwrap_or_default()
        .template
        .spec
        .unwrap_or_default();
    let selector = spec.node_selector.unwrap_or_default();
    assert_eq!(selector.get("pool").map(String::as_str), Some("batch"));
    assert_eq!(
        selector.get("team").map(String::as_str),
        Some("a"),
        "the user's own stays"
    );
    let tolerations = spec.tolerations.unwrap_or_default();
    assert!(
        tolerations
            .iter()
            .any(|t| t.key.as_deref() == Some("batch"))
    );
    // The Workload keeps the user's template: eviction restores from it.
    assert_eq!(
        wl.spec.pod_sets[0].template.node_selector().get("pool"),
        None
    );

    let pods = eventually(WAIT, "two pods on the flavor", || async {
        let pods = pods_of(&env, "sample").await;
        (pods.len() == 2).then_some(pods)
    })
    .await;
    for pod in pods {
        let selector = pod
            .spec
            .unwrap_or_default()
            .node_selector
            .unwrap_or_default();
        assert_eq!(selector.get("pool").map(String::as_str), Some("batch"));
    }
    let created_event = wait_event(&env, "sample", "CreatedWorkload").await;
    assert!(
        created_event
            .note
            .unwrap_or_default()
            .contains(&wl.name_any()),
        "names the Workload"
    );
    wait_event(&env, "sample", "Started").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempted_job_releases_its_quota_only_once_its_pods_are_gone() {
    let Some((env, _worker)) = start(2).await else {
        return;
    };
    // Pods that take a while to go: 3 s of grace (the testbed caps it per cluster).
    if let Some(tb) = env.testbed_worker(1) {
        tb.set_termination_grace_cap(Duration::from_secs(3));
    }
    let low = submit(
        &env,
        "low",
        2,
        json!({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 3}}}}),
    )
    .await;
    wait_job(&env, "low", "running", |j| counts(j).0 == 2).await;
    let high = submit(
        &env,
        "high",
        2,
        json!({"metadata": {"labels": {"kueue.x-k8s.io/priority-class": env.name("job-high")}}}),
    )
    .await;

    // The victim is suspended; its pods terminate while its quota stays reserved.
    wait_job(&env, "low", "suspended with terminating pods", |j| {
        suspended(j) && counts(j).1 > 0
    })
    .await;
    let victim = workload_of(&env, &low).await.expect("victim workload");
    assert!(is_evicted(&victim), "{:?}", victim.status);
    // Until the victim's pods are gone, the preemptor must never hold quota.
    let saw_terminating = std::sync::atomic::AtomicUsize::new(0);
    eventually(WAIT, "the victim's pods gone", || async {
        // The preemptor first: admitted then means the pods were gone before the read.
        let preemptor = workload_of(&env, &high).await;
        let low_job = job(&env, "low").await;
        let terminating = counts(&low_job).1;
        let admitted = preemptor.as_ref().is_some_and(is_admitted);
        if terminating == 0 {
            return true;
        }
        saw_terminating.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(
            !admitted,
            "the preemptor holds quota while the victim still has {terminating} terminating pod(s)"
        );
        false
    })
    .await;
    let saw_terminating = saw_terminating.into_inner();
    assert!(saw_terminating > 0);

    wait_workload(
        &env,
        &high,
        "admitted once the victim's pods are gone",
        is_admitted,
    )
    .await;
    wait_job(&env, "high", "running", |j| !suspended(j)).await;
    let victim = wait_workload(&env, &low, "quota released", |w| !is_admitted(w)).await;
    assert_eq!(condition_of(&victim, condition::QUOTA_RESERVED).0, "False");
    assert_eq!(condition_of(&victim, condition::ADMITTED).0, "False");
    assert_eq!(condition_of(&victim, condition::REQUEUED).0, "True");
    let (status, reason, message) = condition_of(&victim, condition::PREEMPTED);
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InClusterQueue")
    );
    assert!(message.contains("/job-high-"), "{message}");
    // Suspended for good (no quota for it) and its template restored for the next time.
    let low_job = wait_job(&env, "low", "template restored", |j| {
        j.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|s| s.node_selector.as_ref())
            .is_some_and(|s| !s.contains_key("pool"))
    })
    .await;
    assert!(suspended(&low_job));
    let stopped = wait_event(&env, "low", "Stopped").await;
    assert!(stopped.note.unwrap_or_default().contains("Preempted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_finishes_its_workload_and_frees_its_quota() {
    let Some((env, _worker)) = start(1).await else {
        return;
    };
    let first = submit(
        &env,
        "first",
        1,
        json!({"metadata": {"annotations": {"testbed.baton.dev/run-seconds": "1"}}}),
    )
    .await;
    wait_workload(&env, &first, "admitted", is_admitted).await;
    let second = submit(&env, "second", 1, json!({})).await;
    // Until the first Job's Workload is finished, the second one gets no quota.
    let is_finished = |w: &Workload| {
        w.status
            .as_ref()
            .is_some_and(|s| is_condition_true(&s.conditions, condition::FINISHED))
    };
    let done = eventually(
        WAIT,
        "first: finished, second waiting meanwhile",
        || async {
            // The second first: admitted then means the first had finished before the read.
            let second_wl = workload_of(&env, &second).await;
            let first_wl = workload_of(&env, &first).await;
            let done = first_wl.filter(|w| is_finished(w));
            if done.is_none() {
                assert!(
                    !second_wl.as_ref().is_some_and(is_admitted),
                    "the second Job was admitted while the first still held the quota"
                );
            }
            done
        },
    )
    .await;
    let (_, reason, message) = condition_of(&done, condition::FINISHED);
    assert_eq!(reason, "Succeeded");
    assert!(!message.is_empty());
    wait_workload(
        &env,
        &second,
        "admitted after the first finished",
        is_admitted,
    )
    .await;
    wait_job(&env, "second", "running", |j| !suspended(j)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_job_removes_its_workload() {
    let Some((env, _worker)) = start(4).await else {
        return;
    };
    let created = submit(&env, "doomed", 1, json!({})).await;
    wait_workload(&env, &created, "created", |_| true).await;
    jobs(&env)
        .delete("doomed", &DeleteParams::background())
        .await
        .expect("delete job");
    eventually(WAIT, "the Job's Workload is gone", || async {
        workload_of(&env, &created).await.is_none().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prebuilt_workload_is_waited_for_then_adopted() {
    let Some((env, _worker)) = start(4).await else {
        return;
    };
    let label =
        json!({"metadata": {"labels": {"kueue.x-k8s.io/prebuilt-workload-name": "replica"}}});
    let bound = submit(&env, "bound", 1, label).await;
    // A later Job gets its Workload: by then the shim has seen the first one too, and made
    // none for it.
    let marker = submit(&env, "marker", 1, json!({})).await;
    wait_workload(&env, &marker, "created", |_| true).await;
    assert!(workload_of(&env, &bound).await.is_none());
    let all = env
        .worker_workloads(1)
        .list(&ListParams::default())
        .await
        .expect("list");
    assert!(
        all.items
            .iter()
            .all(|w| w.owner_references().iter().all(|o| o.name != "bound")),
        "no Workload for a Job waiting for its prebuilt one"
    );
    assert!(suspended(&job(&env, "bound").await));

    // The manager's replica arrives: no owner, same queue.
    let replica: Workload = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "replica", "namespace": env.namespace},
        "spec": {"queueName": QUEUE, "podSets": [{"name": "main", "count": 1, "template":
            bound.spec.clone().unwrap_or_default().template}]}}))
    .expect("replica");
    env.worker_workloads(1)
        .create(&PostParams::default(), &replica)
        .await
        .expect("create replica");
    let adopted = eventually(WAIT, "replica adopted and admitted", || async {
        env.worker_workload(1, "replica")
            .await
            .filter(|w| is_admitted(w) && !w.owner_references().is_empty())
    })
    .await;
    let owner = &adopted.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Job", "bound", Some(true))
    );
    wait_job(&env, "bound", "running on the replica's admission", |j| {
        !suspended(j)
    })
    .await;
    assert!(
        workload_of(&env, &bound).await.is_none(),
        "never a second Workload"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_started_without_admission_is_suspended_with_a_warning() {
    let Some((env, _worker)) = start(1).await else {
        return;
    };
    // No admission policy is installed here, so nothing stops it starting; it asks for more
    // than the queue has, so it is never admitted.
    submit(&env, "stray", 3, json!({"spec": {"suspend": false}})).await;
    let warning = wait_event(&env, "stray", "StartedWithoutAdmission").await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(
        warning
            .note
            .unwrap_or_default()
            .contains("admission policy"),
        "says what prevents it"
    );
    let stray = wait_job(&env, "stray", "suspended", suspended).await;
    let wl = wait_workload(&env, &stray, "pending", |w| {
        condition_of(w, condition::QUOTA_RESERVED).0 == "False"
    })
    .await;
    assert!(!is_admitted(&wl));
    wait_job(&env, "stray", "its pods gone", |j| counts(j) == (0, 0)).await;
}
