//! The `baton-sandbox` binary and the e2e harness (testbed mode and real-kubeconfig mode).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use baton_e2e::harness::env::{Env, parse_spec};
use baton_e2e::harness::wait_until;
use baton_e2e::server::TestCluster;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};

async fn client_for(path: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(path).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn sandbox_binary_starts_clusters_writes_kubeconfigs_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton-sandbox"))
        .args(["--workers", "2", "--dir"])
        .arg(dir.path())
        .arg("--controllers")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = dir.path().join("ready");
    wait_until(Duration::from_secs(30), "DIR/ready", || {
        let ready = ready.clone();
        async move { ready.exists() }
    })
    .await;

    let manager = client_for(&dir.path().join("manager.kubeconfig")).await;
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

    for i in 1..=2 {
        let path = dir.path().join(format!("worker-{i}.kubeconfig"));
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

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut out = String::new();
        let mut err = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status, out, err)
    });
    let (status, stdout, stderr) = tokio::time::timeout(Duration::from_secs(20), exit)
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stdout.contains("manager.kubeconfig") && stdout.contains("worker-2.kubeconfig"),
        "{stdout}"
    );
    assert!(
        stderr.contains("--controllers is not available yet"),
        "{stderr}"
    );
    assert!(!ready.exists(), "ready marker removed on shutdown");
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
    // The worker already has one CRD; the harness must not remove what it did not create.
    let crds = baton_crds::generate::all_crds().unwrap();
    real_worker.install_crds(&crds[..1]).unwrap();
    let preinstalled = crds[0].metadata.name.clone().unwrap();

    let spec = format!("manager={},worker-1={}", mpath.display(), wpath.display());
    let parsed = parse_spec(&spec).unwrap();
    assert_eq!(parsed[1].0, "worker-1");
    let env = Env::from_kubeconfigs(&parsed).await.unwrap();
    assert!(!env.is_testbed());
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
    let worker_crds: Api<CustomResourceDefinition> = Api::all(real_worker.client().unwrap());
    let left: Vec<String> = worker_crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        left,
        [preinstalled],
        "only the CRDs the harness installed are removed"
    );
    let manager_crds: Api<CustomResourceDefinition> = Api::all(real_manager.client().unwrap());
    assert!(
        manager_crds
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
