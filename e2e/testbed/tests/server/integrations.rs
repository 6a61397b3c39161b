//! Testbed: the job kinds AI teams submit — the JobSet, Kubeflow Trainer and KubeRay CRDs as
//! their projects ship them (`shared/integrations/crds/`, applied with `kubectl apply
//! --server-side` as they must be: client-side apply's last-applied annotation would pass
//! 256 KiB), the documentation's examples applied unchanged, and the stand-in controllers
//! running them through the job controller and kubelet model: JobSet → child Jobs → pods →
//! Completed; TrainJob → JobSet from its runtime; RayJob → head and worker pods.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness;
use baton_testbed::server::{ClusterOptions, RUN_SECONDS_ANNOTATION, TestCluster};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{Value, json};

const DEADLINE: Duration = Duration::from_secs(30);

fn shared_dir() -> PathBuf {
    std::env::var_os("BATON_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn integrations(sub: &str) -> PathBuf {
    shared_dir().join("integrations").join(sub)
}

struct Ctx {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cluster: TestCluster,
}

impl Ctx {
    fn dir(&self) -> &Path {
        self._dir.path()
    }

    fn api(&self, group: &str, version: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        Api::namespaced_with(self.cluster.client().unwrap(), "default", &ar)
    }
}

/// A cluster with the integration CRDs applied server-side by kubectl; None without kubectl.
async fn setup(name: &str) -> Option<Ctx> {
    let cluster = TestCluster::start(ClusterOptions {
        name: name.into(),
        termination_grace_cap: Duration::from_millis(200),
        ..ClusterOptions::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join(format!("{name}.kubeconfig"));
    cluster.write_kubeconfig(&kubeconfig).unwrap();
    let crds = integrations("crds").display().to_string();
    run(&kubeconfig, &["apply", "--server-side", "-f", &crds])?;
    Some(Ctx {
        _dir: dir,
        kubeconfig,
        cluster,
    })
}

/// Runs kubectl; None if kubectl is missing. Panics with its output if it fails.
fn run(kc: &Path, args: &[&str]) -> Option<String> {
    let out = harness::kubectl(kc, args)?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{stdout}\n{stderr}"
    );
    Some(stdout)
}

fn example(name: &str) -> String {
    integrations("examples").join(name).display().to_string()
}

async fn wait_for(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    let start = std::time::Instant::now();
    loop {
        if let Ok(Some(o)) = api.get_opt(name).await {
            last = serde_json::to_value(&o).unwrap();
            if check(&last) {
                return last;
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}; last seen:\n{last:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn has_condition(obj: &Value, kind: &str, status: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == status)
}

async fn pods_with(ctx: &Ctx, selector: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(ctx.cluster.client().unwrap(), "default");
    pods.list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
}

fn running(pods: &[Pod]) -> usize {
    pods.iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crds_are_too_big_for_client_side_apply_and_are_served_once_applied_server_side() {
    let Some(ctx) = setup("integration-crds").await else {
        return;
    };
    let out = harness::kubectl(
        &ctx.kubeconfig,
        &[
            "apply",
            "-f",
            &integrations("crds")
                .join("ray.io_rayjobs.yaml")
                .display()
                .to_string(),
        ],
    )
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "client-side apply of a 1.4 MB CRD succeeded"
    );
    assert!(
        stderr.contains("Too long: may not be more than 262144 bytes"),
        "{stderr}"
    );
    let resources = run(&ctx.kubeconfig, &["api-resources", "-o", "name"]).unwrap();
    for r in [
        "jobsets.jobset.x-k8s.io",
        "trainjobs.trainer.kubeflow.org",
        "clustertrainingruntimes.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "rayjobs.ray.io",
        "rayclusters.ray.io",
    ] {
        assert!(
            resources.lines().any(|l| l == r),
            "{r} not served:\n{resources}"
        );
    }
    let explained = run(
        &ctx.kubeconfig,
        &["explain", "jobset.spec.replicatedJobs.replicas"],
    )
    .unwrap();
    assert!(explained.contains("replicas"), "{explained}");
    // The RayCluster sample is accepted as written (nothing runs RayClusters here).
    run(
        &ctx.kubeconfig,
        &[
            "apply",
            "-n",
            "default",
            "-f",
            &example("kueue-ray-cluster-sample.yaml"),
        ],
    )
    .unwrap();
    // The CRDs' own validation (schema and CEL) applies: a TrainJob name must be a DNS label.
    let bad = ctx.dir().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: a.b\n  namespace: default\nspec:\n  runtimeRef:\n    name: x\n").unwrap();
    let out = harness::kubectl(
        &ctx.kubeconfig,
        &["create", "-f", &bad.display().to_string()],
    )
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("metadata.name must match RFC 1035 DNS label format"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobset_example_runs_as_child_jobs_and_completes() {
    let Some(ctx) = setup("jobset-example").await else {
        return;
    };
    let created = run(
        &ctx.kubeconfig,
        &[
            "create",
            "-f",
            &example("kueue-sample-jobset.yaml"),
            "-o",
            "name",
        ],
    )
    .unwrap();
    let name = created.trim().rsplit('/').next().unwrap().to_string();
    let jobsets = ctx.api("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets");
    let js = wait_for(&jobsets, &name, "both replicated jobs ready", |js| {
        js["status"]["replicatedJobsStatus"]
            .as_array()
            .is_some_and(|l| l.len() == 2 && l.iter().all(|s| s["ready"] == 1 && s["active"] == 1))
    })
    .await;
    assert!(js["status"]["terminalState"].is_null());
    let jobs: Api<Job> = Api::namespaced(ctx.cluster.client().unwrap(), "default");
    for child in ["workers-0", "driver-0"] {
        let job = jobs.get(&format!("{name}-{child}")).await.unwrap();
        let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("JobSet", name.as_str())
        );
    }
    let pods = pods_with(&ctx, &format!("jobset.sigs.k8s.io/jobset-name={name}")).await;
    assert_eq!(running(&pods), 2, "one pod per replicated job");

    // Suspended: every child Job is suspended and its pods go; resumed: they come back.
    let patch = |suspend: bool| Patch::Merge(json!({"spec": {"suspend": suspend}}));
    jobsets
        .patch(&name, &PatchParams::default(), &patch(true))
        .await
        .unwrap();
    wait_for(&jobsets, &name, "the JobSet suspended", |js| {
        has_condition(js, "Suspended", "True")
            && js["status"]["replicatedJobsStatus"]
                .as_array()
                .is_some_and(|l| l.iter().all(|s| s["suspended"] == 1))
    })
    .await;
    harness::wait_until(DEADLINE, "the pods gone", || async {
        pods_with(&ctx, &format!("jobset.sigs.k8s.io/jobset-name={name}"))
            .await
            .is_empty()
    })
    .await;
    jobsets
        .patch(&name, &PatchParams::default(), &patch(false))
        .await
        .unwrap();
    wait_for(&jobsets, &name, "the JobSet resumed and ready", |js| {
        has_condition(js, "Suspended", "False")
            && js["status"]["replicatedJobsStatus"]
                .as_array()
                .is_some_and(|l| l.iter().all(|s| s["ready"] == 1))
    })
    .await;

    // The same example whose pods end after a second completes.
    let text = std::fs::read_to_string(example("kueue-sample-jobset.yaml")).unwrap();
    let mut doc: Value = serde_saphyr::from_str(&text).unwrap();
    doc["metadata"]["annotations"] = json!({RUN_SECONDS_ANNOTATION: "1"});
    let file = ctx.dir().join("short.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let created = run(
        &ctx.kubeconfig,
        &["create", "-f", &file.display().to_string(), "-o", "name"],
    )
    .unwrap();
    let short = created.trim().rsplit('/').next().unwrap().to_string();
    let done = wait_for(&jobsets, &short, "the JobSet completed", |js| {
        js["status"]["terminalState"] == "Completed"
    })
    .await;
    assert!(has_condition(&done, "Completed", "True"));
    let counts = &done["status"]["replicatedJobsStatus"];
    assert!(
        counts
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["succeeded"] == 1),
        "{counts}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trainjob_example_runs_as_a_jobset_of_its_runtime() {
    let Some(ctx) = setup("trainjob-example").await else {
        return;
    };
    run(
        &ctx.kubeconfig,
        &[
            "apply",
            "-f",
            &example("trainer-runtime-torch_distributed.yaml"),
        ],
    )
    .unwrap();
    run(
        &ctx.kubeconfig,
        &[
            "apply",
            "-n",
            "default",
            "-f",
            &example("trainer-03-kueue-integration.yaml"),
        ],
    )
    .unwrap();
    let trainjobs = ctx.api("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs");
    let jobsets = ctx.api("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets");
    // The example is submitted suspended (for Kueue): a suspended JobSet, no pods.
    wait_for(&trainjobs, "kueue-example", "the TrainJob suspended", |t| {
        has_condition(t, "Suspended", "True")
    })
    .await;
    let js = wait_for(&jobsets, "kueue-example", "its JobSet", |js| {
        js["spec"]["suspend"] == true
    })
    .await;
    let rj = &js["spec"]["replicatedJobs"][0]["template"]["spec"];
    assert_eq!(
        (rj["parallelism"].as_i64(), rj["completions"].as_i64()),
        (Some(3), Some(3)),
        "numNodes"
    );
    assert_eq!(
        rj["template"]["spec"]["containers"][0]["image"],
        "python:3.11-slim"
    );
    assert_eq!(js["metadata"]["ownerReferences"][0]["kind"], "TrainJob");

    trainjobs
        .patch(
            "kueue-example",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .unwrap();
    let tj = wait_for(&trainjobs, "kueue-example", "the TrainJob running", |t| {
        has_condition(t, "Suspended", "False") && t["status"]["jobsStatus"][0]["ready"] == 1
    })
    .await;
    assert_eq!(tj["status"]["jobsStatus"][0]["name"], "node");
    let pods = pods_with(&ctx, "jobset.sigs.k8s.io/jobset-name=kueue-example").await;
    assert_eq!(running(&pods), 3, "numNodes pods");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rayjob_example_runs_head_and_worker_pods() {
    let Some(ctx) = setup("rayjob-example").await else {
        return;
    };
    run(
        &ctx.kubeconfig,
        &[
            "apply",
            "-n",
            "default",
            "-f",
            &example("kueue-ray-job-sample.yaml"),
        ],
    )
    .unwrap();
    let rayjobs = ctx.api("ray.io", "v1", "RayJob", "rayjobs");
    let rj = wait_for(&rayjobs, "rayjob-sample", "the RayJob running", |r| {
        r["status"]["jobDeploymentStatus"] == "Running"
    })
    .await;
    assert_eq!(rj["status"]["jobStatus"], "RUNNING");
    assert_eq!(rj["status"]["rayClusterStatus"]["readyWorkerReplicas"], 1);
    let pods = pods_with(&ctx, "ray.io/cluster=rayjob-sample").await;
    assert_eq!(running(&pods), 2, "a head and one worker");

    rayjobs
        .patch(
            "rayjob-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let rj = wait_for(&rayjobs, "rayjob-sample", "the RayJob suspended", |r| {
        r["status"]["jobDeploymentStatus"] == "Suspended"
    })
    .await;
    assert!(rj["status"]["jobStatus"].is_null());
    assert!(
        pods_with(&ctx, "ray.io/cluster=rayjob-sample")
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_managed_by_another_controller_are_left_alone() {
    let Some(ctx) = setup("managed-elsewhere").await else {
        return;
    };
    let jobsets = ctx.api("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets");
    let jobset = |name: &str, managed_by: Option<&str>| {
        let mut js = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
                "containers": [{"name": "c", "image": "busybox"}]}}}}}]}});
        if let Some(m) = managed_by {
            js["spec"]["managedBy"] = json!(m);
        }
        serde_json::from_value::<DynamicObject>(js).unwrap()
    };
    let pp = kube::api::PostParams::default();
    jobsets
        .create(&pp, &jobset("remote", Some("kueue.x-k8s.io/multikueue")))
        .await
        .unwrap();
    jobsets.create(&pp, &jobset("local", None)).await.unwrap();
    // The stand-in looks at every JobSet in each pass: once the later one has its Job, the
    // earlier one was seen too.
    wait_for(&jobsets, "local", "the local JobSet's status", |js| {
        js["status"]["replicatedJobsStatus"].is_array()
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(ctx.cluster.client().unwrap(), "default");
    assert!(jobs.get_opt("local-w-0").await.unwrap().is_some());
    assert!(jobs.get_opt("remote-w-0").await.unwrap().is_none());
    let remote = jobsets.get("remote").await.unwrap();
    assert!(serde_json::to_value(&remote).unwrap()["status"].is_null());
}
