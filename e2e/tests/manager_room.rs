//! Where there is room, seen from the manager (issue 26, part 2), through the real
//! `baton manager` binary and kubectl's own output: `kubectl get mkc -o wide` on the manager
//! shows each worker's nominal and reserved CPU and its pending workloads, the same numbers
//! as the workers' own `kubectl get cq`. Tests play the workers' schedulers (they write the
//! ClusterQueues' status).

use std::time::Duration;

use baton_crds::ClusterQueue;
use baton_crds::quantity::parse_milli_str;
use baton_e2e::harness::process::BatonProcess;
use baton_e2e::harness::{eventually, table_cell};
use baton_e2e::multikueue::{Env, reconciles};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

/// Two ClusterQueues on worker `i`, with `i`-dependent quotas, and their status.
async fn install_queues(env: &Env, i: usize) {
    let flavor = env.name(&format!("room-flavor-{i}"));
    let queues = [
        (format!("room-a-{i}"), format!("{}", 4 * i)),
        (format!("room-b-{i}"), "1500m".to_string()),
    ];
    let mut docs = vec![
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": flavor}}),
    ];
    for (name, cpu) in &queues {
        docs.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": env.name(name)},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": "8Gi"}]}]}]}}));
    }
    env.install_docs(i, docs).await.expect("install queues");
    for (n, (name, _)) in queues.iter().enumerate() {
        reserve(env, i, name, &format!("{}500m", i + n), n as i32 + i as i32).await;
    }
}

/// Writes a ClusterQueue's status as a worker's scheduler would: reserved CPU and pending.
async fn reserve(env: &Env, i: usize, queue: &str, cpu: &str, pending: i32) {
    let flavor = env.name(&format!("room-flavor-{i}"));
    let api: Api<ClusterQueue> = Api::all(env.worker_client(i));
    let status = json!({"status": {"pendingWorkloads": pending, "flavorsReservation": [
        {"name": flavor, "resources": [{"name": "cpu", "total": cpu, "borrowed": "0"}, {"name": "memory", "total": "1Gi", "borrowed": "0"}]}]}});
    eventually(
        WAIT,
        &format!("status of {queue} on worker-{i}"),
        || async {
            api.patch_status(
                &env.name(queue),
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await
            .ok()
        },
    )
    .await;
}

/// Milli-CPU in one kubectl cell ("12500m", "8").
fn milli(cell: &str) -> i128 {
    parse_milli_str(cell).unwrap_or_else(|e| panic!("{cell:?}: {e}"))
}

/// Worker `i`'s nominal CPU, reserved CPU and pending workloads, summed over its
/// ClusterQueues, from its own `kubectl get cq` (the pending column as kubectl prints it,
/// the CPU amounts through custom columns: the CRD prints no quota column).
fn worker_numbers(env: &Env, i: usize) -> (i128, i128, i64) {
    let cluster = env.cluster(i);
    let table = env.kubectl(&cluster, &["get", "cq"]);
    let pending = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| {
            table_cell(&table, name, "PENDING WORKLOADS")
                .parse::<i64>()
                .unwrap_or(0)
        })
        .sum();
    let columns = "custom-columns=NAME:.metadata.name,NOMINAL:.spec.resourceGroups[*].flavors[*].resources[?(@.name==\"cpu\")].nominalQuota,RESERVED:.status.flavorsReservation[*].resources[?(@.name==\"cpu\")].total";
    let custom = env.kubectl(&cluster, &["get", "cq", "-o", columns]);
    let (mut nominal, mut reserved) = (0, 0);
    for line in custom.lines().skip(1) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let sum = |cell: Option<&&str>| {
            cell.filter(|c| **c != "<none>")
                .map_or(0, |c| c.split(',').map(milli).sum::<i128>())
        };
        nominal += sum(cells.get(1));
        reserved += sum(cells.get(2));
    }
    println!("worker-{i} kubectl get cq:\n{table}{custom}");
    (nominal, reserved, pending)
}

/// The manager's `kubectl get mkc -o wide` numbers for worker `i`, once it shows them.
fn manager_numbers(table: &str, cluster: &str) -> Option<(i128, i128, i64)> {
    let nominal = table_cell(table, cluster, "CPU NOMINAL");
    let reserved = table_cell(table, cluster, "CPU RESERVED");
    let pending = table_cell(table, cluster, "PENDING").parse().ok()?;
    if nominal.is_empty() || reserved.is_empty() {
        return None;
    }
    Some((milli(&nominal), milli(&reserved), pending))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_mkc_wide_shows_the_room_on_each_worker() {
    let mut env = Env::start(2).await.expect("env");
    for i in 1..=2 {
        install_queues(&env, i).await;
    }
    let _manager = env.start_manager("").expect("manager");
    for i in 1..=2 {
        let cluster = env.cluster(i);
        let expected = worker_numbers(&env, i);
        assert!(expected.0 > 0 && expected.1 > 0, "{expected:?}");
        let shown = eventually(
            WAIT,
            &format!("{cluster}'s room on the manager"),
            || async {
                let table = env.kubectl("manager", &["get", "mkc", "-o", "wide"]);
                (manager_numbers(&table, &cluster) == Some(expected)).then_some(table)
            },
        )
        .await;
        assert_eq!(table_cell(&shown, &cluster, "CONNECTED"), "True", "{shown}");
        assert!(
            !table_cell(&shown, &cluster, "LAST CONTACT").is_empty(),
            "{shown}"
        );
        println!("{shown}");
    }

    // The worker's scheduler reserves more: the manager follows (the watch, not a relist).
    reserve(&env, 1, "room-a-1", "3", 0).await;
    let expected = worker_numbers(&env, 1);
    let cluster = env.cluster(1);
    let table = eventually(
        WAIT,
        "worker-1's new reservation on the manager",
        || async {
            let table = env.kubectl("manager", &["get", "mkc", "-o", "wide"]);
            (manager_numbers(&table, &cluster) == Some(expected)).then_some(table)
        },
    )
    .await;
    println!("{table}");
    let described = env.kubectl("manager", &["get", "mkc", &cluster, "-o", "yaml"]);
    for needle in ["baton:", "flavors:", "lastContact:", "connected: true"] {
        assert!(described.contains(needle), "{needle} in {described}");
    }
}

/// The room summary as the manager wrote it into worker `i`'s MultiKueueCluster.
async fn room(env: &Env, i: usize) -> Option<baton_crds::multikueue::RoomStatus> {
    let api: Api<baton_crds::MultiKueueCluster> = Api::all(env.manager_client());
    api.get_opt(&env.cluster(i))
        .await
        .ok()
        .flatten()
        .and_then(|m| m.status.and_then(|s| s.baton))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_worker_keeps_its_last_numbers_marked_disconnected() {
    let Some(mut env) = Env::start_for_faults(1).await else {
        return;
    };
    install_queues(&env, 1).await;
    let _manager = env.start_manager("").expect("manager");
    let seen = eventually(WAIT, "worker-1's room", || async {
        room(&env, 1)
            .await
            .filter(|r| r.connected && r.cluster_queues == 2)
    })
    .await;
    let worker = env.testbed_worker(1).expect("testbed");
    let offline = chrono::Utc::now();
    worker.go_offline().await;
    let lost = eventually(
        Duration::from_secs(60),
        "worker-1 marked disconnected",
        || async { room(&env, 1).await.filter(|r| !r.connected) },
    )
    .await;
    assert_eq!(
        lost.resources, seen.resources,
        "the last known numbers are kept"
    );
    let contact = lost
        .last_contact
        .as_ref()
        .map(baton_crds::time::to_chrono)
        .expect("lastContact");
    // The moment the connection was lost (stored to the second), not a later write.
    assert!(
        contact >= offline - chrono::Duration::seconds(1),
        "{contact} vs {offline}"
    );
    let table = env.kubectl("manager", &["get", "mkc", "-o", "wide"]);
    assert_eq!(
        table_cell(&table, &env.cluster(1), "CONNECTED"),
        "False",
        "{table}"
    );
    println!("{table}");
    worker.go_online().await.expect("online");
    eventually(
        Duration::from_secs(90),
        "worker-1 connected again",
        || async { room(&env, 1).await.filter(|r| r.connected) },
    )
    .await;
}

/// How many room summaries the manager has written for `cluster` (0 before the first).
fn room_writes(manager: &BatonProcess, cluster: &str) -> u64 {
    manager
        .metric(&format!(
            "baton_worker_room_writes_total{{cluster=\"{cluster}\"}}"
        ))
        .map_or(0, |n| n as u64)
}

/// A room summary written into a MultiKueueCluster changes no connection, so it does not set
/// off a reconcile of every manager Workload (issue 23: with each worker's summary rewritten
/// every five minutes, 20 workers woke 50,000 workloads 20 times over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_write_does_not_wake_every_workload() {
    const WAITING: u64 = 20;
    let mut env = Env::start(1).await.expect("env");
    install_queues(&env, 1).await;
    let manager = env.start_manager("").expect("manager");
    let cluster = env.cluster(1);
    eventually(WAIT, "worker-1's first room summary", || async {
        (room_writes(&manager, &cluster) > 0).then_some(())
    })
    .await;
    // Too large for the manager's ClusterQueue: they wait there, with no replica anywhere.
    let names: Vec<String> = (0..WAITING)
        .map(|n| env.name(&format!("too-large-{n}")))
        .collect();
    for name in &names {
        env.submit(name, 1000).await.expect("submit");
    }
    env.manager_reconciled(&manager, &names[0]).await;
    let writes = room_writes(&manager, &cluster);
    let before = eventually(WAIT, "the manager idle", || async {
        let first = reconciles(&manager)?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        (reconciles(&manager)? == first).then_some(first)
    })
    .await;
    // The worker's scheduler reserves more: the manager writes the new room.
    reserve(&env, 1, "room-a-1", "3", 0).await;
    eventually(WAIT, "the manager writes worker-1's new room", || async {
        (room_writes(&manager, &cluster) > writes).then_some(())
    })
    .await;
    // Evidence that the manager's watches and reconciler run after that write: a touched
    // Workload is reconciled. Then a second for stragglers of a wake-up of every workload.
    env.manager_reconciled(&manager, &names[1]).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = reconciles(&manager).expect("the manager answers /metrics");
    assert!(
        after - before < WAITING,
        "{} reconciles after a room write, with {WAITING} workloads waiting",
        after - before
    );
}
