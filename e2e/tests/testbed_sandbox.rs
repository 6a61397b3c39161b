//! The `baton-sandbox` binary and the e2e harness (testbed mode and real-kubeconfig mode).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_crds::conditions::is_condition_true;
use baton_crds::{MultiKueueCluster, Workload};
use baton_e2e::demo::controllers::{Controllers, tail};
use baton_e2e::demo::scenario::{self, Outcome, Shape};
use baton_e2e::demo::style::Console;
use baton_e2e::demo::{ready, setup};
use baton_e2e::harness::env::{Env, parse_spec};
use baton_e2e::harness::kubectl;
use baton_e2e::harness::sandbox::Sandbox as Clusters;
use baton_e2e::multikueue::{baton_binary, ensure_fresh};
use baton_testbed::server::TestCluster;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};

/// The sandbox runs the controllers as processes: one sandbox at a time keeps the timings of
/// these suites independent of each other on small machines.
static ONE_SANDBOX: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A deadline for the sandbox to come up (clusters, controllers, and the demo when asked).
const UP: Duration = Duration::from_secs(120);

async fn client_for(path: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(path).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A running `baton-sandbox` with its output collected line by line.
struct Sandbox {
    child: Child,
    dir: tempfile::TempDir,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

fn collect(stream: impl Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

impl Sandbox {
    fn start(args: &[&str]) -> Sandbox {
        let baton = baton_binary();
        assert!(
            baton.is_file(),
            "{} is missing: run `cargo build -p baton` (`cargo test --workspace` builds it)",
            baton.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_baton-sandbox"))
            .args(args)
            .arg("--dir")
            .arg(dir.path())
            .env("BATON_BIN", &baton)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Sandbox {
            child,
            dir,
            stdout,
            stderr,
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn stdout(&self) -> String {
        self.stdout.lock().unwrap().join("\n")
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    /// Waits for DIR/ready, failing early (with the output) if the sandbox exits.
    async fn wait_ready(&mut self) {
        let ready = self.path("ready");
        let start = std::time::Instant::now();
        while !ready.exists() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the sandbox exited ({status}) before it was ready\n--- stdout\n{}\n--- stderr\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            assert!(
                start.elapsed() < UP,
                "no {} after {UP:?}\n--- stdout\n{}\n--- stderr\n{}",
                ready.display(),
                self.stdout(),
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the sandbox's stdout, as read so far, holds `needle` (what is printed
    /// after DIR/ready is written, or is still in the pipe, comes later than the marker).
    async fn wait_for_stdout(&self, needle: &str) {
        let start = std::time::Instant::now();
        while !self.stdout().contains(needle) {
            assert!(
                start.elapsed() < UP,
                "no {needle:?} after {UP:?}\n--- stdout\n{}",
                self.stdout()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The demo's closing line (it is printed before DIR/ready is written).
    fn summary(&self) -> String {
        let out = self.stdout.lock().unwrap();
        out.iter()
            .find(|l| l.starts_with("preemptions: "))
            .cloned()
            .unwrap_or_else(|| panic!("no summary line in\n{}", out.join("\n")))
    }

    /// The sandbox's children: processes whose command line names its directory.
    fn controllers(&self) -> Vec<u32> {
        processes_mentioning(self.dir.path())
            .into_iter()
            .filter(|pid| *pid != self.child.id())
            .collect()
    }

    /// SIGTERM, then the exit status once the sandbox has stopped (deadline 20 s).
    async fn terminate(&mut self) -> ExitStatus {
        signal(&self.child, "-TERM");
        let start = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The readers end with the pipes; give them a moment to take the last lines.
                tokio::time::sleep(Duration::from_millis(100)).await;
                return status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the sandbox did not stop within 20s of SIGTERM\n{}",
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn signal(child: &Child, which: &str) {
    let _ = Command::new("kill")
        .args([which, &child.id().to_string()])
        .status();
}

impl Drop for Sandbox {
    /// A failed assertion must not leave a sandbox (and its controllers) running: SIGTERM
    /// lets it stop its children; SIGKILL if it does not within 10 s.
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        signal(&self.child, "-TERM");
        let start = std::time::Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) {
            if start.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Pids of the processes whose command line contains `dir`.
fn processes_mentioning(dir: &Path) -> Vec<u32> {
    let needle = dir.display().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            out.push(pid);
        }
    }
    out
}

/// Checks that the controllers were running, then that none is left after SIGTERM.
async fn stop_and_check_no_orphans(mut sandbox: Sandbox, expected_controllers: usize) -> String {
    let controllers = sandbox.controllers();
    assert_eq!(
        controllers.len(),
        expected_controllers,
        "baton manager + one baton worker per worker: {controllers:?}"
    );
    let status = sandbox.terminate().await;
    assert!(status.success(), "{}", sandbox.stderr());
    let left = processes_mentioning(sandbox.dir.path());
    assert!(left.is_empty(), "controllers left behind: {left:?}");
    assert!(
        !sandbox.path("ready").exists(),
        "ready marker removed on shutdown"
    );
    sandbox.stdout()
}

#[tokio::test]
async fn sandbox_binary_starts_clusters_writes_kubeconfigs_and_stops_on_sigterm() {
    let _one = ONE_SANDBOX.lock().await;
    let mut sandbox = Sandbox::start(&["--workers", "2"]);
    sandbox.wait_ready().await;

    let manager = client_for(&sandbox.path("manager.kubeconfig")).await;
    let secrets: Api<Secret> = Api::namespaced(manager.clone(), "baton-system");
    let names: Vec<String> = secrets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(names, ["worker-1-kubeconfig", "worker-2-kubeconfig"]);
    let crds: Api<CustomResourceDefinition> = Api::all(manager.clone());
    assert!(crds.get("workloads.kueue.x-k8s.io").await.is_ok());
    // Without --controllers, users create the MultiKueueClusters themselves.
    let clusters: Api<MultiKueueCluster> = Api::all(manager.clone());
    assert!(
        clusters
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    for i in 1..=2 {
        let path = sandbox.path(&format!("worker-{i}.kubeconfig"));
        let worker = client_for(&path).await;
        let wcrds: Api<CustomResourceDefinition> = Api::all(worker);
        assert!(wcrds.get("workloads.kueue.x-k8s.io").await.is_ok());
        // The Secret holds the same kubeconfig as the file.
        let secret = secrets
            .get(&format!("worker-{i}-kubeconfig"))
            .await
            .unwrap();
        let from_secret = String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
        assert_eq!(from_secret, std::fs::read_to_string(&path).unwrap());
    }

    let stdout = stop_and_check_no_orphans(sandbox, 0).await;
    assert!(
        stdout.contains("manager.kubeconfig") && stdout.contains("worker-2.kubeconfig"),
        "{stdout}"
    );
}

#[tokio::test]
async fn sandbox_with_controllers_runs_an_applied_workload_and_leaves_no_orphans() {
    let _one = ONE_SANDBOX.lock().await;
    let mut sandbox = Sandbox::start(&["--workers", "2", "--controllers"]);
    sandbox.wait_ready().await;

    let manager = client_for(&sandbox.path("manager.kubeconfig")).await;
    // DIR/ready means the manager reaches every worker.
    let clusters: Api<MultiKueueCluster> = Api::all(manager.clone());
    let list = clusters.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(list.len(), 2);
    for c in &list {
        let conditions = &c.status.as_ref().unwrap().conditions;
        assert!(is_condition_true(conditions, "Active"), "{conditions:?}");
    }
    // The sample the sandbox prints runs as it is.
    let sample = std::fs::read_to_string(sandbox.path("workload.yaml")).unwrap();
    let wl: Workload = serde_saphyr::from_str(&sample).unwrap();
    let api: Api<Workload> = Api::namespaced(manager.clone(), "default");
    api.create(&PostParams::default(), &wl).await.unwrap();
    let mut placed = None;
    let start = std::time::Instant::now();
    while placed.is_none() {
        let status = api.get("job-1").await.unwrap().status.unwrap_or_default();
        if is_condition_true(&status.conditions, "Admitted") {
            placed = status.cluster_name.clone();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "job-1 not admitted: {status:?}\n{}",
            std::fs::read_to_string(sandbox.path("manager.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let placed = placed.unwrap();
    assert!(placed.starts_with("worker-"), "{placed}");

    // So does the sample Job: its status, mirrored from the worker, shows its two pods.
    let sample = std::fs::read_to_string(sandbox.path("job.yaml")).unwrap();
    let job: Job = serde_saphyr::from_str(&sample).unwrap();
    let jobs: Api<Job> = Api::namespaced(manager, "default");
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let start = std::time::Instant::now();
    loop {
        let status = jobs.get("sample-job").await.unwrap().status;
        if status.as_ref().and_then(|s| s.active) == Some(2) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "sample-job not running: {status:?}\n{}",
            std::fs::read_to_string(sandbox.path("manager.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let stdout = stop_and_check_no_orphans(sandbox, 3).await;
    assert!(
        stdout.contains("workload.yaml") && stdout.contains("job.yaml"),
        "{stdout}"
    );
}

/// The README's first command: the Job scenario with orchestrated preemption, printed as a
/// timeline. A summary of 2 clusters means the manager opened a second gate before the
/// first one's Open state reached its cache: the manager log then shows two "opened
/// preemption gate" lines tens of milliseconds apart.
#[tokio::test]
async fn demo_plays_the_job_scenario_and_preempts_on_exactly_one_cluster() {
    let _one = ONE_SANDBOX.lock().await;
    let mut sandbox = Sandbox::start(&["--demo"]);
    sandbox.wait_ready().await;
    // The guide is printed right after DIR/ready is written.
    sandbox.wait_for_stdout("export KUBECONFIG=").await;
    let summary = sandbox.summary();
    let log = || std::fs::read_to_string(sandbox.path("manager.log")).unwrap_or_default();
    assert!(
        summary.starts_with("preemptions: 1 of 3 clusters evicted victims for demo/train-llm")
            && summary.contains(", 0 wasted;"),
        "{summary}\n--- stdout\n{}\n--- manager.log\n{}",
        sandbox.stdout(),
        log()
    );
    let stdout = sandbox.stdout();
    for expected in [
        "submitted Job demo/train-llm (high-priority: 1000, 2 pods × 1 CPU) on the manager",
        "workload created on the manager: job-train-llm-",
        "(gate Closed)",
        "gate opened on worker-",
        "Jobs suspended on worker-",
        "pods terminating on worker-",
        "quota released on worker-",
        "admitted on the manager: runs on worker-",
        "Job copy created on worker-",
        "running on worker-",
        "manager Job follows: 2 pods active",
        "--no-orchestration",
        "export KUBECONFIG=",
    ] {
        assert!(stdout.contains(expected), "{expected:?} in\n{stdout}");
    }
    if let Some(out) = kubectl(
        &sandbox.path("manager.kubeconfig"),
        &["get", "jobs,kwl", "-n", "demo"],
    ) {
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && listed.contains("train-llm"),
            "{listed}"
        );
    } else {
        eprintln!("kubectl is not installed: skipped `kubectl get jobs,kwl -n demo`");
    }
    stop_and_check_no_orphans(sandbox, 4).await;
}

/// Plays the demo's scenario in this process on a fresh sandbox of three workers with its
/// controllers, and returns what it measured.
async fn play_in_process(orchestrated: bool, shape: Shape) -> Outcome {
    let baton = baton_binary();
    if std::env::var_os("BATON_BIN").is_none() {
        ensure_fresh(&baton).expect("baton binary");
    }
    let dir = tempfile::tempdir().unwrap();
    let clusters = Clusters::start_clusters(3, dir.path(), 0).await.unwrap();
    setup::install(&clusters).unwrap();
    let mut controllers = Controllers::start(&baton, &clusters, orchestrated).unwrap();
    let played = async {
        ready::wait(&clusters, &mut controllers, UP).await?;
        scenario::play_shape(&clusters, orchestrated, shape, &Console { colour: false }).await
    }
    .await;
    let logs: Vec<String> = controllers
        .logs()
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            format!("--- {}\n{}", p.display(), tail(&text, 20))
        })
        .collect();
    controllers.stop().await;
    clusters.stop().await;
    played.unwrap_or_else(|e| panic!("{e:#}\n{}", logs.join("\n")))
}

/// The contrast the demo reports, measured both ways in the same shape: three workers full
/// of low-priority Jobs whose pods take seconds to stop, one high-priority Job of 2 CPUs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_measures_one_preempting_cluster_with_orchestration_and_three_without() {
    let _one = ONE_SANDBOX.lock().await;
    let on = play_in_process(true, Shape::DEMO).await;
    assert_eq!(
        on.preempting_clusters(),
        std::slice::from_ref(&on.placed),
        "orchestrated: only the worker it runs on preempts: {on:?}"
    );
    assert!(on.wasted().is_empty(), "{on:?}");
    assert_eq!(
        on.evicted_on(&on.placed).len(),
        1,
        "2 CPUs: one filler Job of two 1-CPU pods: {on:?}"
    );
    assert_eq!(on.evictions.len(), 1, "a victim evicted twice: {on:?}");

    let off = play_in_process(false, Shape::DEMO).await;
    assert_eq!(
        off.preempting_clusters(),
        ["worker-1", "worker-2", "worker-3"],
        "plain MultiKueue: every worker preempts: {off:?}"
    );
    assert_eq!(off.evicted_on(&off.placed).len(), 1, "{off:?}");
    for loser in off
        .preempting_clusters()
        .iter()
        .filter(|c| **c != off.placed)
    {
        assert!(
            !off.evicted_on(loser).is_empty(),
            "{loser} evicted for nothing: {off:?}"
        );
    }
    assert_eq!(
        off.wasted().len(),
        2,
        "one victim on each other worker: {off:?}"
    );
    eprintln!(
        "with orchestration: {}\nwithout: {}",
        on.summary("demo/train-llm"),
        off.summary("demo/train-llm")
    );
}

/// Four 1-CPU filler Jobs per worker: the Job needs two victims, whose quota comes back one
/// Workload at a time. The first one back must not be re-admitted ahead of the Job that
/// waits for the second: each victim is evicted once. (Regression test: the worker gave the
/// freed CPU back to the first victim, then evicted it again, up to 16 times in 23 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pod_victims_are_each_evicted_once() {
    let _one = ONE_SANDBOX.lock().await;
    let on = play_in_process(true, Shape { filler_pods: 1 }).await;
    assert_eq!(
        on.preempting_clusters(),
        std::slice::from_ref(&on.placed),
        "{on:?}"
    );
    assert_eq!(on.evicted_on(&on.placed).len(), 2, "{on:?}");
    assert_eq!(on.evictions.len(), 2, "a victim evicted twice: {on:?}");
}

#[tokio::test]
async fn harness_on_testbed_gives_manager_and_workers() {
    let env = Env::testbed(2).await.unwrap();
    assert!(env.is_testbed());
    assert_eq!(env.workers().len(), 2);
    let ns = env.namespace("suite").await.unwrap();
    for c in &env.clusters {
        let api: Api<Namespace> = Api::all(c.client.clone());
        assert!(api.get(&ns).await.is_ok(), "{} has {ns}", c.name);
        let crds: Api<CustomResourceDefinition> = Api::all(c.client.clone());
        assert!(crds.get("workloads.kueue.x-k8s.io").await.is_ok());
    }
    env.cleanup().await.unwrap();
}

#[tokio::test]
async fn harness_on_given_kubeconfigs_cleans_up_what_it_created() {
    // Stand-ins for real clusters: testbed servers the harness only knows by kubeconfig.
    let dir = tempfile::tempdir().unwrap();
    let real_manager = TestCluster::start_named("real-manager").await.unwrap();
    let real_worker = TestCluster::start_named("real-worker").await.unwrap();
    let mpath = dir.path().join("m.kubeconfig");
    let wpath = dir.path().join("w.kubeconfig");
    real_manager.write_kubeconfig(&mpath).unwrap();
    real_worker.write_kubeconfig(&wpath).unwrap();
    // The worker already has one CRD; the harness applies the rest (and updates that one).
    let crds = baton_crds::generate::all_crds().unwrap();
    real_worker.install_crds(&crds[..1]).unwrap();
    let names: Vec<String> = crds
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();

    let spec = format!("manager={},worker-1={}", mpath.display(), wpath.display());
    let parsed = parse_spec(&spec).unwrap();
    assert_eq!(parsed[1].0, "worker-1");
    let env = Env::from_kubeconfigs(&parsed).await.unwrap();
    assert!(!env.is_testbed());
    // Established and served in discovery before the suite gets the environment.
    for cluster in &env.clusters {
        let resources = cluster
            .client
            .list_api_group_resources("kueue.x-k8s.io/v1beta2")
            .await
            .unwrap();
        for crd in &crds {
            assert!(
                resources
                    .resources
                    .iter()
                    .any(|r| r.name == crd.spec.names.plural),
                "{} served on {}",
                crd.spec.names.plural,
                cluster.name
            );
        }
    }
    let ns = env.namespace("suite").await.unwrap();
    let worker_ns: Api<Namespace> = Api::all(real_worker.client().unwrap());
    assert!(worker_ns.get(&ns).await.is_ok());
    let wl_api: Api<baton_crds::Workload> = Api::namespaced(env.workers()[0].client.clone(), &ns);
    let wl: baton_crds::Workload = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]}
    }))
    .unwrap();
    wl_api.create(&PostParams::default(), &wl).await.unwrap();
    env.cleanup().await.unwrap();

    assert!(worker_ns.get(&ns).await.is_err(), "namespace removed");
    // CRDs are never deleted by the harness: on a real server a deleted or re-created CRD is
    // missing from discovery for a while, and the next suite would fail on it.
    for cluster in [&real_manager, &real_worker] {
        let api: Api<CustomResourceDefinition> = Api::all(cluster.client().unwrap());
        let mut left: Vec<String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        left.sort();
        let mut want = names.clone();
        want.sort();
        assert_eq!(left, want, "CRDs stay installed on {}", cluster.name());
    }
    // A second environment of the same process applies nothing again and still works.
    let again = Env::from_kubeconfigs(&parsed).await.unwrap();
    again.namespace("again").await.unwrap();
    again.cleanup().await.unwrap();
}
