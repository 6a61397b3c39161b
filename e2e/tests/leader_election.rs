//! Leader election through the real binary: of two `baton worker` replicas only the Lease
//! holder schedules; a crashed leader is replaced within the lease duration (4 s here); a terminated
//! leader finishes its work and hands the Lease over at once.

use std::time::Duration;

use baton_e2e::harness::eventually;
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);
const ELECTION: &str =
    "leaderElection: {enabled: true, leaseDuration: 4s, renewDeadline: 2s, retryPeriod: 1s}\n";

async fn holder(env: &Env) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(env.worker_client(1), &env.namespace);
    let lease = leases.get_opt("baton-worker").await.ok().flatten()?;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

async fn admitted(env: &Env, name: &str) {
    eventually(WAIT, &format!("{name} admitted"), || async {
        env.worker_workload(1, name).await.filter(is_admitted)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_schedules_and_a_standby_takes_over() {
    let mut env = Env::start(1).await.expect("env");
    env.install_worker_queues(1, 4, json!({}))
        .await
        .expect("queues");
    let first = env.start_worker(1, ELECTION).expect("first worker");
    let leader = eventually(WAIT, "a Lease holder", || holder(&env)).await;
    let second = env.start_worker(1, ELECTION).expect("second worker");
    eventually(WAIT, "the standby waits", || async {
        second
            .log_text()
            .contains("waiting for leadership")
            .then_some(())
    })
    .await;
    env.submit_on_worker(1, "one", 1, 0, json!({}))
        .await
        .expect("submit");
    admitted(&env, "one").await;
    assert!(first.log_text().contains("leading"), "{}", first.log_text());
    assert!(
        !second.log_text().contains("leading"),
        "{}",
        second.log_text()
    );

    // A crash: the Lease is not released; the standby takes it once it expires.
    first.kill();
    let next = eventually(WAIT, "a new Lease holder", || async {
        holder(&env).await.filter(|h| *h != leader)
    })
    .await;
    env.submit_on_worker(1, "two", 1, 0, json!({}))
        .await
        .expect("submit");
    admitted(&env, "two").await;
    assert!(second.log_text().contains("leading"));

    // A termination: the leader stops cleanly and gives the Lease up.
    let log = second.log.clone();
    let status = second
        .terminate(Duration::from_secs(10))
        .expect("exits on SIGTERM");
    assert!(
        status.success(),
        "{status:?}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    eventually(WAIT, "the Lease released", || async {
        holder(&env).await.is_none_or(|h| h != next).then_some(())
    })
    .await;
}
