//! Testbed: `batch/v1` Jobs and `v1` Pods, through kube-rs clients — Job admission
//! (defaults, validation, immutability) and the model of the job controller and kubelet
//! (pods run, terminate over the capped grace period when suspended, come back on resume,
//! succeed after `testbed.baton.dev/run-seconds`, go with their Job).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::harness;
use baton_testbed::server::RUN_SECONDS_ANNOTATION;
use baton_testbed::server::TestCluster;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(20);

fn job(name: &str, spec: Value) -> Job {
    let mut spec = spec;
    if spec.get("template").is_none() {
        spec["template"] = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36"}]}});
    }
    serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name}, "spec": spec}))
    .expect("a Job")
}

async fn start(name: &str) -> (TestCluster, Api<Job>, Api<Pod>) {
    let cluster = TestCluster::start_named(name).await.expect("a cluster");
    let client = cluster.client().expect("a client");
    let jobs = Api::namespaced(client.clone(), "default");
    let pods = Api::namespaced(client, "default");
    (cluster, jobs, pods)
}

fn api_error(e: kube::Error) -> kube::core::Status {
    harness::status_of(&e)
        .cloned()
        .unwrap_or_else(|| panic!("expected an API error, got {e:?}"))
}

async fn pods_of(pods: &Api<Pod>, job: &str) -> Vec<Pod> {
    let lp = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
    pods.list(&lp).await.expect("pods listed").items
}

fn status(job: &Job) -> Value {
    serde_json::to_value(job.status.clone().unwrap_or_default()).expect("json")
}

/// Waits until the Job's status satisfies `check` (polling, with a deadline); returns the Job.
async fn wait_job(jobs: &Api<Job>, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Job {
    let start = Instant::now();
    loop {
        let j = jobs.get(name).await.expect("the job");
        if check(&status(&j)) {
            return j;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}: {}",
            status(&j)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn running_and_ready(p: &Pod) -> bool {
    let s = serde_json::to_value(&p.status).expect("json");
    s["phase"] == "Running"
        && s["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

#[tokio::test]
async fn a_job_gets_upstream_defaults_and_a_generated_selector() {
    let (_cluster, jobs, _) = start("job-defaults").await;
    let created = jobs
        .create(
            &PostParams::default(),
            &job("plain", json!({"suspend": true})),
        )
        .await
        .expect("created");
    let v = serde_json::to_value(&created).expect("json");
    let uid = v["metadata"]["uid"].as_str().expect("a uid");
    let spec = &v["spec"];
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert!(spec.get("manualSelector").is_none());
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(
        spec["template"]["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "plain",
            "controller-uid": uid, "job-name": "plain"})
    );
    assert_eq!(
        spec["template"]["spec"]["terminationGracePeriodSeconds"],
        30
    );
    assert_eq!(v["metadata"]["generation"], 1);
    // The status is the controller's: a write to the main resource leaves it alone.
    // (After the controller's own write: the Suspended condition.)
    let suspended = wait_job(&jobs, "plain", "the Suspended condition", |s| {
        condition(s, "Suspended").is_some()
    })
    .await;
    assert!(status(&suspended).get("startTime").is_none());
    let mut with_status = suspended.clone();
    with_status.status = Some(serde_json::from_value(json!({"active": 5})).expect("status"));
    let replaced = jobs
        .replace("plain", &PostParams::default(), &with_status)
        .await
        .expect("replaced");
    assert_ne!(status(&replaced)["active"], 5);
}

#[tokio::test]
async fn invalid_jobs_are_refused_as_kube_apiserver_words_it() {
    let (_cluster, jobs, _) = start("job-invalid").await;
    let no_policy = job(
        "no-policy",
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}),
    );
    let e = api_error(
        jobs.create(&PostParams::default(), &no_policy)
            .await
            .expect_err("refused"),
    );
    assert_eq!(e.code, 422);
    assert_eq!(e.reason, "Invalid");
    assert_eq!(
        e.message,
        "Job.batch \"no-policy\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
    );
    let causes = e.details.expect("details").causes;
    assert_eq!(causes[0].field, "spec.template.spec.restartPolicy");
    assert_eq!(causes[0].reason, "FieldValueNotSupported");

    let no_containers = job(
        "empty",
        json!({"parallelism": -1, "template": {"spec": {"restartPolicy": "Never"}}}),
    );
    let e = api_error(
        jobs.create(&PostParams::default(), &no_containers)
            .await
            .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        "Job.batch \"empty\" is invalid: [spec.parallelism: Invalid value: -1: must be greater than or equal to 0, spec.template.spec.containers: Required value]"
    );

    let long = format!("example.com/{}", "x".repeat(60));
    let e = api_error(
        jobs.create(
            &PostParams::default(),
            &job("long", json!({"managedBy": long})),
        )
        .await
        .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        "Job.batch \"long\" is invalid: spec.managedBy: Too long: may not be more than 63 bytes"
    );
    let e = api_error(
        jobs.create(
            &PostParams::default(),
            &job("plain", json!({"managedBy": "plain"})),
        )
        .await
        .expect_err("refused"),
    );
    assert!(
        e.message
            .ends_with("must be a domain-prefixed path (such as \"acme.io/foo\")"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn managed_by_and_the_started_template_are_immutable() {
    let (_cluster, jobs, _) = start("job-immutable").await;
    let mk = job(
        "remote",
        json!({"suspend": true, "managedBy": "kueue.x-k8s.io/multikueue"}),
    );
    jobs.create(&PostParams::default(), &mk)
        .await
        .expect("created");
    let pp = PatchParams::default();
    let e = api_error(
        jobs.patch(
            "remote",
            &pp,
            &Patch::Merge(json!({"spec": {"managedBy": "example.com/other"}})),
        )
        .await
        .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        "Job.batch \"remote\" is invalid: spec.managedBy: Invalid value: \"example.com/other\": field is immutable"
    );
    // Suspended and never started: scheduling directives may change, the image may not.
    let node_selector = json!({"spec": {"template": {"spec": {"nodeSelector": {"zone": "a"}}}}});
    jobs.patch("remote", &pp, &Patch::Merge(node_selector))
        .await
        .expect("scheduling directives change while suspended");
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "other"}]}}}});
    let e = api_error(
        jobs.patch("remote", &pp, &Patch::Merge(image))
            .await
            .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        "Job.batch \"remote\" is invalid: spec.template: Invalid value: \"object\": field is immutable"
    );
    let e = api_error(
        jobs.patch(
            "remote",
            &pp,
            &Patch::Merge(json!({"spec": {"completions": 4}})),
        )
        .await
        .expect_err("refused"),
    );
    assert_eq!(
        e.message,
        "Job.batch \"remote\" is invalid: spec.completions: Invalid value: 4: field is immutable"
    );
}

#[tokio::test]
async fn suspending_terminates_pods_over_the_capped_grace_period_and_resuming_starts_new_ones() {
    let (cluster, jobs, pods) = start("job-suspend").await;
    cluster.set_termination_grace_cap(Duration::from_secs(1));
    jobs.create(
        &PostParams::default(),
        &job("work", json!({"parallelism": 2, "completions": 4})),
    )
    .await
    .expect("created");
    let running = wait_job(&jobs, "work", "two ready pods", |s| {
        s["active"] == 2 && s["ready"] == 2
    })
    .await;
    let s = status(&running);
    assert_eq!(s["terminating"], 0);
    assert_eq!(s["uncountedTerminatedPods"], json!({}));
    let started_at = s["startTime"].clone();
    assert!(started_at.is_string());
    let first = pods_of(&pods, "work").await;
    assert_eq!(first.len(), 2);
    for p in &first {
        assert!(running_and_ready(p), "{p:?}");
        let owner = &p.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!((owner.kind.as_str(), owner.controller), ("Job", Some(true)));
        let labels = p.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels["job-name"], "work");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "work");
        assert!(labels.contains_key("batch.kubernetes.io/controller-uid"));
    }

    jobs.patch(
        "work",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": true}})),
    )
    .await
    .expect("suspended");
    let terminating = wait_job(&jobs, "work", "pods terminating", |s| s["terminating"] == 2).await;
    let s = status(&terminating);
    assert!(
        s.get("active").is_none(),
        "active counts no terminating pod: {s}"
    );
    assert_eq!(s["ready"], 0);
    let suspended = condition(&s, "Suspended").expect("a Suspended condition");
    assert_eq!(
        (&suspended["status"], &suspended["reason"]),
        (&json!("True"), &json!("JobSuspended"))
    );
    // The pods go one capped second after their deletion started: deletionTimestamp minus
    // the 30 s grace period, in whole seconds as timestamps are written.
    let mut due = None;
    for p in pods_of(&pods, "work").await {
        let deleting = p.metadata.deletion_timestamp.expect("terminating").0;
        assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
        due = due.max(Some(deleting - jiff::SignedDuration::from_secs(29)));
    }
    let gone = wait_job(&jobs, "work", "pods gone", |s| s["terminating"] == 0).await;
    assert!(pods_of(&pods, "work").await.is_empty());
    let due = due.expect("terminating pods");
    assert!(jiff::Timestamp::now() >= due, "pods removed before {due}");
    assert!(status(&gone).get("active").is_none());

    jobs.patch(
        "work",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .expect("resumed");
    let resumed = wait_job(&jobs, "work", "resumed pods ready", |s| {
        s["active"] == 2 && s["ready"] == 2
    })
    .await;
    let s = status(&resumed);
    let cond = condition(&s, "Suspended").expect("the Suspended condition");
    assert_eq!(
        (&cond["status"], &cond["reason"]),
        (&json!("False"), &json!("JobResumed"))
    );
    let old: BTreeSet<_> = first.iter().map(|p| p.metadata.name.clone()).collect();
    let new: BTreeSet<_> = pods_of(&pods, "work")
        .await
        .iter()
        .map(|p| p.metadata.name.clone())
        .collect();
    assert!(old.is_disjoint(&new), "a resumed Job runs new pods");
}

#[tokio::test]
async fn run_seconds_make_pods_succeed_and_the_job_complete() {
    let (_cluster, jobs, pods) = start("job-complete").await;
    let mut j = job("short", json!({}));
    j.metadata.annotations = Some([(RUN_SECONDS_ANNOTATION.to_string(), "1".to_string())].into());
    jobs.create(&PostParams::default(), &j)
        .await
        .expect("created");
    let done = wait_job(&jobs, "short", "the Job complete", |s| {
        condition(s, "Complete").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let s = status(&done);
    assert_eq!(s["succeeded"], 1);
    assert!(s.get("active").is_none());
    assert!(s["completionTime"].is_string());
    let types: Vec<&Value> = s["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| &c["type"])
        .collect();
    assert_eq!(types, [&json!("SuccessCriteriaMet"), &json!("Complete")]);
    assert_eq!(
        condition(&s, "Complete").expect("Complete")["reason"],
        "CompletionsReached"
    );
    // The job controller's events, as `kubectl describe job` shows them.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(jobs.clone().into_client(), "default");
    let lp = ListParams::default().fields("involvedObject.name=short");
    let reasons: Vec<String> = events
        .list(&lp)
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.contains(&"SuccessfulCreate".to_string()),
        "{reasons:?}"
    );
    assert!(reasons.contains(&"Completed".to_string()), "{reasons:?}");
    let finished = pods_of(&pods, "short").await;
    assert_eq!(finished.len(), 1);
    let phase = finished[0].status.as_ref().and_then(|s| s.phase.clone());
    assert_eq!(phase.as_deref(), Some("Succeeded"));
}

#[tokio::test]
async fn jobs_managed_by_multikueue_are_left_alone() {
    let (_cluster, jobs, pods) = start("job-multikueue").await;
    let remote = job("remote", json!({"managedBy": "kueue.x-k8s.io/multikueue"}));
    jobs.create(&PostParams::default(), &remote)
        .await
        .expect("created");
    // The model looks at every Job in each pass: once a later Job runs, the first was seen.
    jobs.create(&PostParams::default(), &job("local", json!({})))
        .await
        .expect("created");
    wait_job(&jobs, "local", "the local Job running", |s| s["ready"] == 1).await;
    let untouched = jobs.get("remote").await.expect("the remote job");
    assert_eq!(status(&untouched), json!({}));
    assert!(pods_of(&pods, "remote").await.is_empty());
}

#[tokio::test]
async fn deleting_a_job_in_the_background_deletes_its_pods_and_by_default_orphans_them() {
    let (cluster, jobs, pods) = start("job-delete").await;
    cluster.set_termination_grace_cap(Duration::ZERO);
    for name in ["gone", "kept"] {
        jobs.create(
            &PostParams::default(),
            &job(name, json!({"parallelism": 2, "completions": 2})),
        )
        .await
        .expect("created");
        wait_job(&jobs, name, "two ready pods", |s| s["ready"] == 2).await;
    }
    jobs.delete("gone", &DeleteParams::background())
        .await
        .expect("deleted");
    harness::wait_until(DEADLINE, "the Job's pods gone", || {
        let pods = pods.clone();
        async move { pods_of(&pods, "gone").await.is_empty() }
    })
    .await;
    // Without a policy batch/v1 Jobs orphan their pods (kube-apiserver's default for them).
    jobs.delete("kept", &DeleteParams::default())
        .await
        .expect("deleted");
    harness::wait_until(DEADLINE, "the Job gone", || {
        let jobs = jobs.clone();
        async move { jobs.get_opt("kept").await.expect("a get").is_none() }
    })
    .await;
    let orphans = pods_of(&pods, "kept").await;
    assert_eq!(orphans.len(), 2);
    assert!(orphans.iter().all(|p| {
        p.metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty)
    }));
}

#[tokio::test]
async fn a_deleted_pod_terminates_then_goes() {
    let (cluster, jobs, pods) = start("pod-grace").await;
    cluster.set_termination_grace_cap(Duration::from_secs(1));
    jobs.create(&PostParams::default(), &job("one", json!({})))
        .await
        .expect("created");
    wait_job(&jobs, "one", "a ready pod", |s| s["ready"] == 1).await;
    let name = pods_of(&pods, "one").await[0]
        .metadata
        .name
        .clone()
        .expect("a name");
    let dp = DeleteParams {
        grace_period_seconds: Some(10),
        ..DeleteParams::default()
    };
    let answer = pods.delete(&name, &dp).await.expect("deleted");
    let marked = answer.left().expect("the pod, while it terminates");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(10));
    harness::wait_until(DEADLINE, "the pod gone", || {
        let pods = pods.clone();
        let name = name.clone();
        async move { pods.get_opt(&name).await.expect("a get").is_none() }
    })
    .await;
    // The Job replaces it.
    wait_job(&jobs, "one", "a replacement", |s| s["ready"] == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_jobs_and_pods_prints_kube_apiserver_columns() {
    let (cluster, jobs, _) = start("job-kubectl").await;
    let dir = tempfile::tempdir().expect("a directory");
    let kc = dir.path().join("kubeconfig");
    cluster.write_kubeconfig(&kc).expect("a kubeconfig");
    if harness::kubectl(&kc, &["version", "--client"]).is_none() {
        eprintln!("kubectl not found; skipping");
        return;
    }
    jobs.create(&PostParams::default(), &job("table", json!({})))
        .await
        .expect("created");
    wait_job(&jobs, "table", "a ready pod", |s| s["ready"] == 1).await;
    let out = harness::kubectl(&kc, &["get", "jobs,pods", "-n", "default"]).expect("kubectl ran");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    );
    assert_eq!(&lines[1][..3], ["job.batch/table", "Running", "0/1"]);
    let pods_header = lines
        .iter()
        .position(|l| l.first() == Some(&"NAME") && l.get(1) == Some(&"READY"));
    let at = pods_header.expect("a pods table");
    assert_eq!(lines[at], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert!(lines[at + 1][0].starts_with("pod/table-"));
    assert_eq!(&lines[at + 1][1..4], ["1/1", "Running", "0"]);
    let wide = harness::kubectl(&kc, &["get", "jobs", "-o", "wide", "-n", "default"])
        .expect("kubectl ran");
    let header = String::from_utf8_lossy(&wide.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "NAME",
            "STATUS",
            "COMPLETIONS",
            "DURATION",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
}
