//! The chart's RBAC, enforced: the ServiceAccounts, Roles, ClusterRoles and bindings that
//! `helm template` renders for the manager and for the workers (with `managerAccess`) are
//! installed into testbed clusters, and the real `baton manager` and `baton worker` binaries
//! run with exactly those permissions:
//!
//! - the manager as the chart's manager ServiceAccount on the manager cluster, and towards
//!   each worker with the chart's manager-access token (the kubeconfig Secrets the manager
//!   reads hold a kubeconfig built from the chart's token Secret, nothing else);
//! - each worker shim as the chart's worker ServiceAccount on its cluster.
//!
//! With the chart as it is, the whole KEP-8303 flow works, and so does the batch/v1 Job flow
//! (a Workload per Job, unsuspension on admission, the MultiKueue copy on the winner, its
//! status mirrored, its deletion), and no controller is ever denied anything. With one verb
//! the controllers need taken out of the rendered rules, the flow fails, and fails with a
//! 403 naming that verb.
//!
//! Rendering needs Helm 3: `$HELM`, else `helm` on PATH; without it the tests print
//! "skipped: no helm" and pass.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
use baton_crds::gates::gate_state;
use baton_crds::multikueue::MultiKueueCluster;
use baton_crds::workload::{CheckState, GateState, Workload};
use baton_e2e::chart::{
    component, denials, granted_to, install, name_of, rbac_objects, render, revoke,
    start_controller, token_of,
};
use baton_e2e::harness::eventually;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::harness::service_account::token_kubeconfig;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::{is_admitted, is_evicted, is_gated};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);
const KUEUE: &str = "kueue.x-k8s.io";

fn helm_or_skip() -> Option<PathBuf> {
    let helm = baton_e2e::chart::helm().expect("HELM");
    if helm.is_none() {
        eprintln!("skipped: no helm");
    }
    helm
}

/// Testbed (or real) clusters holding only what the chart renders for Baton's identities, and
/// the controllers running as those identities.
struct ChartEnv {
    env: Env,
    dir: tempfile::TempDir,
    /// The namespace of the worker releases (the manager's is `env.namespace`).
    worker_namespace: String,
    manager_kubeconfig: PathBuf,
    worker_kubeconfigs: Vec<PathBuf>,
    config: PathBuf,
    processes: Vec<BatonProcess>,
}

impl ChartEnv {
    /// Renders both modes, lets `edit` change the manager's and the workers' objects, installs
    /// them, and points the manager's kubeconfig Secrets at the workers' manager-access token.
    async fn start(
        helm: &Path,
        workers: usize,
        edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>),
    ) -> Self {
        Self::start_with(helm, workers, &[], &[], edit).await
    }

    /// As [`ChartEnv::start`], with `crds` installed on every cluster first (as an admin)
    /// and `args` added to both renders.
    async fn start_with(
        helm: &Path,
        workers: usize,
        crds: &[Value],
        args: &[&str],
        edit: impl FnOnce(&mut Vec<Value>, &mut Vec<Value>),
    ) -> Self {
        let env = Env::start(workers).await.expect("env");
        for crd in crds {
            env.install_crd_everywhere(crd).await.expect("CRD");
        }
        let worker_namespace = env
            .clusters
            .namespace("baton-system")
            .await
            .expect("namespace");
        // Cluster-scoped names must not collide on shared real clusters.
        let release = if env.is_testbed() {
            "baton".to_string()
        } else {
            env.namespace.clone()
        };
        let manager_args: Vec<&str> = ["--set", "mode=manager"]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let mut manager_docs = rbac_objects(
            &render(helm, &release, &env.namespace, &manager_args).expect("manager render"),
        );
        let mut worker_docs = rbac_objects(
            &render(
                helm,
                &release,
                &worker_namespace,
                &[
                    "--set",
                    "mode=worker",
                    "--set",
                    "managerAccess.enabled=true",
                ]
                .into_iter()
                .chain(args.iter().copied())
                .collect::<Vec<_>>(),
            )
            .expect("worker render"),
        );
        edit(&mut manager_docs, &mut worker_docs);

        let manager_sa = name_of(&manager_docs, "ServiceAccount", "manager").expect("manager SA");
        let worker_sa = name_of(&worker_docs, "ServiceAccount", "worker").expect("worker SA");
        let token_secret =
            name_of(&worker_docs, "Secret", "manager-access").expect("manager-access token");

        let manager = env.clusters.manager();
        for (resource, name) in install(&manager.client, &manager_docs)
            .await
            .expect("install the manager's RBAC")
        {
            env.clusters.track(0, resource, &name);
        }
        let manager_kubeconfig = manager
            .service_account_kubeconfig(&env.namespace, &manager_sa)
            .await
            .expect("manager kubeconfig");

        let secrets: Api<Secret> = Api::namespaced(env.manager_client(), &env.namespace);
        let mut worker_kubeconfigs = Vec::new();
        for (i, worker) in env.clusters.workers().iter().enumerate() {
            for (resource, name) in install(&worker.client, &worker_docs)
                .await
                .expect("install the worker's RBAC")
            {
                env.clusters.track(i + 1, resource, &name);
            }
            worker_kubeconfigs.push(
                worker
                    .service_account_kubeconfig(&worker_namespace, &worker_sa)
                    .await
                    .expect("worker kubeconfig"),
            );
            // What hack/connect-worker.sh does: the chart's token Secret, filled by the
            // cluster, becomes the manager's kubeconfig for this worker.
            let token = token_of(&worker.client, &worker_namespace, &token_secret, WAIT)
                .await
                .expect("manager-access token");
            let kubeconfig = match worker.testbed.as_deref() {
                Some(tc) => tc.token_kubeconfig(&token, &worker_namespace),
                None => token_kubeconfig(&worker.kubeconfig, &token, &worker_namespace)
                    .expect("kubeconfig"),
            };
            let encoded = {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.encode(&kubeconfig)
            };
            secrets
                .patch(
                    &format!("{}-kubeconfig", env.cluster(i + 1)),
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"kubeconfig": encoded}})),
                )
                .await
                .expect("replace the admin kubeconfig Secret");
            env.install_worker_queues(i + 1, 4, json!({}))
                .await
                .expect("queues");
        }

        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "metricsBindAddress: 127.0.0.1:0\nhealthProbeBindAddress: 127.0.0.1:0\n\
                 leaderElection: {{enabled: false}}\norigin: {}\n\
                 singleClusterPreemptionTimeout: 60s\ngcInterval: 1s\n",
                env.origin
            ),
        )
        .expect("config");
        ChartEnv {
            env,
            dir,
            worker_namespace,
            manager_kubeconfig,
            worker_kubeconfigs,
            config,
            processes: Vec::new(),
        }
    }

    fn start_worker(&mut self, i: usize) {
        let name = format!("worker-{i}");
        let process = start_controller(
            &name,
            "worker",
            &self.worker_kubeconfigs[i - 1],
            &self.config,
            &["--namespace", &self.worker_namespace],
            self.dir.path().join(format!("{name}.log")),
        )
        .expect("baton worker");
        self.processes.push(process);
    }

    fn start_manager(&mut self) {
        let process = start_controller(
            "manager",
            "manager",
            &self.manager_kubeconfig,
            &self.config,
            &["--namespace", &self.env.namespace],
            self.dir.path().join("manager.log"),
        )
        .expect("baton manager");
        self.processes.push(process);
    }

    fn process(&self, name: &str) -> &BatonProcess {
        self.processes
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no process {name}"))
    }

    /// Fills worker `i` with four 1-CPU low-priority workloads and waits until they run.
    async fn fill(&self, i: usize) {
        self.env.fill_worker(i, 4, WAIT).await;
    }

    /// Waits until the manager reports every worker cluster connected.
    async fn clusters_active(&self) {
        let api: Api<MultiKueueCluster> = Api::all(self.env.manager_client());
        for i in 1..=self.env.worker_count() {
            let name = self.env.cluster(i);
            eventually(
                WAIT,
                &format!("MultiKueueCluster {name} Active"),
                || async {
                    let mkc = api.get_opt(&name).await.ok().flatten()?;
                    mkc.status
                        .filter(|s| is_condition_true(&s.conditions, "Active"))
                        .map(|_| ())
                },
            )
            .await;
        }
    }
}

impl Drop for ChartEnv {
    /// A failing test shows what the controllers said.
    fn drop(&mut self) {
        if std::thread::panicking() {
            for p in &self.processes {
                eprintln!("--- {} ({})\n{}", p.name, p.log.display(), p.log_text());
            }
        }
    }
}

/// Submits the high-priority 2-CPU workload on the manager.
async fn submit_high(env: &Env) {
    env.submit_with_priority("high", 2, Some(1000))
        .await
        .expect("submit");
}

/// What a watch on one worker saw of the replica `high`.
#[derive(Default, Debug, Clone, Copy)]
struct Seen {
    /// Waiting on its Closed gate (QuotaReservationBlocked, reason PreemptionGated).
    gated: bool,
    /// Its gate Open.
    opened: bool,
}

/// A watch task, stopped when dropped (while the clusters are still up: a watch left running
/// into the runtime's shutdown could spin on errors and keep the runtime from stopping).
struct Watch {
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    fn seen(&self) -> Seen {
        *self.seen.lock().expect("lock")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Records every version of the replica `high` on worker `i`.
fn watch_high(env: &Env, i: usize) -> Watch {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    let api = env.worker_workloads(i);
    let task = tokio::spawn(async move {
        let config = watcher::Config::default().fields("metadata.name=high");
        let mut stream = watcher(api, config).default_backoff().boxed();
        while let Some(event) = stream.next().await {
            let wl = match event {
                Ok(watcher::Event::Apply(wl) | watcher::Event::InitApply(wl)) => wl,
                _ => continue,
            };
            let gate = gate_state(&wl, MULTIKUEUE_GATE);
            let blocked_by_gate = wl.status.as_ref().is_some_and(|st| {
                st.conditions.iter().any(|c| {
                    c.type_ == condition::QUOTA_RESERVATION_BLOCKED
                        && c.status == "True"
                        && c.reason == reason::PREEMPTION_GATED
                })
            });
            let mut s = record.lock().expect("lock");
            s.gated |= is_gated(&wl) && blocked_by_gate && gate == Some(GateState::Closed);
            s.opened |= gate == Some(GateState::Open);
        }
    });
    Watch { seen, task }
}

/// The reasons of the Events about `name` in `namespace` (core/v1 view of every Event).
async fn event_reasons(client: kube::Client, namespace: &str, name: &str) -> Vec<String> {
    let api: Api<Event> = Api::namespaced(client, namespace);
    api.list(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter(|e| e.involved_object.name.as_deref() == Some(name))
                .filter_map(|e| e.reason)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_need_no_permission_the_chart_does_not_grant() {
    let Some(helm) = helm_or_skip() else { return };
    let started = std::time::Instant::now();
    let mut ce = ChartEnv::start(&helm, 2, |_, _| {}).await;
    for i in 1..=2 {
        ce.start_worker(i);
    }
    for i in 1..=2 {
        ce.fill(i).await;
    }
    let watches = [watch_high(&ce.env, 1), watch_high(&ce.env, 2)];
    ce.start_manager();
    ce.clusters_active().await;
    submit_high(&ce.env).await;

    // The manager admits `high` where it ran.
    let env = &ce.env;
    let cluster = eventually(WAIT, "high admitted on the manager", || async {
        let wl = env
            .manager_workloads()
            .get_opt("high")
            .await
            .ok()
            .flatten()?;
        let status = wl.status?;
        let cluster = status.cluster_name.clone()?;
        let ready = status
            .admission_checks
            .iter()
            .any(|c| c.name == env.check() && c.state == CheckState::Ready);
        (is_condition_true(&status.conditions, condition::ADMITTED) && ready).then_some(cluster)
    })
    .await;
    // The manager keeps its MultiKueue check's and queues' status (the chart grants the
    // status verbs): `kubectl get ac,cq,lq` on the manager shows the admitted workload.
    let jsonpath = |kind: &str, name: &str, path: &str| {
        env.kubectl(
            "manager",
            &["get", kind, name, "-o", &format!("jsonpath={path}")],
        )
    };
    let active = r#"{.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Active")].reason}"#;
    eventually(WAIT, "the manager's queue and check status", || async {
        let check = jsonpath("admissionchecks", &env.check(), active);
        let cq = jsonpath(
            "clusterqueues",
            &env.cluster_queue(),
            &format!("{{.status.pendingWorkloads}}/{{.status.admittedWorkloads}} {active}"),
        );
        let lq = jsonpath(
            "localqueues",
            "user-queue",
            "{.status.pendingWorkloads}/{.status.admittedWorkloads}",
        );
        (check == "True/Active" && cq == "0/1 True/Ready" && lq == "0/1").then_some(())
    })
    .await;
    let winner = (1..=2)
        .find(|i| env.cluster(*i) == cluster)
        .unwrap_or_else(|| panic!("admitted on an unknown cluster {cluster}"));
    let loser = 3 - winner;

    // The loser's replica is deleted; the winner's runs after preempting two victims.
    eventually(WAIT, "the losing replica deleted", || async {
        env.worker_workloads(loser)
            .get_opt("high")
            .await
            .ok()
            .map(|r| r.is_none().then_some(()))?
    })
    .await;
    let replica = env.replica(winner, "high").await.expect("winner's replica");
    assert!(is_admitted(&replica), "{replica:?}");
    let seen: Vec<Seen> = watches.iter().map(Watch::seen).collect();
    assert!(
        seen.iter().all(|s| s.gated),
        "both replicas waited on their gate: {seen:?}"
    );
    assert!(
        seen[winner - 1].opened,
        "the winner's gate opened: {seen:?}"
    );
    assert!(!seen[loser - 1].opened, "one gate only: {seen:?}");
    let mut evicted = Vec::new();
    for i in 1..=2 {
        evicted.push(env.count_low(i, 4, is_evicted).await);
    }
    let mut expected = vec![0, 0];
    expected[winner - 1] = 2;
    assert_eq!(evicted, expected, "victims per worker");

    // Events got through: the manager's on its Workload and (as manager-access) on the
    // winner's replica, the worker shim's on its victims.
    eventually(WAIT, "the manager's events", || async {
        let reasons = event_reasons(env.manager_client(), &env.namespace, "high").await;
        (reasons.iter().any(|r| r == "PreemptionGateOpened")
            && reasons.iter().any(|r| r == "MultiKueue"))
        .then_some(())
    })
    .await;
    eventually(
        WAIT,
        "the manager's event on the winner's replica",
        || async {
            let reasons = event_reasons(env.worker_client(winner), &env.namespace, "high").await;
            reasons
                .iter()
                .any(|r| r == "PreemptionGateOpened")
                .then_some(())
        },
    )
    .await;
    eventually(WAIT, "the worker shim's Preempted events", || async {
        let mut n = 0;
        for j in 1..=4 {
            let reasons = event_reasons(
                env.worker_client(winner),
                &env.namespace,
                &format!("low-{j}"),
            )
            .await;
            n += usize::from(reasons.iter().any(|r| r == "Preempted"));
        }
        (n == 2).then_some(())
    })
    .await;

    // Deleting the Workload on the manager removes the winner's replica (manager-access
    // `delete`), then the manager's finalizer (`patch` on the manager's Workloads).
    env.delete("high").await.expect("delete high");
    eventually(WAIT, "high and its replica deleted", || async {
        let gone = |r: Result<Option<Workload>, kube::Error>| matches!(r, Ok(None));
        (gone(env.manager_workloads().get_opt("high").await)
            && gone(env.worker_workloads(winner).get_opt("high").await))
        .then_some(())
    })
    .await;

    // Nobody was denied anything, and everyone is still running.
    for p in &mut ce.processes {
        let log = p.log_text();
        let denied = denials(&log);
        assert!(
            denied.is_empty(),
            "{} was denied:\n{}",
            p.name,
            denied.join("\n")
        );
        assert!(p.is_running(), "{} exited", p.name);
    }
    println!("chart RBAC flow: {:?}", started.elapsed());
}

/// The worker shim without `patch` on `workloads/status` (its status writes are merge
/// patches): it cannot admit anything, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_a_verb_it_needs_admits_nothing() {
    let Some(helm) = helm_or_skip() else { return };
    let resource = "workloads/status";
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        let before = granted_to(worker, "worker", KUEUE, resource);
        assert!(before.contains("patch"), "the chart grants {before:?}");
        let changed =
            revoke(worker, "ClusterRole", "worker", KUEUE, resource, "patch").expect("revoke");
        assert!(!changed.is_empty());
        // Everything else stays: only this one verb is missing.
        let after = granted_to(worker, "worker", KUEUE, resource);
        let mut expected = before.clone();
        expected.remove("patch");
        assert_eq!(after, expected);
        assert!(worker.iter().any(|d| component(d) == "manager-access"));
    })
    .await;
    ce.start_worker(1);
    ce.env
        .submit_on_worker(1, "local", 1, 0, json!({}))
        .await
        .expect("local workload");

    // The shim tries, is refused with a 403 naming the verb, and tries again.
    let worker = ce.process("worker-1");
    let denied = eventually(
        WAIT,
        "the worker's status writes refused three times",
        || async {
            let log = worker.log_text();
            let denied: Vec<String> = denials(&log)
                .into_iter()
                .filter(|l| l.contains(r#"cannot patch resource "workloads/status""#))
                .map(String::from)
                .collect();
            (denied.len() >= 3).then_some(denied)
        },
    )
    .await;
    assert!(denied[0].contains("local"), "{}", denied[0]);
    let wl = ce
        .env
        .worker_workload(1, "local")
        .await
        .expect("the local workload");
    assert!(!is_admitted(&wl), "admitted without status writes: {wl:?}");
    assert!(
        wl.status.as_ref().is_none_or(|s| s.conditions.is_empty()),
        "the shim wrote a status it may not write: {:?}",
        wl.status
    );
}

/// The manager without `create` on the workers' `workloads` (manager-access): it connects but
/// cannot dispatch, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_without_a_verb_it_needs_dispatches_nothing() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        revoke(
            worker,
            "ClusterRole",
            "manager-access",
            KUEUE,
            "workloads",
            "create",
        )
        .expect("revoke");
    })
    .await;
    ce.start_worker(1);
    ce.start_manager();
    ce.clusters_active().await;
    submit_high(&ce.env).await;

    let env = &ce.env;
    eventually(
        WAIT,
        "ReplicaCreationFailed on the manager's workload",
        || async {
            let reasons = event_reasons(env.manager_client(), &env.namespace, "high").await;
            reasons
                .iter()
                .any(|r| r == "ReplicaCreationFailed")
                .then_some(())
        },
    )
    .await;
    let manager = ce.process("manager");
    let denied = eventually(WAIT, "the manager's replica creation refused", || async {
        let log = manager.log_text();
        denials(&log)
            .into_iter()
            .find(|l| l.contains(r#"cannot create resource "workloads""#))
            .map(String::from)
    })
    .await;
    assert!(denied.contains("high"), "{denied}");
    assert!(
        env.replica(1, "high").await.is_none(),
        "a replica was created without the permission"
    );
}

// ---- batch/v1 Jobs (DESIGN.md §8) with the chart's permissions

const JOB_GROUP: &str = "batch";
const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";

/// A queued Job of one 1-CPU pod, created suspended (as the chart's admission policies
/// require); `managed_by` is `kueue.x-k8s.io/multikueue` for a manager Job.
fn queued_job(name: &str, namespace: &str, managed_by: Option<&str>) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {QUEUE_NAME_LABEL: "user-queue"}},
        "spec": {"suspend": true, "managedBy": managed_by, "parallelism": 1, "completions": 1,
            "template": {"spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "busybox",
                    "resources": {"requests": {"cpu": "1"}}}]}}},
    }))
    .expect("a Job")
}

fn jobs(client: kube::Client, namespace: &str) -> Api<Job> {
    Api::namespaced(client, namespace)
}

async fn create_job(client: kube::Client, job: &Job) -> Job {
    let namespace = job.metadata.namespace.as_deref().expect("a namespace");
    jobs(client, namespace)
        .create(&PostParams::default(), job)
        .await
        .expect("create the Job")
}

fn is_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// The Workloads on `api` owned by the Job `job` (by uid).
async fn workloads_of(api: &Api<Workload>, job: &Job) -> Vec<Workload> {
    let uid = job.metadata.uid.clone();
    api.list(&Default::default())
        .await
        .map(|list| {
            list.items
                .into_iter()
                .filter(|wl| {
                    wl.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.kind == "Job" && Some(&o.uid) == uid.as_ref())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the controller's log shows a 403 for `verb` on `resource`, and returns the
/// first such line.
async fn denied(process: &BatonProcess, verb: &str, resource: &str) -> String {
    let needle = format!(r#"cannot {verb} resource "{resource}""#);
    eventually(
        WAIT,
        &format!("{} refused {verb} on {resource}", process.name),
        || async {
            let log = process.log_text();
            denials(&log)
                .into_iter()
                .find(|l| l.contains(&needle))
                .map(String::from)
        },
    )
    .await
}

/// The whole Job flow with the chart's permissions only: the worker shim gives a local
/// queued Job a Workload (`workloads` create) and unsuspends it (`jobs` update/patch); the
/// manager gives a MultiKueue Job a Workload, creates its copy on the winner only
/// (manager-access `jobs` create), mirrors the copy's status (`jobs/status` on the
/// manager) and deletes the copy with the manager Job (manager-access `jobs` delete).
/// Nobody is denied anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_with_only_the_charts_permissions() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 2, |_, _| {}).await;
    for i in 1..=2 {
        ce.start_worker(i);
    }
    ce.start_manager();
    ce.clusters_active().await;
    let env = &ce.env;
    let ns = env.namespace.clone();

    // A Job queued on worker 1 directly: the shim creates its Workload, admits it and
    // unsuspends the Job.
    let local = create_job(env.worker_client(1), &queued_job("local", &ns, None)).await;
    let worker_workloads = env.worker_workloads(1);
    eventually(WAIT, "the local Job's Workload admitted", || async {
        let wls = workloads_of(&worker_workloads, &local).await;
        wls.iter().any(is_admitted).then_some(())
    })
    .await;
    eventually(WAIT, "the local Job unsuspended", || async {
        let job = jobs(env.worker_client(1), &ns)
            .get_opt("local")
            .await
            .ok()??;
        (!is_suspended(&job)).then_some(())
    })
    .await;

    // A MultiKueue Job on the manager: a manager Workload, a copy on the winner only.
    let remote = create_job(
        env.manager_client(),
        &queued_job("remote", &ns, Some("kueue.x-k8s.io/multikueue")),
    )
    .await;
    let manager_workloads = env.manager_workloads();
    let (workload, cluster) = eventually(WAIT, "the manager Job's Workload admitted", || async {
        let wls = workloads_of(&manager_workloads, &remote).await;
        let wl = wls.into_iter().next()?;
        let cluster = wl.status.as_ref()?.cluster_name.clone()?;
        Some((wl.metadata.name.clone()?, cluster))
    })
    .await;
    let winner = (1..=2)
        .find(|i| env.cluster(*i) == cluster)
        .unwrap_or_else(|| panic!("admitted on an unknown cluster {cluster}"));
    let copy = eventually(WAIT, "the copy running on the winner", || async {
        let job = jobs(env.worker_client(winner), &ns)
            .get_opt("remote")
            .await
            .ok()??;
        (!is_suspended(&job)).then_some(job)
    })
    .await;
    let labels = copy.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get(PREBUILT_WORKLOAD_LABEL),
        Some(&workload),
        "{labels:?}"
    );
    assert!(
        copy.spec
            .as_ref()
            .and_then(|s| s.managed_by.as_ref())
            .is_none(),
        "the copy is left to the worker's Job controller"
    );
    assert!(
        jobs(env.worker_client(3 - winner), &ns)
            .get_opt("remote")
            .await
            .expect("get")
            .is_none(),
        "a copy on the loser"
    );
    // The copy's status reaches the manager Job.
    eventually(
        WAIT,
        "the copy's status mirrored on the manager",
        || async {
            let manager_job = jobs(env.manager_client(), &ns)
                .get_opt("remote")
                .await
                .ok()??;
            let copy = jobs(env.worker_client(winner), &ns)
                .get_opt("remote")
                .await
                .ok()??;
            let active = |j: &Job| j.status.as_ref().and_then(|s| s.active).unwrap_or(0);
            (active(&copy) > 0 && active(&manager_job) == active(&copy)).then_some(())
        },
    )
    .await;

    // Deleting the manager Job removes its Workload and the copy.
    jobs(env.manager_client(), &ns)
        .delete("remote", &DeleteParams::background())
        .await
        .expect("delete the manager Job");
    eventually(WAIT, "the copy deleted with the manager Job", || async {
        let copy = jobs(env.worker_client(winner), &ns).get_opt("remote").await;
        let wl = env.manager_workloads().get_opt(&workload).await;
        (matches!(copy, Ok(None)) && matches!(wl, Ok(None))).then_some(())
    })
    .await;

    for p in &mut ce.processes {
        let log = p.log_text();
        let denied = denials(&log);
        assert!(
            denied.is_empty(),
            "{} was denied:\n{}",
            p.name,
            denied.join("\n")
        );
        assert!(p.is_running(), "{} exited", p.name);
    }
}

/// The worker shim without `update` and `patch` on Jobs: it cannot start an admitted Job,
/// and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_may_not_update_jobs_starts_none() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        for verb in ["update", "patch"] {
            revoke(worker, "ClusterRole", "worker", JOB_GROUP, "jobs", verb).expect("revoke");
        }
        assert_eq!(
            granted_to(worker, "worker", JOB_GROUP, "jobs"),
            ["get", "list", "watch"]
                .iter()
                .map(|v| v.to_string())
                .collect()
        );
    })
    .await;
    ce.start_worker(1);
    let ns = ce.env.namespace.clone();
    create_job(ce.env.worker_client(1), &queued_job("local", &ns, None)).await;
    let worker = ce.process("worker-1");
    let line = eventually(WAIT, "the worker's Job writes refused", || async {
        let log = worker.log_text();
        denials(&log)
            .into_iter()
            .find(|l| {
                l.contains(r#"cannot update resource "jobs""#)
                    || l.contains(r#"cannot patch resource "jobs""#)
            })
            .map(String::from)
    })
    .await;
    assert!(line.contains("local"), "{line}");
    let job = jobs(ce.env.worker_client(1), &ns)
        .get("local")
        .await
        .expect("the Job");
    assert!(
        is_suspended(&job),
        "started without the permission: {job:?}"
    );
}

/// The worker shim without `create` on Workloads: a queued Job gets no Workload and stays
/// suspended, and the shim says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_may_not_create_workloads_leaves_jobs_waiting() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        revoke(
            worker,
            "ClusterRole",
            "worker",
            KUEUE,
            "workloads",
            "create",
        )
        .expect("revoke");
    })
    .await;
    ce.start_worker(1);
    let ns = ce.env.namespace.clone();
    let job = create_job(ce.env.worker_client(1), &queued_job("local", &ns, None)).await;
    let line = denied(ce.process("worker-1"), "create", "workloads").await;
    assert!(line.contains("local"), "{line}");
    assert!(
        workloads_of(&ce.env.worker_workloads(1), &job)
            .await
            .is_empty()
    );
    let job = jobs(ce.env.worker_client(1), &ns)
        .get("local")
        .await
        .expect("the Job");
    assert!(is_suspended(&job), "started without a Workload: {job:?}");
}

/// The manager without `create` on the workers' Jobs (manager-access): the MultiKueue Job's
/// Workload is admitted on the worker, but no copy runs there, and the manager says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_may_not_create_jobs_on_a_worker_runs_no_copy() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        revoke(
            worker,
            "ClusterRole",
            "manager-access",
            JOB_GROUP,
            "jobs",
            "create",
        )
        .expect("revoke");
    })
    .await;
    ce.start_worker(1);
    ce.start_manager();
    ce.clusters_active().await;
    let ns = ce.env.namespace.clone();
    create_job(
        ce.env.manager_client(),
        &queued_job("remote", &ns, Some("kueue.x-k8s.io/multikueue")),
    )
    .await;
    // (A create is refused before the object has a name: the 403 names the namespace.)
    let line = denied(ce.process("manager"), "create", "jobs").await;
    assert!(line.contains(&ns), "{line}");
    assert!(
        jobs(ce.env.worker_client(1), &ns)
            .get_opt("remote")
            .await
            .expect("get")
            .is_none(),
        "a copy was created without the permission"
    );
}

/// The manager without `update` and `patch` on `jobs/status`: the copy runs on the worker,
/// but its status never reaches the manager Job, and the manager says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_may_not_write_job_status_mirrors_nothing() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |manager, _| {
        for verb in ["update", "patch"] {
            revoke(
                manager,
                "ClusterRole",
                "manager",
                JOB_GROUP,
                "jobs/status",
                verb,
            )
            .expect("revoke");
        }
        assert_eq!(
            granted_to(manager, "manager", JOB_GROUP, "jobs/status"),
            ["get".to_string()].into_iter().collect()
        );
    })
    .await;
    ce.start_worker(1);
    ce.start_manager();
    ce.clusters_active().await;
    let ns = ce.env.namespace.clone();
    create_job(
        ce.env.manager_client(),
        &queued_job("remote", &ns, Some("kueue.x-k8s.io/multikueue")),
    )
    .await;
    let env = &ce.env;
    eventually(WAIT, "the copy running on the worker", || async {
        let job = jobs(env.worker_client(1), &ns)
            .get_opt("remote")
            .await
            .ok()??;
        (!is_suspended(&job)).then_some(())
    })
    .await;
    let manager = ce.process("manager");
    let line = eventually(WAIT, "the manager's status writes refused", || async {
        let log = manager.log_text();
        denials(&log)
            .into_iter()
            .find(|l| {
                l.contains(r#"cannot update resource "jobs/status""#)
                    || l.contains(r#"cannot patch resource "jobs/status""#)
            })
            .map(String::from)
    })
    .await;
    assert!(line.contains("remote"), "{line}");
    let job = jobs(env.manager_client(), &ns)
        .get("remote")
        .await
        .expect("the manager Job");
    assert!(
        job.status.as_ref().and_then(|s| s.active).unwrap_or(0) == 0,
        "a status was mirrored without the permission: {:?}",
        job.status
    );
}

/// The manager without `delete` on the workers' Jobs (manager-access): deleting the manager
/// Job leaves its copy running on the worker, and the manager says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_that_may_not_delete_jobs_on_a_worker_leaves_the_copy() {
    let Some(helm) = helm_or_skip() else { return };
    let mut ce = ChartEnv::start(&helm, 1, |_, worker| {
        revoke(
            worker,
            "ClusterRole",
            "manager-access",
            JOB_GROUP,
            "jobs",
            "delete",
        )
        .expect("revoke");
    })
    .await;
    ce.start_worker(1);
    ce.start_manager();
    ce.clusters_active().await;
    let ns = ce.env.namespace.clone();
    create_job(
        ce.env.manager_client(),
        &queued_job("remote", &ns, Some("kueue.x-k8s.io/multikueue")),
    )
    .await;
    let env = &ce.env;
    eventually(WAIT, "the copy running on the worker", || async {
        let job = jobs(env.worker_client(1), &ns)
            .get_opt("remote")
            .await
            .ok()??;
        (!is_suspended(&job)).then_some(())
    })
    .await;
    jobs(env.manager_client(), &ns)
        .delete("remote", &DeleteParams::background())
        .await
        .expect("delete the manager Job");
    let line = denied(ce.process("manager"), "delete", "jobs").await;
    assert!(line.contains("remote"), "{line}");
    assert!(
        jobs(env.worker_client(1), &ns)
            .get_opt("remote")
            .await
            .expect("get")
            .is_some(),
        "the copy was deleted without the permission"
    );
}

/// JobSets with the chart's permissions for the JobSet integration and no more: a JobSet
/// queued on the manager gets its Workload, a copy on the winner that the worker starts, its
/// status mirrored, and its deletion cleans the worker; nobody is denied anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobsets_run_with_only_the_charts_permissions_for_their_integration() {
    use baton_e2e::integrations::{
        is_suspended as suspended, queued_jobset, resource_of, shipped_crd,
    };
    let Some(helm) = helm_or_skip() else { return };
    let crd = shipped_crd("jobset.x-k8s.io_jobsets.yaml").expect("JobSet CRD");
    let jobsets = resource_of(&crd);
    let mut ce = ChartEnv::start_with(
        &helm,
        2,
        &[crd],
        &["--set", "integrations.frameworks={jobset.x-k8s.io/jobset}"],
        |_, _| {},
    )
    .await;
    for i in 1..=2 {
        ce.start_worker(i);
    }
    ce.start_manager();
    ce.clusters_active().await;
    let env = &ce.env;
    env.create_object(0, &jobsets, queued_jobset("remote", 2, 1, 1, true))
        .await
        .expect("manager JobSet");
    let (workload, cluster) = eventually(WAIT, "the JobSet's Workload admitted", || async {
        let wls = env
            .manager_workloads()
            .list(&Default::default())
            .await
            .ok()?;
        let wl = wls.items.into_iter().find(|w| {
            w.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "JobSet")
        })?;
        let cluster = wl.status.as_ref()?.cluster_name.clone()?;
        Some((wl.metadata.name.clone()?, cluster))
    })
    .await;
    let winner = (1..=2)
        .find(|i| env.cluster(*i) == cluster)
        .expect("a known worker");
    eventually(WAIT, "the copy started on the winner", || async {
        env.object(winner, &jobsets, "remote")
            .await
            .filter(|j| !suspended(j))
    })
    .await;
    assert!(
        env.object(3 - winner, &jobsets, "remote").await.is_none(),
        "a copy on the loser"
    );
    // The worker's JobSet controller (the testbed's stand-in) reports; the manager shows it.
    eventually(WAIT, "the copy's status mirrored", || async {
        let manager = env.object(0, &jobsets, "remote").await?;
        let copy = env.object(winner, &jobsets, "remote").await?;
        let reported = copy.data.pointer("/status/replicatedJobsStatus")?;
        (reported.as_array().is_some_and(|a| !a.is_empty())
            && manager.data.get("status") == copy.data.get("status"))
        .then_some(())
    })
    .await;
    env.objects(0, &jobsets)
        .delete("remote", &DeleteParams::background())
        .await
        .expect("delete");
    eventually(WAIT, "the copy deleted with the manager JobSet", || async {
        let copy = env.object(winner, &jobsets, "remote").await;
        let wl = env.manager_workloads().get_opt(&workload).await;
        (copy.is_none() && matches!(wl, Ok(None))).then_some(())
    })
    .await;
    for p in &mut ce.processes {
        let log = p.log_text();
        let denied = denials(&log);
        assert!(
            denied.is_empty(),
            "{} was denied:\n{}",
            p.name,
            denied.join("\n")
        );
        assert!(p.is_running(), "{} exited", p.name);
    }
}

/// RBAC per enabled kind only: the default render (no integration API served) grants
/// nothing on JobSets, TrainJobs or RayJobs; a served kind gets its own rules and no other.
#[test]
fn the_chart_grants_each_integration_only_where_it_is_enabled() {
    let Some(helm) = helm_or_skip() else { return };
    let groups = |args: &[&str]| -> Vec<String> {
        let docs = rbac_objects(&render(&helm, "baton", "baton-system", args).expect("render"));
        let mut groups: Vec<String> = docs
            .iter()
            .flat_map(|d| d["rules"].as_array().cloned().unwrap_or_default())
            .flat_map(|r| r["apiGroups"].as_array().cloned().unwrap_or_default())
            .filter_map(|g| g.as_str().map(str::to_string))
            .filter(|g| {
                [
                    "jobset.x-k8s.io",
                    "ray.io",
                    "trainer.kubeflow.org",
                    "apiextensions.k8s.io",
                ]
                .contains(&g.as_str())
            })
            .collect();
        groups.sort();
        groups.dedup();
        groups
    };
    for mode in ["mode=manager", "mode=worker"] {
        assert!(
            groups(&["--set", mode, "--set", "managerAccess.enabled=true"]).is_empty(),
            "{mode}"
        );
        assert_eq!(
            groups(&[
                "--set",
                mode,
                "--set",
                "managerAccess.enabled=true",
                "--api-versions",
                "ray.io/v1/RayJob"
            ]),
            vec!["ray.io".to_string()],
            "{mode}"
        );
    }
    // An external kind: its resource, and read access to its CRD by name only.
    let docs = rbac_objects(
        &render(
            &helm,
            "baton",
            "baton-system",
            &[
                "--set",
                "mode=manager",
                "--set",
                "integrations.externalFrameworks[0].name=PipelineRun.v1.tekton.dev",
            ],
        )
        .expect("render"),
    );
    let rules: Vec<Value> = docs
        .iter()
        .flat_map(|d| d["rules"].as_array().cloned().unwrap_or_default())
        .collect();
    assert!(
        rules.iter().any(|r| r["apiGroups"] == json!(["tekton.dev"])
            && r["resources"] == json!(["pipelineruns"]))
    );
    let crd_rule = rules
        .iter()
        .find(|r| r["apiGroups"] == json!(["apiextensions.k8s.io"]))
        .expect("a CRD rule");
    assert_eq!(
        crd_rule["resourceNames"],
        json!(["pipelineruns.tekton.dev"])
    );
    assert_eq!(crd_rule["verbs"], json!(["get"]));
}
