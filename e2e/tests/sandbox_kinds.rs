//! The sandbox's demo with the job kinds AI teams submit (`baton-sandbox --demo --kind
//! jobset|trainjob|rayjob`): the KEP-8303 scenario with JobSets, TrainJobs or RayJobs of the
//! Jobs' shape on clusters serving the integration CRDs (the testbed's stand-ins run them).
//! With orchestration exactly one cluster preempts — the one the object runs on — and
//! without it every one does.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_e2e::demo::controllers::{Controllers, tail};
use baton_e2e::demo::kinds::DemoKind;
use baton_e2e::demo::scenario::{self, Outcome};
use baton_e2e::demo::style::Console;
use baton_e2e::demo::{ready, setup};
use baton_e2e::harness::integrations;
use baton_e2e::harness::sandbox::Sandbox as Clusters;
use baton_e2e::multikueue::{baton_binary, ensure_fresh};

/// One sandbox at a time: the controllers run as processes.
static ONE_SANDBOX: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A deadline for the sandbox to come up and play.
const UP: Duration = Duration::from_secs(180);

/// Plays the demo with `kind` in this process on a fresh sandbox of three workers.
async fn play(kind: DemoKind, orchestrated: bool) -> Outcome {
    let baton = baton_binary();
    if std::env::var_os("BATON_BIN").is_none() {
        ensure_fresh(&baton).expect("baton binary");
    }
    let dir = tempfile::tempdir().unwrap();
    let clusters = Clusters::start_clusters(3, dir.path(), 0).await.unwrap();
    setup::install(&clusters).unwrap();
    baton_e2e::demo::integrations::install(&clusters, &integrations::crds_dir()).unwrap();
    let mut controllers = Controllers::start(&baton, &clusters, orchestrated).unwrap();
    let played = async {
        ready::wait(&clusters, &mut controllers, UP).await?;
        scenario::play_kind(&clusters, orchestrated, kind, &Console { colour: false }).await
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
    played.unwrap_or_else(|e| panic!("{kind:?}: {e:#}\n{}", logs.join("\n")))
}

async fn one_cluster_preempts_with_orchestration_and_every_one_without(kind: DemoKind) {
    let _one = ONE_SANDBOX.lock().await;
    let on = play(kind, true).await;
    assert_eq!(
        on.preempting_clusters(),
        std::slice::from_ref(&on.placed),
        "{kind:?} orchestrated: only the worker it runs on preempts: {on:?}"
    );
    assert!(on.wasted().is_empty(), "{kind:?}: {on:?}");
    assert_eq!(
        on.evicted_on(&on.placed).len(),
        1,
        "{kind:?}: one filler of two pods: {on:?}"
    );
    let off = play(kind, false).await;
    assert_eq!(
        off.preempting_clusters(),
        ["worker-1", "worker-2", "worker-3"],
        "{kind:?} plain MultiKueue: every worker preempts: {off:?}"
    );
    assert_eq!(off.wasted().len(), 2, "{kind:?}: {off:?}");
    eprintln!(
        "{kind:?} with orchestration: {}\nwithout: {}",
        on.summary("demo/train-llm"),
        off.summary("demo/train-llm")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobset_demo_preempts_on_one_cluster_and_on_three_without_orchestration() {
    one_cluster_preempts_with_orchestration_and_every_one_without(DemoKind::JobSet).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trainjob_demo_preempts_on_one_cluster_and_on_three_without_orchestration() {
    one_cluster_preempts_with_orchestration_and_every_one_without(DemoKind::TrainJob).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rayjob_demo_preempts_on_one_cluster_and_on_three_without_orchestration() {
    one_cluster_preempts_with_orchestration_and_every_one_without(DemoKind::RayJob).await;
}

/// The command line: `baton-sandbox --demo --kind jobset` prints the JobSet timeline and its
/// closing line, then the guide with `kubectl get jobsets`.
#[tokio::test]
async fn the_sandbox_binary_plays_the_demo_with_a_kind() {
    let _one = ONE_SANDBOX.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton-sandbox"))
        .args(["--demo", "--kind", "jobset", "--dir"])
        .arg(dir.path())
        .env("BATON_BIN", baton_binary())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    let start = Instant::now();
    let text = loop {
        let text = lines.lock().unwrap().join("\n");
        if text.contains("export KUBECONFIG=") {
            break text;
        }
        let exited = child.try_wait().unwrap();
        if exited.is_some() || start.elapsed() > UP {
            let _ = child.kill();
            panic!("no guide ({exited:?} after {:?}):\n{text}", start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    for expected in [
        "Installed the JobSet, Kubeflow Trainer and KubeRay CRDs",
        "KEP-8303 demo with JobSets",
        "low-priority JobSets",
        "preemptions: 1 of 3 clusters evicted victims for demo/train-llm",
        "get jobsets,kwl -n demo",
    ] {
        assert!(text.contains(expected), "{expected:?} in\n{text}");
    }
}
