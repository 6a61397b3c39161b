//! The manager's Workload lifecycle through the real `baton manager` binary on testbed
//! clusters: dispatch, winner selection, loser removal, eviction, lost workers, garbage
//! collection, bad kubeconfigs and restarts. Tests play the workers' schedulers.

use std::time::Duration;

use baton_crds::MultiKueueCluster;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::{MULTIKUEUE_GATE, MULTIKUEUE_ORIGIN_LABEL, condition};
use baton_crds::workload::{CheckState, Workload};
use baton_e2e::harness::{apply, eventually};
use baton_e2e::multikueue::Env;
use chrono::Utc;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;

const FAST: &str = "singleClusterPreemptionTimeout: 2s\nworkerLostTimeout: 3s\ngcInterval: 1s\n";
const WAIT: Duration = Duration::from_secs(20);

fn status_of(wl: &Workload) -> baton_crds::workload::WorkloadStatus {
    wl.status.clone().unwrap_or_default()
}

async fn replicas_everywhere(env: &Env, name: &str) -> Vec<Workload> {
    let n = env.worker_count();
    eventually(WAIT, "replicas on every worker", || async move {
        let mut all = Vec::new();
        for i in 1..=n {
            all.push(env.replica(i, name).await?);
        }
        Some(all)
    })
    .await
}

async fn manager_workload(
    env: &Env,
    name: &str,
    what: &str,
    check: impl Fn(&Workload) -> bool,
) -> Workload {
    eventually(WAIT, what, || async {
        env.manager_workloads()
            .get_opt(name)
            .await
            .ok()
            .flatten()
            .filter(|w| check(w))
    })
    .await
}

/// Submits `job`, waits for its replicas on every worker, and has worker `i` admit it.
async fn admitted_on(env: &Env, i: usize) -> Vec<Workload> {
    env.submit("job", 1).await.expect("submit");
    let replicas = replicas_everywhere(env, "job").await;
    env.admit(i, "job", Utc::now()).await.expect("admit");
    manager_workload(env, "job", &format!("admitted on worker-{i}"), |w| {
        status_of(w).cluster_name == Some(env.cluster(i))
    })
    .await;
    replicas
}

async fn gone_from(env: &Env, i: usize, name: &str) {
    eventually(
        WAIT,
        &format!("replica {name} gone from worker-{i}"),
        || async { env.replica(i, name).await.is_none().then_some(()) },
    )
    .await
}

async fn manager_workload_gone(env: &Env, name: &str) {
    eventually(
        WAIT,
        &format!("manager workload {name} deleted"),
        || async {
            env.manager_workloads()
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .is_none()
                .then_some(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_winner_losers_and_cleanup() {
    let mut env = Env::start(3).await.expect("env");
    let _manager = env.start_manager(FAST).expect("manager");
    env.submit("job", 2).await.expect("submit");

    let replicas = replicas_everywhere(&env, "job").await;
    for replica in &replicas {
        assert_eq!(
            replica
                .labels()
                .get(MULTIKUEUE_ORIGIN_LABEL)
                .map(String::as_str),
            Some(env.origin.as_str())
        );
        let gates: Vec<&str> = replica
            .spec
            .preemption_gates
            .iter()
            .map(|g| g.name.as_str())
            .collect();
        assert_eq!(gates, vec![MULTIKUEUE_GATE]);
        assert_eq!(replica.spec.pod_sets[0].count, 2);
    }
    let wl = manager_workload(&env, "job", "nominated clusters", |w| {
        status_of(w).nominated_cluster_names.len() == env.worker_count()
    })
    .await;
    assert!(
        wl.finalizers()
            .iter()
            .any(|f| f == "kueue.x-k8s.io/baton-multikueue")
    );
    let check = &status_of(&wl).admission_checks[0];
    assert_eq!(
        (check.name.as_str(), check.state),
        (env.check().as_str(), CheckState::Pending)
    );

    env.admit(2, "job", Utc::now()).await.expect("admit");
    let wl = manager_workload(&env, "job", "admitted on worker-2", |w| {
        status_of(w).cluster_name == Some(env.cluster(2))
    })
    .await;
    let status = status_of(&wl);
    assert!(is_condition_true(&status.conditions, condition::ADMITTED));
    assert!(status.nominated_cluster_names.is_empty());
    assert_eq!(
        status.admission.as_ref().map(|a| a.cluster_queue.clone()),
        Some(env.cluster_queue())
    );
    assert_eq!(status.admission_checks[0].state, CheckState::Ready);
    gone_from(&env, 1, "job").await;
    gone_from(&env, 3, "job").await;
    assert!(
        env.replica(2, "job").await.is_some(),
        "the winner keeps its replica"
    );

    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    // Upstream's event: reason MultiKueue, its words (the losers go without an event).
    let admitted = format!("The workload was admitted on {:?}", env.cluster(2));
    assert!(
        described
            .lines()
            .any(|l| l.contains("MultiKueue") && l.contains(&admitted)),
        "{described}"
    );
    let listed = env.kubectl("manager", &["get", "kwl", "job"]);
    assert!(listed.contains("True"), "{listed}");

    env.delete("job").await.expect("delete");
    gone_from(&env, 2, "job").await;
    manager_workload_gone(&env, "job").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_on_the_worker_sends_the_workload_back_to_dispatch() {
    let mut env = Env::start(2).await.expect("env");
    let _manager = env.start_manager(FAST).expect("manager");
    let before = admitted_on(&env, 1).await;
    gone_from(&env, 2, "job").await;

    env.evict(1, "job", Utc::now()).await.expect("evict");
    let wl = manager_workload(&env, "job", "re-dispatched", |w| {
        let s = status_of(w);
        s.cluster_name.is_none() && s.nominated_cluster_names.len() == env.worker_count()
    })
    .await;
    assert!(!is_condition_true(
        &status_of(&wl).conditions,
        condition::ADMITTED
    ));
    let after = replicas_everywhere(&env, "job").await;
    assert_ne!(
        after[0].uid(),
        before[0].uid(),
        "the evicted replica is replaced by a fresh one"
    );
    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    // Upstream's event: reason MultiKueue, its words (a series of its own, apart from the
    // admission's event on the same worker).
    assert!(
        described.lines().any(|l| l.contains("MultiKueue")
            && l.contains(&format!(
                "Workload evicted on worker cluster: {:?}, resetting for re-admission",
                env.cluster(1)
            ))),
        "{described}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_lost_beyond_the_timeout_loses_its_workload() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    // A longer workerLostTimeout than FAST's: the manager must notice the outage and look at
    // the workload again well within it.
    let manager = env
        .start_manager(
            "singleClusterPreemptionTimeout: 2s\nworkerLostTimeout: 6s\ngcInterval: 1s\n",
        )
        .expect("manager");
    admitted_on(&env, 1).await;
    let stale_uid = env.replica(1, "job").await.expect("winner replica").uid();

    env.testbed_worker(1).expect("testbed").go_offline().await;
    let offline = tokio::time::Instant::now();
    // Within workerLostTimeout the workload stays with worker-1: once the manager has seen
    // the worker disconnected, it looks at the workload again and keeps it there.
    let lost = format!(
        "baton_worker_cluster_connected{{cluster=\"{}\"}}",
        env.cluster(1)
    );
    eventually(WAIT, "the manager sees worker-1 disconnected", || async {
        manager.metric(&lost) == Some(0.0)
    })
    .await;
    env.manager_reconciled(&manager, "job").await;
    assert!(
        offline.elapsed() < Duration::from_secs(6),
        "the manager looked again within workerLostTimeout (else the check below means nothing)"
    );
    let wl = env.manager_workloads().get("job").await.expect("get");
    assert_eq!(status_of(&wl).cluster_name, Some(env.cluster(1)));
    // Beyond it, the workload is dispatched again to the clusters that are up.
    manager_workload(
        &env,
        "job",
        "re-dispatched after the worker was lost",
        |w| {
            status_of(w).cluster_name.is_none()
                && status_of(w).nominated_cluster_names == vec![env.cluster(2)]
        },
    )
    .await;
    eventually(WAIT, "replica on worker-2", || async {
        env.replica(2, "job").await
    })
    .await;

    // When worker-1 returns, its stale replica is removed and a fresh one dispatched.
    env.testbed_worker(1)
        .expect("testbed")
        .go_online()
        .await
        .expect("online");
    eventually(
        Duration::from_secs(30),
        "fresh replica on worker-1",
        || async { env.replica(1, "job").await.filter(|r| r.uid() != stale_uid) },
    )
    .await;
    let cluster: Api<MultiKueueCluster> = Api::all(env.manager_client());
    let active = cluster.get(&env.cluster(1)).await.expect("mkc");
    let conditions = active.status.map(|s| s.conditions).unwrap_or_default();
    assert!(
        is_condition_true(&conditions, condition::ACTIVE),
        "{conditions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_down_during_admission_gets_its_loser_removed_on_return() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let _manager = env.start_manager(FAST).expect("manager");
    env.submit("job", 1).await.expect("submit");
    replicas_everywhere(&env, "job").await;
    env.testbed_worker(2).expect("testbed").go_offline().await;
    env.admit(1, "job", Utc::now()).await.expect("admit");
    manager_workload(&env, "job", "admitted on worker-1", |w| {
        status_of(w).cluster_name == Some(env.cluster(1))
    })
    .await;
    env.testbed_worker(2)
        .expect("testbed")
        .go_online()
        .await
        .expect("online");
    eventually(
        Duration::from_secs(30),
        "loser removed from worker-2",
        || async { env.replica(2, "job").await.is_none().then_some(()) },
    )
    .await;
}

/// A replica deletion the worker refuses (409) is tried again soon, not at the next
/// periodic look: nothing else wakes a workload that is being deleted or has finished. (The
/// chaos soak found a finished workload's replica left behind after an injected 409.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_replica_deletion_is_tried_again() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let _manager = env.start_manager(FAST).expect("manager");
    admitted_on(&env, 1).await;
    gone_from(&env, 2, "job").await;
    let worker = env.testbed_worker(1).expect("testbed");
    worker.faults().fail_writes(1.0, 409);
    let injected = worker.faults().injected();
    env.delete("job").await.expect("delete");
    eventually(
        WAIT,
        "the manager's deletion on worker-1 refused",
        || async { (worker.faults().injected() > injected).then_some(()) },
    )
    .await;
    worker.faults().clear();
    gone_from(&env, 1, "job").await;
    manager_workload_gone(&env, "job").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphaned_replicas_are_collected_when_their_worker_returns() {
    let Some(mut env) = Env::start_for_faults(2).await else {
        return;
    };
    let _manager = env.start_manager(FAST).expect("manager");
    env.submit("job", 1).await.expect("submit");
    replicas_everywhere(&env, "job").await;
    env.testbed_worker(2).expect("testbed").go_offline().await;
    env.delete("job").await.expect("delete");
    gone_from(&env, 1, "job").await;
    eventually(
        WAIT,
        "manager workload deleted despite the unreachable worker",
        || async { env.manager_workload("job").await.is_none().then_some(()) },
    )
    .await;
    // A workload of another manager (different origin) must never be touched.
    let mut foreign: Workload = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "foreign", "namespace": env.namespace, "labels": {MULTIKUEUE_ORIGIN_LABEL: "someone-else"}},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {}}]},
    }))
    .expect("foreign");
    env.testbed_worker(2)
        .expect("testbed")
        .go_online()
        .await
        .expect("online");
    foreign = env
        .worker_workloads(2)
        .create(&PostParams::default(), &foreign)
        .await
        .expect("create foreign");
    eventually(
        Duration::from_secs(30),
        "orphan collected on worker-2",
        || async { env.replica(2, "job").await.is_none().then_some(()) },
    )
    .await;
    // An orphan of this manager created after the foreign workload: once the collector has
    // removed it, a collection pass has run with the foreign workload on the worker.
    let orphan: Workload = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "late-orphan", "namespace": env.namespace, "labels": {MULTIKUEUE_ORIGIN_LABEL: env.origin}},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {}}]},
    }))
    .expect("orphan");
    env.worker_workloads(2)
        .create(&PostParams::default(), &orphan)
        .await
        .expect("create a late orphan");
    eventually(WAIT, "the late orphan collected on worker-2", || async {
        env.replica(2, "late-orphan").await.is_none()
    })
    .await;
    assert_eq!(
        env.replica(2, "foreign").await.map(|w| w.uid()),
        Some(foreign.uid()),
        "foreign workload untouched"
    );
}

async fn active_condition(env: &Env, cluster: &str, reason: &str) -> String {
    let api: Api<MultiKueueCluster> = Api::all(env.manager_client());
    eventually(WAIT, &format!("{cluster} Active=False/{reason}"), || {
        let api = api.clone();
        async move {
            let mkc = api.get(cluster).await.ok()?;
            let conditions = mkc.status.map(|s| s.conditions).unwrap_or_default();
            find_condition(&conditions, condition::ACTIVE)
                .filter(|c| c.status == "False" && c.reason == reason)
                .map(|c| c.message.clone())
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_insecure_and_unreachable_kubeconfigs_are_reported() {
    let mut env = Env::start(1).await.expect("env");
    if !env.is_testbed() {
        // Real clusters get allowInsecureKubeconfigs (their kubeconfigs may use exec plugins).
        eprintln!("skipped: testbed only");
        return;
    }
    let client = env.manager_client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &env.namespace);
    let cases = [
        ("garbage", "this is not a kubeconfig: [".to_string()),
        (
            "exec",
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/true}}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n".to_string(),
        ),
        (
            "unreachable",
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n".to_string(),
        ),
    ];
    for (name, text) in &cases {
        let secret: Secret = serde_json::from_value(json!({"metadata": {"name": format!("{name}-kubeconfig")}, "stringData": {"kubeconfig": text}})).expect("secret");
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("create secret");
        apply(&client, &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": format!("{name}-kubeconfig")}}}})).await.expect("mkc");
    }
    apply(&client, &json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "no-secret"},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "missing"}}}})).await.expect("mkc");
    let _manager = env.start_manager(FAST).expect("manager");

    let message = active_condition(&env, "garbage", "BadKubeConfig").await;
    assert!(message.contains("cannot parse kubeconfig"), "{message}");
    let message = active_condition(&env, "exec", "InsecureKubeConfig").await;
    assert!(message.contains("exec plugin"), "{message}");
    let message = active_condition(&env, "unreachable", "ClientConnectionFailed").await;
    assert!(
        message.contains("attempt 1 failed") && message.contains("next attempt at"),
        "{message}"
    );
    let message = active_condition(&env, "no-secret", "BadKubeConfig").await;
    assert!(
        message.contains(&format!("Secret {}/missing not found", env.namespace)),
        "{message}"
    );
    // The good worker is unaffected.
    let api: Api<MultiKueueCluster> = Api::all(client.clone());
    let worker1 = env.cluster(1);
    eventually(WAIT, "worker-1 active", || {
        let (api, worker1) = (api.clone(), worker1.clone());
        async move {
            let conditions = api.get(&worker1).await.ok()?.status?.conditions;
            is_condition_true(&conditions, condition::ACTIVE).then_some(())
        }
    })
    .await;
    let mkcs = env.kubectl("manager", &["get", "mkc"]);
    assert!(
        mkcs.contains(&worker1) && mkcs.contains("True") && mkcs.contains("False"),
        "{mkcs}"
    );

    // Fixing the Secret brings the cluster up: the connection is rebuilt on Secret change.
    let good = std::fs::read_to_string(env.kubeconfig("worker-1")).expect("worker kubeconfig");
    let fixed: Secret = serde_json::from_value(
        json!({"metadata": {"name": "garbage-kubeconfig"}, "stringData": {"kubeconfig": good}}),
    )
    .expect("secret");
    secrets
        .replace("garbage-kubeconfig", &PostParams::default(), &{
            let mut s = fixed;
            s.metadata.resource_version = secrets
                .get("garbage-kubeconfig")
                .await
                .expect("get")
                .resource_version();
            s
        })
        .await
        .expect("replace secret");
    eventually(
        WAIT,
        "garbage cluster active after the Secret was fixed",
        || {
            let api = api.clone();
            async move {
                let conditions = api.get("garbage").await.ok()?.status?.conditions;
                is_condition_true(&conditions, condition::ACTIVE).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_restart_mid_flight_duplicates_and_loses_nothing() {
    let mut env = Env::start(3).await.expect("env");
    let manager = env.start_manager(FAST).expect("manager");
    env.submit("job", 1).await.expect("submit");
    let before = replicas_everywhere(&env, "job").await;
    manager.kill();

    env.admit(2, "job", Utc::now())
        .await
        .expect("admit while the manager is down");
    let _manager = env.start_manager(FAST).expect("manager again");
    manager_workload(&env, "job", "admitted on worker-2 after restart", |w| {
        status_of(w).cluster_name == Some(env.cluster(2))
    })
    .await;
    gone_from(&env, 1, "job").await;
    gone_from(&env, 3, "job").await;
    let winner = env.replica(2, "job").await.expect("winner");
    assert_eq!(
        winner.uid(),
        before[1].uid(),
        "the admitted replica was kept, not recreated"
    );
    let all = env
        .worker_workloads(2)
        .list(&Default::default())
        .await
        .expect("list");
    assert_eq!(all.items.len(), 1, "no duplicate replicas");
}

/// `workerClient.qps/burst` limit the requests sent to one worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_clients_are_rate_limited() {
    let env = Env::start(1).await.expect("env");
    let kubeconfig =
        kube::config::Kubeconfig::read_from(env.kubeconfig("worker-1")).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    let limits = baton::config::ClientConfig {
        qps: 2.0,
        burst: 2,
        ..Default::default()
    };
    let client =
        baton::manager::shell::workers::rate_limited_client(config, &limits).expect("client");
    let started = std::time::Instant::now();
    for _ in 0..6 {
        client.apiserver_version().await.expect("version");
    }
    // Six requests at two per second, two at once: at least two full windows of waiting.
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        started.elapsed()
    );
}

/// `workerClient.maxInFlight` bounds the requests to one worker awaiting their answer: a
/// server that answers each request after 300 ms never sees more than that many at once,
/// however many the manager has to send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_clients_keep_at_most_max_in_flight_requests_open() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let (open, most, served) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let (o, m, s) = (open.clone(), most.clone(), served.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (open, most, served) = (o.clone(), m.clone(), s.clone());
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                // One request per read is enough for this client's small GETs.
                while let Ok(n) = stream.read(&mut buffer).await {
                    if n == 0 {
                        return;
                    }
                    let now_open = open.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now_open, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    open.fetch_sub(1, Ordering::SeqCst);
                    served.fetch_add(1, Ordering::SeqCst);
                    let body = r#"{"major":"1","minor":"32","gitVersion":"v1.32.0"}"#;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let config = kube::Config::new(format!("http://{address}").parse().expect("url"));
    let limits = baton::config::ClientConfig {
        qps: 1000.0,
        burst: 1000,
        max_in_flight: 2,
    };
    let client =
        baton::manager::shell::workers::rate_limited_client(config, &limits).expect("client");
    let requests = (0..8).map(|_| client.apiserver_version());
    for answer in futures::future::join_all(requests).await {
        answer.expect("version");
    }
    assert_eq!(
        served.load(Ordering::SeqCst),
        8,
        "every request was answered"
    );
    assert_eq!(
        most.load(Ordering::SeqCst),
        2,
        "at most maxInFlight at once, and that many used"
    );
}

/// `kubectl get ac,cq` on the manager: each MultiKueue AdmissionCheck's `Active` condition
/// follows its MultiKueueConfig and clusters (upstream Kueue's reasons), and a ClusterQueue
/// whose check has no usable cluster says it can't admit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_checks_and_queues_report_whether_they_can_dispatch() {
    let mut env = Env::start(1).await.expect("env");
    let _manager = env.start_manager(FAST).expect("manager");
    let worker = env.cluster(1);
    let missing = env.name("no-such-cluster");
    let (partial, dead, bad) = (env.name("partial"), env.name("dead"), env.name("bad"));
    let dead_queue = env.name("dead-queue");
    let mut docs = Vec::new();
    for (check, clusters) in [
        (&partial, Some(vec![worker.clone(), missing.clone()])),
        (&dead, Some(vec![missing.clone()])),
        (&bad, None),
    ] {
        let config = format!("{check}-config");
        docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": check},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config}}}));
        if let Some(clusters) = clusters {
            docs.push(
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                "metadata": {"name": config}, "spec": {"clusters": clusters}}),
            );
        }
    }
    docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": dead_queue},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": env.name("default-flavor"), "resources": [{"name": "cpu", "nominalQuota": 1}]}]}],
            "admissionChecksStrategy": {"admissionChecks": [{"name": dead}]}}}));
    env.install_docs(0, docs).await.expect("install");

    let active = |kind: &str, name: &str| {
        env.kubectl(
            "manager",
            &[
                "get",
                kind,
                name,
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Active")].status}/{.status.conditions[?(@.type=="Active")].reason}: {.status.conditions[?(@.type=="Active")].message}"#,
            ],
        )
    };
    let expect = |kind: &'static str, name: String, want: String| {
        let active = &active;
        async move {
            eventually(WAIT, &format!("{kind} {name}: {want}"), || async {
                let got = active(kind, &name);
                got.starts_with(&want).then_some(())
            })
            .await
        }
    };
    expect(
        "admissionchecks",
        env.check(),
        "True/Active: The admission check is active".into(),
    )
    .await;
    expect(
        "admissionchecks",
        partial.clone(),
        format!("True/SomeActiveClusters: Missing clusters: [{missing}]"),
    )
    .await;
    expect(
        "admissionchecks",
        dead.clone(),
        format!("False/NoUsableClusters: Missing clusters: [{missing}]"),
    )
    .await;
    expect(
        "admissionchecks",
        bad.clone(),
        format!("False/BadConfig: Cannot load the AdmissionChecks parameters: MultiKueueConfig \"{bad}-config\" not found"),
    )
    .await;
    expect("clusterqueues", env.cluster_queue(), "True/Ready".into()).await;
    expect(
        "clusterqueues",
        dead_queue.clone(),
        format!("False/AdmissionCheckInactive: Can't admit new workloads: references inactive AdmissionCheck(s): {dead}"),
    )
    .await;

    // A cluster that appears but can't connect is inactive rather than missing: the check's
    // condition follows the clusters' own.
    env.install_docs(0, vec![json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
        "metadata": {"name": missing},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "no-such-secret"}}}})])
        .await
        .expect("install cluster");
    expect(
        "admissionchecks",
        dead.clone(),
        format!("False/NoUsableClusters: Inactive clusters: [{missing}]"),
    )
    .await;
}
