//! The manager as the single pane of glass (issue 26), through the real `baton manager`
//! binary and kubectl's own output: the manager Workload shows every replica, its gate, its
//! place in line, who holds the baton and when it may pass; then the pass; then the winner
//! and the removals. Tests play the workers' schedulers.

use std::time::Duration;

use baton_crds::time::to_chrono;
use baton_crds::workload::{BatonStatus, GateState, Workload};
use baton_e2e::harness::eventually;
use baton_e2e::multikueue::Env;
use chrono::Utc;

/// The baton passes after 30 s; everything else comes within seconds.
const TIMEOUT: u64 = 30;
const WAIT: Duration = Duration::from_secs(20);
const PASS_WAIT: Duration = Duration::from_secs(TIMEOUT + 20);

/// `baton describe workload` against the manager, as a user without worker credentials.
fn describe(env: &Env, name: &str, json: bool) -> String {
    let kubeconfig = env.kubeconfig("manager");
    let mut args = vec![
        "describe".to_string(),
        "workload".into(),
        name.into(),
        "-n".into(),
        env.namespace.clone(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
    ];
    if json {
        args.extend(["-o".into(), "json".into()]);
    }
    let out = std::process::Command::new(baton_e2e::harness::process::baton_binary())
        .args(&args)
        .output()
        .expect("run baton describe");
    assert!(
        out.status.success(),
        "baton describe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn config() -> String {
    format!("singleClusterPreemptionTimeout: {TIMEOUT}s\nworkerLostTimeout: 60s\ngcInterval: 1s\n")
}

async fn view(env: &Env, name: &str) -> Option<BatonStatus> {
    env.manager_workloads()
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|w: Workload| w.status.and_then(|s| s.baton))
        .map(|b| *b)
}

/// Submits workload `job`, waits for its replicas on both workers, and has worker-1 signal,
/// then worker-2 a second later.
async fn submit_and_signal(env: &Env) {
    env.submit("job", 1).await.expect("submit");
    for i in 1..=2 {
        eventually(WAIT, &format!("replica on worker-{i}"), || async {
            env.replica(i, "job").await
        })
        .await;
    }
    let t0 = Utc::now();
    env.signal_gated(1, "job", t0)
        .await
        .expect("worker-1 signals");
    env.signal_gated(2, "job", t0 + chrono::Duration::seconds(1))
        .await
        .expect("worker-2 signals");
}

/// The value of `column` in the row of `kubectl get kwl` (header-aligned columns).
fn column(table: &str, row: &str, column: &str) -> String {
    baton_e2e::harness::table_cell(table, row, column)
}

/// The values of every `Name:  value` line of `kubectl describe` output.
fn fields(described: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}:");
    described
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_manager_workload_tells_the_whole_story() {
    let mut env = Env::start(2).await.expect("env");
    let _manager = env.start_manager(&config()).expect("manager");
    submit_and_signal(&env).await;
    let (w1, w2) = (env.cluster(1), env.cluster(2));

    // Worker-1 holds the baton, worker-2 waits, first in line, until the pass time.
    let first = eventually(WAIT, "worker-1 holds, worker-2 waits", || async {
        view(&env, "job")
            .await
            .filter(|v| v.holder.as_deref() == Some(w1.as_str()) && v.waiting == 1)
    })
    .await;
    let since = first.holder_since.as_ref().map(to_chrono).expect("since");
    assert_eq!(
        first.passes_after.as_ref().map(to_chrono),
        Some(since + chrono::Duration::seconds(TIMEOUT as i64 + 1)),
    );
    let by_cluster = |v: &BatonStatus, c: &str| {
        v.replicas
            .iter()
            .find(|r| r.cluster == c)
            .cloned()
            .unwrap_or_else(|| panic!("{c} in {v:?}"))
    };
    let (r1, r2) = (by_cluster(&first, &w1), by_cluster(&first, &w2));
    assert_eq!((r1.gate, r1.position), (Some(GateState::Open), None));
    assert_eq!((r2.gate, r2.position), (Some(GateState::Closed), Some(1)));
    assert!(r1.signalling_since.is_some() && r2.signalling_since.is_some());

    let table = env.kubectl("manager", &["get", "kwl", "job"]);
    assert_eq!(column(&table, "job", "BATON"), w1, "{table}");
    assert_eq!(column(&table, "job", "WAITING"), "1", "{table}");
    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    for needle in ["Baton:", "Passes After:", "Signalling Since:"] {
        assert!(described.contains(needle), "{needle} in {described}");
    }
    assert_eq!(
        fields(&described, "Holder"),
        vec![w1.clone()],
        "{described}"
    );
    assert_eq!(fields(&described, "Position"), vec!["1"], "{described}");
    let story = describe(&env, "job", false);
    assert!(
        story.contains(&format!(
            "Now:       {w1} holds the baton; 1 waiting; it may pass after"
        )),
        "{story}"
    );
    let row = |story: &str, cluster: &str, what: &str| {
        story
            .lines()
            .any(|l| l.contains(&format!("  {cluster}  ")) && l.contains(&format!("  {what}  ")))
    };
    for (cluster, what) in [(&w1, "signalled"), (&w2, "signalled"), (&w1, "gate opened")] {
        assert!(row(&story, cluster, what), "{cluster} {what} in {story}");
    }

    // After the timeout the view shows the pass: worker-2 holds it, nobody waits.
    let passed = eventually(PASS_WAIT, "the baton passed to worker-2", || async {
        view(&env, "job")
            .await
            .filter(|v| v.holder.as_deref() == Some(w2.as_str()))
    })
    .await;
    assert_eq!(passed.waiting, 0);
    assert!(
        passed.holder_since.as_ref().map(to_chrono)
            >= Some(since + chrono::Duration::seconds(TIMEOUT as i64)),
        "passed after the timeout: {passed:?}"
    );
    let table = env.kubectl("manager", &["get", "kwl", "job"]);
    assert_eq!(column(&table, "job", "BATON"), w2, "{table}");
    assert_eq!(column(&table, "job", "WAITING"), "0", "{table}");

    // Worker-2 admits: the view shows the winner and the removal of worker-1's replica.
    env.admit(2, "job", Utc::now()).await.expect("admit");
    let won = eventually(WAIT, "the winner in the view", || async {
        view(&env, "job")
            .await
            .filter(|v| v.replicas.iter().any(|r| r.admitted))
    })
    .await;
    assert!(by_cluster(&won, &w2).admitted);
    assert!(by_cluster(&won, &w1).removed);
    assert_eq!(won.passes_after, None);
    eventually(WAIT, "worker-1's replica removed", || async {
        env.replica(1, "job").await.is_none().then_some(())
    })
    .await;
    let table = env.kubectl("manager", &["get", "kwl", "job"]);
    assert_eq!(column(&table, "job", "ADMITTED"), "True", "{table}");
    let described = env.kubectl("manager", &["describe", "kwl", "job"]);
    assert_eq!(fields(&described, "Removed"), vec!["true"], "{described}");
    assert_eq!(fields(&described, "Admitted"), vec!["true"], "{described}");

    // The same story from `baton describe`: the pass and why, the win, the removal.
    let story = describe(&env, "job", false);
    assert!(
        story.contains(&format!("Now:       admitted on {w2}")),
        "{story}"
    );
    for (cluster, what) in [
        (&w1, "signalled"),
        (&w2, "signalled"),
        (&w1, "gate opened"),
        (&w1, "baton passed"),
        (&w2, "gate opened"),
        (&w2, "admitted"),
        (&w1, "replica removed"),
    ] {
        assert!(row(&story, cluster, what), "{cluster} {what} in {story}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&describe(&env, "job", true)).expect("describe -o json");
    let kinds: Vec<&str> = json["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    for kind in [
        "dispatched",
        "signalled",
        "gateOpened",
        "batonPassed",
        "admitted",
        "replicaRemoved",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {json}");
    }
    let passed = kinds.iter().position(|k| *k == "batonPassed");
    let admitted = kinds.iter().position(|k| *k == "admitted");
    let at = |kind: &str| kinds.iter().position(|k| *k == kind);
    assert!(passed < admitted, "in time order: {json}");
    assert!(admitted < at("replicaRemoved"), "in time order: {json}");
    assert!(
        at("quotaReserved") < at("signalled"),
        "in time order: {json}"
    );
    println!("{story}");
}

/// Where the manager's Workload CRD is upstream Kueue's, `status.baton` is pruned: the
/// manager learns it from the answer to the first write that carried a view (its gauge says
/// so), sends no view again, and the workload is gated and admitted as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_upstreams_crd_prunes_the_view_it_is_not_sent_again() {
    let mut env = Env::start(2).await.expect("env");
    if !env.is_testbed() {
        // Replacing a real cluster's Workload CRD is not a test's to do.
        eprintln!("skipped: testbed only");
        return;
    }
    let upstream = baton_e2e::harness::integrations::shared_dir()
        .join("kueue-crds")
        .join("kueue.x-k8s.io_workloads.yaml");
    let path = upstream.display().to_string();
    env.kubectl("manager", &["replace", "-f", &path]);
    let manager = env.start_manager(&config()).expect("manager");
    submit_and_signal(&env).await;
    // The view falls due once worker-1's opening is quiet; its write comes back pruned.
    eventually(
        WAIT,
        "the manager learns that the CRD prunes the view",
        || async { (manager.metric("baton_workload_view_pruned") == Some(1.0)).then_some(()) },
    )
    .await;
    let sent = manager
        .metric("baton_workload_view_writes_total")
        .expect("view writes exported");
    assert_eq!(view(&env, "job").await, None);

    // Gating goes on: worker-1 holds the gate and admits; the win carries no view.
    eventually(WAIT, "worker-1's gate open", || async {
        env.replica(1, "job").await.filter(|r| {
            baton_crds::gates::gate_state(r, baton_crds::constants::MULTIKUEUE_GATE)
                == Some(GateState::Open)
        })
    })
    .await;
    env.admit(1, "job", Utc::now()).await.expect("admit");
    let w1 = env.cluster(1);
    eventually(WAIT, "the winner recorded on the manager", || async {
        env.manager_workloads()
            .get_opt("job")
            .await
            .ok()
            .flatten()
            .and_then(|w: Workload| w.status)
            .filter(|s| s.cluster_name.as_deref() == Some(w1.as_str()))
    })
    .await;
    assert_eq!(
        manager.metric("baton_workload_view_writes_total"),
        Some(sent),
        "no view sent after the answer showed it pruned"
    );
    assert_eq!(view(&env, "job").await, None);
}
