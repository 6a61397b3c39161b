//! Manager-side quota (issue 13) through the real `baton manager` (and, in two tests, real
//! `baton worker` shims) on testbed clusters. As in Kueue's MultiKueue, a workload first
//! reserves quota in the manager's own ClusterQueue and only then does the MultiKueue check
//! dispatch it: the manager's quota caps what runs across all workers, priorities order
//! dispatch, finishing or deleting frees quota, cohorts borrow and reclaim, and a manager
//! preemption removes the victim's replicas everywhere.
//!
//! Each test installs its own manager ClusterQueues and LocalQueues (with the environment's
//! MultiKueue AdmissionCheck) and, unless it starts worker shims, plays the workers'
//! schedulers. Watches on every cluster record each manager status and each replica ever
//! created, so "never dispatched", "never above quota" and short-lived states (a check in
//! `Retry`, an eviction) are checked on the whole history rather than on one sample.

use baton_crds::constants::{condition, reason};
use baton_crds::workload::{CheckState, Workload, WorkloadStatus};
use baton_e2e::manager_quota::{
    Queue, Suite, WORKERS, check_state, cond, cpu_usage, cq_counts, has, is_true, lq_counts, names,
    queue, reserved_awaiting_worker, reserved_in, status, summary, waiting_for_quota,
};
use baton_e2e::multikueue::Env;
use baton_e2e::workers::is_admitted;
use chrono::Utc;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;

/// Done-when (1) and (6): a manager ClusterQueue of 4 CPUs holds at most 4 CPUs of
/// workloads; only those are dispatched; the rest wait on the manager with a reason and no
/// replica anywhere; the queue's status comes from the manager's reservations; a worker's
/// admission makes the check Ready and the workload Admitted, in the manager's queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_queue_of_4_cpus_dispatches_at_most_4_cpus() {
    let (suite, q) = Suite::started(|env| queue(env, "quota-4", "quota-lq", 4, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    let all = names("w", 1..=6);
    for name in &all {
        suite.submit(name, q.lq, 1, 0).await;
    }

    // Exactly four reserve quota on the manager (and are dispatched); two wait.
    let (reserved, waiting) = suite
        .wait_reserved_and_waiting(&all, (&cq, &check), (4, 2))
        .await;
    for name in &reserved {
        let replicas = suite.wait_replicas_everywhere(name).await;
        assert_eq!(replicas.len(), WORKERS);
        // The admission names the manager's queue and flavor, with the usage reserved.
        let wl = suite.manager_wl(name).await.expect("reserved workload");
        let admission = status(&wl).admission.expect("admission");
        let assignment = &admission.pod_set_assignments[0];
        assert_eq!(
            assignment.flavors.get("cpu").map(|f| f.0.as_str()),
            Some(suite.env.name("default-flavor").as_str()),
            "{}",
            summary(&wl)
        );
        assert_eq!(
            assignment.resource_usage.get("cpu").map(|q| q.0.as_str()),
            Some("1")
        );
    }
    for name in &waiting {
        let wl = suite.manager_wl(name).await.expect("waiting workload");
        let message = cond(&wl, condition::QUOTA_RESERVED)
            .map(|c| c.message)
            .unwrap_or_default();
        assert!(
            message.contains("insufficient unused quota"),
            "Kueue's wording for a workload that does not fit: {message}"
        );
    }

    // The queues' status counts the manager's reservations.
    suite
        .wait_cq(&cq, "2 pending, 4 reserving, 4 CPUs reserved", |queue| {
            let s = queue.status.clone().unwrap_or_default();
            let (pending, reserving, _) = cq_counts(queue);
            (pending, reserving) == (2, 4) && cpu_usage(&s.flavors_reservation).0 == "4"
        })
        .await;

    suite
        .wait("LocalQueue status: 2 pending, 4 reserving", || async {
            let lq = suite.local_queue(q.lq).await?;
            let (pending, reserving, _) = lq_counts(&lq);
            ((pending, reserving) == (2, 4)).then_some(())
        })
        .await;

    // `kubectl get wl` shows the manager's ClusterQueue under RESERVED IN.
    let listed = suite.env.kubectl("manager", &["get", "kwl", &reserved[0]]);
    assert!(listed.contains(&cq), "{listed}");

    // Worker-1 admits one: check Ready, clusterName, Admitted, the admission still the
    // manager's; the other worker's replica goes.
    let first = &reserved[0];
    suite.env.admit(1, first, Utc::now()).await.expect("admit");
    let admitted = suite
        .wait_wl(first, "admitted through worker-1", |w| {
            is_true(w, condition::ADMITTED)
                && check_state(w, &check) == Some(CheckState::Ready)
                && status(w).cluster_name == Some(suite.env.cluster(1))
        })
        .await;
    assert!(reserved_in(&admitted, &cq), "{}", summary(&admitted));
    // The manager's own reservation stays as Kueue writes it, not the worker's mirrored.
    let reserved_message = cond(&admitted, condition::QUOTA_RESERVED)
        .map(|c| c.message)
        .unwrap_or_default();
    suite.expect_kueue(
        reserved_message == format!("Quota reserved in ClusterQueue {cq}"),
        format!(
            "QuotaReserved after a worker admitted: {}",
            summary(&admitted)
        ),
    );
    suite
        .wait(&format!("{first}: loser replica removed"), || async {
            suite.env.replica(2, first).await.is_none().then_some(())
        })
        .await;

    // Nothing was freed, so the two still wait, and they never had a replica; the manager
    // never held more than 4 CPUs.
    for name in &waiting {
        let wl = suite.manager_wl(name).await.expect("waiting workload");
        assert!(waiting_for_quota(&wl), "{name}: {}", summary(&wl));
    }
    suite.assert_never_dispatched(&waiting);
    let (max, holders) = suite.history().max_reserved(&cq, &suite.sizes());
    assert!(
        max <= 4,
        "the manager reserved {max} CPUs in a 4-CPU queue: {holders:?}"
    );
    suite.done();
}

/// Done-when (1) through real worker shims: two workers with 4 CPUs each (8 in all) behind
/// a 4-CPU manager queue run at most 4 CPUs of work; when one finishes, the next is
/// reserved, dispatched and admitted by a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_workers_run_no_more_than_the_manager_quota() {
    let (mut suite, mut queues) =
        Suite::new(|env| vec![queue(env, "shim-quota", "shim-lq", 4, json!({}))]).await;
    let q = queues.pop().expect("one queue");
    suite.start_worker_shims(4, q.lq).await;
    suite.start_manager();
    let (cq, check) = (q.cq.clone(), suite.env.check());
    let all = names("j", 1..=6);
    for name in &all {
        suite.submit(name, q.lq, 1, 0).await;
    }

    let running = |wl: &Workload| {
        is_true(wl, condition::ADMITTED)
            && !is_true(wl, condition::FINISHED)
            && check_state(wl, &check) == Some(CheckState::Ready)
            && status(wl).cluster_name.is_some()
            && reserved_in(wl, &cq)
    };
    let (admitted, waiting) = suite
        .wait(
            "4 admitted through the workers and 2 waiting on the manager",
            || async {
                let (mut admitted, mut waiting) = (Vec::new(), Vec::new());
                for name in &all {
                    let wl = suite.manager_wl(name).await?;
                    if running(&wl) {
                        admitted.push((name.clone(), status(&wl).cluster_name?));
                    } else if waiting_for_quota(&wl) {
                        waiting.push(name.clone());
                    }
                }
                (admitted.len() == 4 && waiting.len() == 2).then_some((admitted, waiting))
            },
        )
        .await;
    suite.assert_never_dispatched(&waiting);
    // Across the workers, exactly the four hold quota (losers are removed).
    suite
        .wait(
            "4 replicas admitted across the workers, one each",
            || async {
                let mut count = 0;
                for i in 1..=WORKERS {
                    let list = suite
                        .env
                        .worker_workloads(i)
                        .list(&Default::default())
                        .await
                        .ok()?;
                    count += list.items.iter().filter(|w| is_admitted(w)).count();
                }
                (count == 4).then_some(())
            },
        )
        .await;

    // One finishes on its worker: the next waiting one runs.
    let (done, on) = &admitted[0];
    let worker: usize = (1..=WORKERS)
        .find(|i| suite.env.cluster(*i) == *on)
        .expect("a known worker");
    suite.report_finished(worker, done).await;
    let next = suite
        .wait("a waiting workload admitted after one finished", || async {
            for name in &waiting {
                let wl = suite.manager_wl(name).await?;
                if running(&wl) {
                    return Some(name.clone());
                }
            }
            None
        })
        .await;
    let other: Vec<String> = waiting.iter().filter(|n| **n != next).cloned().collect();
    for name in &other {
        let wl = suite.manager_wl(name).await.expect("still waiting");
        assert!(waiting_for_quota(&wl), "{name}: {}", summary(&wl));
    }
    suite.assert_never_dispatched(&other);
    let (max, holders) = suite.history().max_reserved(&cq, &suite.sizes());
    assert!(
        max <= 4,
        "the manager reserved {max} CPUs in a 4-CPU queue: {holders:?}"
    );
    suite.done();
}

/// Done-when (2): among waiting workloads, the higher priority is reserved and dispatched
/// first, even when it was created later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_higher_priority_workload_is_dispatched_first() {
    let (suite, q) = Suite::started(|env| queue(env, "prio-2", "prio-lq", 2, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("blocker", q.lq, 2, 0).await;
    suite
        .wait_wl("blocker", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    // Same size, `high` created in a later second: FIFO would pick `low`.
    suite.submit("low", q.lq, 2, 0).await;
    suite.after_creation_second_of("low").await;
    suite.submit("high", q.lq, 2, 100).await;
    for name in ["low", "high"] {
        suite
            .wait_wl(name, "waiting for quota", waiting_for_quota)
            .await;
    }
    suite.assert_never_dispatched(&["low".into(), "high".into()]);

    suite.finish_on(1, "blocker").await;
    suite
        .wait_wl("high", "reserved after blocker finished", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("high").await;
    let low = suite.manager_wl("low").await.expect("low");
    assert!(waiting_for_quota(&low), "{}", summary(&low));
    suite.assert_never_dispatched(&["low".into()]);
    suite.wait_no_replicas("blocker").await;
    suite.done();
}

/// Done-when (3): finishing frees manager quota, and so does deleting; each time the next
/// workload is reserved and dispatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finishing_or_deleting_frees_manager_quota() {
    let (suite, q) = Suite::started(|env| queue(env, "free-2", "free-lq", 2, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("a", q.lq, 2, 0).await;
    suite
        .wait_wl("a", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    for name in ["b", "c"] {
        // `c` is created in a later second than `b`: strictly behind it in FIFO order.
        if name == "c" {
            suite.after_creation_second_of("b").await;
        }
        suite.submit(name, q.lq, 2, 0).await;
        suite
            .wait_wl(name, "waiting for quota", waiting_for_quota)
            .await;
    }

    // `a` finishes on worker-2: `b` gets the quota, `c` waits on.
    suite.finish_on(2, "a").await;
    suite
        .wait_wl("b", "reserved after a finished", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("b").await;
    suite.wait_no_replicas("a").await;
    let c = suite.manager_wl("c").await.expect("c");
    assert!(waiting_for_quota(&c), "{}", summary(&c));
    suite.assert_never_dispatched(&["c".into()]);

    // `b` is deleted while dispatched: its replicas go and `c` gets the quota.
    suite.env.delete("b").await.expect("delete b");
    suite.wait_no_replicas("b").await;
    suite
        .wait_wl("c", "reserved after b was deleted", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("c").await;
    suite
        .wait_cq(&cq, "nothing pending, 1 reserving", |queue| {
            let (pending, reserving, _) = cq_counts(queue);
            (pending, reserving) == (0, 1)
        })
        .await;
    let (max, holders) = suite.history().max_reserved(&cq, &suite.sizes());
    assert!(
        max <= 2,
        "the manager reserved {max} CPUs in a 2-CPU queue: {holders:?}"
    );
    suite.done();
}

/// Done-when (4): two manager ClusterQueues in one cohort borrow each other's unused quota,
/// and with `reclaimWithinCohort: Any` a queue takes its nominal quota back by preempting
/// the borrower, whose replicas go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_queues_in_a_cohort_borrow_and_reclaim() {
    let queues = |env: &Env| {
        let cohort = env.name("team-cohort");
        [
            queue(
                env,
                "team-a",
                "team-a-lq",
                2,
                json!({"cohortName": cohort, "preemption": {"reclaimWithinCohort": "Any"}}),
            ),
            queue(env, "team-b", "team-b-lq", 2, json!({"cohortName": cohort})),
        ]
    };
    let (mut suite, queues) = Suite::new(|env| queues(env).into()).await;
    let [a, b]: [Queue; 2] = queues.try_into().ok().expect("two queues");
    suite.start_manager();
    let check = suite.env.check();

    // team-b runs two 2-CPU workloads: one in its own quota, one borrowed from team-a.
    suite.submit("b1", b.lq, 2, 10).await;
    suite
        .wait_wl("b1", "reserved in team-b", |w| {
            reserved_awaiting_worker(w, &b.cq, &check)
        })
        .await;
    suite.submit("b2", b.lq, 2, 0).await;
    suite
        .wait_wl("b2", "reserved in team-b by borrowing", |w| {
            reserved_awaiting_worker(w, &b.cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("b2").await;
    suite
        .wait_cq(&b.cq, "4 CPUs reserved, 2 borrowed", |queue| {
            let s = queue.status.clone().unwrap_or_default();
            cpu_usage(&s.flavors_reservation) == ("4".to_string(), "2".to_string())
        })
        .await;

    // team-a wants its quota back: the borrower is preempted on the manager.
    suite.submit("a1", a.lq, 2, 0).await;
    suite
        .wait_wl("a1", "reserved in team-a after reclaiming", |w| {
            reserved_awaiting_worker(w, &a.cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("a1").await;
    suite.wait_no_replicas("b2").await;
    let b2 = suite
        .wait_wl("b2", "back waiting for quota", waiting_for_quota)
        .await;
    assert!(
        has(
            &b2,
            condition::PREEMPTED,
            "True",
            reason::IN_COHORT_RECLAMATION
        ),
        "{}",
        summary(&b2)
    );
    let evicted = suite.history().manager_states("b2").into_iter().any(|w| {
        has(&w, condition::EVICTED, "True", reason::PREEMPTED)
            && !is_true(&w, condition::QUOTA_RESERVED)
    });
    assert!(evicted, "b2 was never seen evicted with its quota released");
    let b1 = suite.manager_wl("b1").await.expect("b1");
    assert!(
        reserved_in(&b1, &b.cq) && !is_true(&b1, condition::EVICTED),
        "team-b's own workload keeps its quota: {}",
        summary(&b1)
    );
    suite
        .wait_cq(&b.cq, "2 CPUs reserved, none borrowed", |queue| {
            let s = queue.status.clone().unwrap_or_default();
            let (pending, reserving, _) = cq_counts(queue);
            cpu_usage(&s.flavors_reservation) == ("2".to_string(), "0".to_string())
                && (pending, reserving) == (1, 1)
        })
        .await;
    suite.done();
}

/// Done-when (5): with `withinClusterQueue: LowerPriority`, a higher-priority workload that
/// does not fit preempts a lower one on the manager; the victim, already running on a
/// worker, is evicted the Kueue way and its replicas are deleted everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_preemption_removes_the_victims_replicas_everywhere() {
    let spec = json!({"preemption": {"withinClusterQueue": "LowerPriority"}});
    let (suite, q) = Suite::started(|env| queue(env, "preempt-2", "preempt-lq", 2, spec)).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());

    suite.submit("low", q.lq, 2, 0).await;
    suite
        .wait_wl("low", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("low").await;
    suite.env.admit(1, "low", Utc::now()).await.expect("admit");
    suite
        .wait_wl("low", "admitted through worker-1", |w| {
            is_true(w, condition::ADMITTED) && status(w).cluster_name == Some(suite.env.cluster(1))
        })
        .await;

    suite.submit("high", q.lq, 2, 100).await;
    suite
        .wait_wl("high", "reserved after preempting low", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("high").await;
    suite.wait_no_replicas("low").await;
    let low = suite
        .wait_wl(
            "low",
            "back in its queue, waiting for quota",
            waiting_for_quota,
        )
        .await;
    assert!(
        has(&low, condition::PREEMPTED, "True", reason::IN_CLUSTER_QUEUE),
        "{}",
        summary(&low)
    );
    assert!(!is_true(&low, condition::ADMITTED), "{}", summary(&low));

    // The eviction as Kueue writes it, seen at some point: Evicted/Preempted, quota released,
    // back in the queue.
    let states = suite.history().manager_states("low");
    let evicted = states.iter().any(|w| {
        has(w, condition::EVICTED, "True", reason::PREEMPTED)
            && !is_true(w, condition::QUOTA_RESERVED)
            && is_true(w, condition::REQUEUED)
    });
    assert!(
        evicted,
        "low never showed Evicted=True/Preempted, QuotaReserved=False, Requeued=True: {:?}",
        states.iter().map(summary).collect::<Vec<_>>()
    );
    let described = suite.env.kubectl("manager", &["describe", "kwl", "low"]);
    assert!(described.contains("Preempted"), "{described}");

    // When the preemptor finishes, the victim is reserved again, dispatched afresh to every
    // worker, and runs wherever a worker admits it first (here the other worker).
    suite.finish_on(2, "high").await;
    suite
        .wait_wl("low", "reserved again after high finished", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("low").await;
    suite.env.admit(2, "low", Utc::now()).await.expect("admit");
    suite
        .wait_wl("low", "admitted through worker-2", |w| {
            is_true(w, condition::ADMITTED)
                && check_state(w, &check) == Some(CheckState::Ready)
                && status(w).cluster_name == Some(suite.env.cluster(2))
        })
        .await;
    suite
        .wait("low: no replica left on worker-1", || async {
            suite.env.replica(1, "low").await.is_none().then_some(())
        })
        .await;
    let (max, holders) = suite.history().max_reserved(&cq, &suite.sizes());
    assert!(
        max <= 2,
        "the manager reserved {max} CPUs in a 2-CPU queue: {holders:?}"
    );
    suite.done();
}

/// Worker-side eviction, Kueue's MultiKueue way: the check goes `Retry`, the manager
/// evicts its workload (reason `AdmissionCheck`, quota released, back in the queue), then
/// reserves it again and dispatches fresh replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_eviction_requeues_on_the_manager_and_redispatches() {
    let (suite, q) = Suite::started(|env| queue(env, "retry-2", "retry-lq", 2, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("job", q.lq, 1, 0).await;
    suite
        .wait_wl("job", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("job").await;
    suite.env.admit(1, "job", Utc::now()).await.expect("admit");
    suite
        .wait_wl("job", "admitted through worker-1", |w| {
            is_true(w, condition::ADMITTED)
                && check_state(w, &check) == Some(CheckState::Ready)
                && status(w).cluster_name == Some(suite.env.cluster(1))
        })
        .await;
    suite
        .wait("job: loser replica removed from worker-2", || async {
            suite.env.replica(2, "job").await.is_none().then_some(())
        })
        .await;
    let evicted_uid = suite.env.replica(1, "job").await.expect("winner").uid();

    suite.env.evict(1, "job", Utc::now()).await.expect("evict");
    let fresh = suite
        .wait(
            "job: reserved again and re-dispatched with fresh replicas",
            || async {
                let wl = suite.manager_wl("job").await?;
                if !reserved_awaiting_worker(&wl, &cq, &check) || status(&wl).cluster_name.is_some()
                {
                    return None;
                }
                let mut replicas = Vec::new();
                for i in 1..=WORKERS {
                    let replica = suite.env.replica(i, "job").await?;
                    if replica.uid() == evicted_uid || is_true(&replica, condition::EVICTED) {
                        return None;
                    }
                    replicas.push(replica);
                }
                Some((wl, replicas))
            },
        )
        .await;
    let (wl, _replicas) = fresh;
    suite.expect_kueue(
        !is_true(&wl, condition::EVICTED),
        format!(
            "Kueue resets Evicted once quota is reserved again: {}",
            summary(&wl)
        ),
    );

    // The steps in order: Retry, then the eviction with the quota released.
    let states = suite.history().manager_states("job");
    let retry = states
        .iter()
        .position(|w| check_state(w, &check) == Some(CheckState::Retry));
    let evicted = states.iter().position(|w| {
        has(w, condition::EVICTED, "True", "AdmissionCheck")
            && !is_true(w, condition::QUOTA_RESERVED)
            && is_true(w, condition::REQUEUED)
    });
    let trace: Vec<String> = states.iter().map(summary).collect();
    let described = suite.env.kubectl("manager", &["describe", "kwl", "job"]);
    suite.expect_kueue(
        described.contains("EvictedDueToAdmissionCheck"),
        format!(
            "no EvictedDueToAdmissionCheck event (Kueue's) on the manager workload:\n{described}"
        ),
    );
    assert!(retry.is_some(), "the check never went Retry: {trace:#?}");
    assert!(
        evicted.is_some(),
        "never seen Evicted=True/AdmissionCheck with quota released and Requeued=True: {trace:#?}"
    );
    assert!(
        retry <= evicted,
        "Retry must come before the eviction: {trace:#?}"
    );
    suite.done();
}

/// The issue's "non-MultiKueue admission checks are honoured the Kueue way": on a
/// ClusterQueue with the MultiKueue check and another one, the workload is dispatched once
/// it reserves quota, but `Admitted` waits until every check is Ready, the other one
/// included (its controller, played here, sets it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_admission_checks_hold_admitted_until_ready() {
    let other_name = |env: &Env| env.name("other-check");
    let (suite, q) = Suite::started(|env| {
        queue(
            env,
            "two-checks",
            "two-checks-lq",
            2,
            json!({"admissionChecksStrategy": {"admissionChecks": [{"name": env.check()}, {"name": other_name(env)}]}}),
        )
    })
    .await;
    let (cq, check, other) = (q.cq.clone(), suite.env.check(), other_name(&suite.env));
    // The other check and its controller's verdict that it is active.
    suite
        .env
        .install_docs(
            0,
            [
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                "metadata": {"name": other}, "spec": {"controllerName": "example.com/other"}}),
            ],
        )
        .await
        .expect("other check");
    let checks: Api<baton_crds::AdmissionCheck> = Api::all(suite.env.manager_client());
    let active = json!({"status": {"conditions": [{"type": "Active", "status": "True", "reason": "Active",
        "message": "set by the test", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    checks
        .patch_status(
            &other,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&active),
        )
        .await
        .expect("other check active");

    suite.submit("job", q.lq, 1, 0).await;
    suite
        .wait_wl("job", "reserved, both checks Pending", |w| {
            reserved_awaiting_worker(w, &cq, &check)
                && check_state(w, &other) == Some(CheckState::Pending)
        })
        .await;
    suite.wait_replicas_everywhere("job").await;
    suite.env.admit(1, "job", Utc::now()).await.expect("admit");
    let wl = suite
        .wait_wl("job", "MultiKueue check Ready through worker-1", |w| {
            check_state(w, &check) == Some(CheckState::Ready)
                && status(w).cluster_name == Some(suite.env.cluster(1))
        })
        .await;
    assert!(
        !is_true(&wl, condition::ADMITTED),
        "Admitted before the other check is Ready: {}",
        summary(&wl)
    );
    assert!(reserved_in(&wl, &cq), "{}", summary(&wl));

    // The other check's controller says Ready: now the workload is Admitted.
    let api = suite.env.manager_workloads();
    for _ in 0..20 {
        let mut wl = api.get("job").await.expect("job");
        let s = wl.status.get_or_insert_with(WorkloadStatus::default);
        let Some(entry) = s.admission_checks.iter_mut().find(|c| c.name == other) else {
            panic!("no state for {other}: {}", summary(&wl));
        };
        entry.state = CheckState::Ready;
        entry.message = "ready by the test".into();
        match api.replace_status("job", &PostParams::default(), &wl).await {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => panic!("set the other check Ready: {e}"),
        }
    }
    let wl = suite
        .wait_wl("job", "Admitted once every check is Ready", |w| {
            is_true(w, condition::ADMITTED)
        })
        .await;
    assert_eq!(check_state(&wl, &other), Some(CheckState::Ready));
    assert!(reserved_in(&wl, &cq), "{}", summary(&wl));
    suite.done();
}

/// A manager restart keeps the manager's reservations (they live in the Workloads' status):
/// the same workloads hold quota, the others still wait with no replica, a workload
/// submitted after the restart waits too, and freeing quota still dispatches the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_restart_keeps_the_reservations() {
    let (mut suite, q) =
        Suite::started(|env| queue(env, "restart-3", "restart-lq", 3, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    let all = names("r", 1..=5);
    for name in &all {
        suite.submit(name, q.lq, 1, 0).await;
    }
    let (reserved, waiting) = suite
        .wait_reserved_and_waiting(&all, (&cq, &check), (3, 2))
        .await;
    for name in &reserved {
        suite.wait_replicas_everywhere(name).await;
    }
    suite
        .env
        .admit(1, &reserved[0], Utc::now())
        .await
        .expect("admit");
    suite
        .wait_wl(&reserved[0], "admitted through worker-1", |w| {
            is_true(w, condition::ADMITTED)
        })
        .await;

    // Down: worker-2 admits another meanwhile. Up again: it catches up on that admission.
    if let Some(manager) = suite.manager.take() {
        manager.kill();
    }
    suite
        .env
        .admit(2, &reserved[1], Utc::now())
        .await
        .expect("admit while the manager is down");
    suite.start_manager();
    suite
        .wait_wl(
            &reserved[1],
            "admitted through worker-2 after the restart",
            |w| {
                is_true(w, condition::ADMITTED)
                    && status(w).cluster_name == Some(suite.env.cluster(2))
                    && reserved_in(w, &cq)
            },
        )
        .await;
    // A workload submitted now (behind the waiting ones) is judged against the restored
    // reservations: it waits.
    for name in &waiting {
        suite.after_creation_second_of(name).await;
    }
    suite.submit("late", q.lq, 1, 0).await;
    suite
        .wait_wl(
            "late",
            "waiting for quota after the restart",
            waiting_for_quota,
        )
        .await;
    let first = suite.manager_wl(&reserved[0]).await.expect("first");
    assert!(
        is_true(&first, condition::ADMITTED) && reserved_in(&first, &cq),
        "{}",
        summary(&first)
    );
    let third = suite.manager_wl(&reserved[2]).await.expect("third");
    assert!(
        reserved_awaiting_worker(&third, &cq, &check),
        "{}",
        summary(&third)
    );
    for name in &waiting {
        let wl = suite.manager_wl(name).await.expect("waiting");
        assert!(waiting_for_quota(&wl), "{name}: {}", summary(&wl));
    }
    let mut never = waiting.clone();
    never.push("late".into());
    suite.assert_never_dispatched(&never);

    // Freeing quota still works after the restart: a workload that waited since before it
    // goes next, not `late` (those submitted in the same second have no defined order, as
    // in Kueue).
    suite.report_finished(1, &reserved[0]).await;
    let next = suite
        .wait("a waiting workload reserved after a finish", || async {
            for name in &waiting {
                let wl = suite.manager_wl(name).await?;
                if reserved_awaiting_worker(&wl, &cq, &check) {
                    return Some(name.clone());
                }
            }
            None
        })
        .await;
    suite.wait_replicas_everywhere(&next).await;
    let (max, holders) = suite.history().max_reserved(&cq, &suite.sizes());
    assert!(
        max <= 3,
        "the manager reserved {max} CPUs in a 3-CPU queue: {holders:?}"
    );
    suite.done();
}

/// Flavors on the manager, the Kueue way: a ClusterQueue with two flavors of 2 CPUs each
/// fills the first, then the second (fungibility), and a third 2-CPU workload waits with
/// the reasons for both flavors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_queue_with_two_flavors_fills_them_in_order() {
    let flavors = |env: &Env| (env.name("flavor-a"), env.name("flavor-b"));
    let (suite, q) = Suite::started(|env| {
        let (a, b) = flavors(env);
        queue(
            env,
            "two-flavors",
            "two-flavors-lq",
            0,
            json!({"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": a, "resources": [{"name": "cpu", "nominalQuota": 2}]},
                {"name": b, "resources": [{"name": "cpu", "nominalQuota": 2}]}]}]}),
        )
    })
    .await;
    let (a, b) = flavors(&suite.env);
    suite
        .env
        .install_docs(
            0,
            [&a, &b].map(|f| {
                json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f}})
            }),
        )
        .await
        .expect("flavors");
    let (cq, check) = (q.cq.clone(), suite.env.check());
    let flavor_of = |wl: &Workload| {
        status(wl)
            .admission
            .and_then(|a| a.pod_set_assignments.first()?.flavors.get("cpu").cloned())
            .map(|f| f.0)
    };
    suite.submit("first", q.lq, 2, 0).await;
    let first = suite
        .wait_wl("first", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    assert_eq!(flavor_of(&first), Some(a.clone()), "{}", summary(&first));
    suite.submit("second", q.lq, 2, 0).await;
    let second = suite
        .wait_wl("second", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    assert_eq!(flavor_of(&second), Some(b.clone()), "{}", summary(&second));
    suite.wait_replicas_everywhere("second").await;
    suite.submit("third", q.lq, 2, 0).await;
    let third = suite
        .wait_wl("third", "waiting for quota", waiting_for_quota)
        .await;
    let message = cond(&third, condition::QUOTA_RESERVED)
        .map(|c| c.message)
        .unwrap_or_default();
    assert!(
        message.contains(&a) && message.contains(&b),
        "the reason names both flavors: {message}"
    );
    suite.assert_never_dispatched(&["third".into()]);
    suite.done();
}

/// Queueing strategy on the manager: with `StrictFIFO` a head that does not fit blocks the
/// smaller workloads behind it; with `BestEffortFIFO` (the default) they go around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queueing_strategy_applies_on_the_manager() {
    let (mut suite, queues) = Suite::new(|env| {
        vec![
            queue(
                env,
                "strict",
                "strict-lq",
                4,
                json!({"queueingStrategy": "StrictFIFO"}),
            ),
            queue(env, "best-effort", "best-effort-lq", 4, json!({})),
        ]
    })
    .await;
    suite.start_manager();
    let check = suite.env.check();
    for (prefix, q) in [("s", &queues[0]), ("b", &queues[1])] {
        let (head, big, small) = (
            format!("{prefix}-head"),
            format!("{prefix}-big"),
            format!("{prefix}-small"),
        );
        suite.submit(&head, q.lq, 3, 0).await;
        suite
            .wait_wl(&head, "reserved", |w| {
                reserved_awaiting_worker(w, &q.cq, &check)
            })
            .await;
        suite.submit(&big, q.lq, 2, 0).await;
        suite
            .wait_wl(&big, "waiting for quota", waiting_for_quota)
            .await;
        suite.after_creation_second_of(&big).await;

        suite.submit(&small, q.lq, 1, 0).await;
    }
    // Best effort: the small one goes around the big one.
    suite
        .wait_wl("b-small", "reserved around the big one", |w| {
            reserved_awaiting_worker(w, &queues[1].cq, &check)
        })
        .await;
    // Strict: the small one, submitted before all of the best-effort ones (so the manager
    // has seen it for several cycles by now), waits behind the big one with no replica.
    // Like Kueue, it has no QuotaReserved condition yet: it was never at the head.
    let small = suite.manager_wl("s-small").await.expect("s-small");
    assert!(
        status(&small).admission.is_none() && !is_true(&small, condition::QUOTA_RESERVED),
        "{}",
        summary(&small)
    );
    suite.assert_never_dispatched(&["s-small".into(), "s-big".into(), "b-big".into()]);
    // When the head finishes, the big one goes first, then the small one fits too.
    suite.finish_on(1, "s-head").await;
    for name in ["s-big", "s-small"] {
        suite
            .wait_wl(name, "reserved once the head finished", |w| {
                reserved_awaiting_worker(w, &queues[0].cq, &check)
            })
            .await;
    }
    suite.done();
}

/// A worker-side preemption through real worker shims: the worker running the replica
/// admits more important local work and evicts the replica; the manager evicts its
/// workload (check `Retry`, then `Evicted` by `AdmissionCheck`), reserves it again and
/// dispatches it afresh, and the other worker runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_preempted_by_a_worker_runs_on_another_worker() {
    let (mut suite, mut queues) =
        Suite::new(|env| vec![queue(env, "moves", "moves-lq", 4, json!({}))]).await;
    let q = queues.pop().expect("one queue");
    suite.start_worker_shims(4, q.lq).await;
    suite.start_manager();
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("job", q.lq, 2, 0).await;
    let running_on = |wl: &Workload| {
        (is_true(wl, condition::ADMITTED)
            && check_state(wl, &check) == Some(CheckState::Ready)
            && reserved_in(wl, &cq))
        .then(|| status(wl).cluster_name)
        .flatten()
    };
    let first = suite
        .wait("job admitted through a worker", || async {
            running_on(&suite.manager_wl("job").await?)
        })
        .await;
    let (busy, other) = if first == suite.env.cluster(1) {
        (1, 2)
    } else {
        (2, 1)
    };
    let old_uid = suite.env.replica(busy, "job").await.expect("replica").uid();

    // Local work of higher priority fills the busy worker: it preempts the replica.
    suite
        .env
        .submit_on_worker(busy, "local", 4, 1000, json!({}))
        .await
        .expect("local work");
    suite
        .wait("job admitted again, on the other worker", || async {
            let on = running_on(&suite.manager_wl("job").await?)?;
            (on == suite.env.cluster(other)).then_some(())
        })
        .await;
    let states = suite.history().manager_states("job");
    let trace: Vec<String> = states.iter().map(summary).collect();
    assert!(
        states
            .iter()
            .any(|w| check_state(w, &check) == Some(CheckState::Retry)),
        "the check never went Retry: {trace:#?}"
    );
    assert!(
        states.iter().any(|w| {
            has(w, condition::EVICTED, "True", "AdmissionCheck")
                && !is_true(w, condition::QUOTA_RESERVED)
        }),
        "never evicted on the manager with its quota released: {trace:#?}"
    );
    // The busy worker runs its local work; the evicted replica is gone from it (a fresh
    // one may have been dispatched there and removed as a loser).
    suite
        .wait("the evicted replica gone from the busy worker", || async {
            match suite.env.replica(busy, "job").await {
                Some(r) if r.uid() == old_uid => None,
                _ => Some(()),
            }
        })
        .await;
    let local = suite
        .env
        .worker_workload(busy, "local")
        .await
        .expect("local");
    assert!(is_admitted(&local), "{}", summary(&local));
    suite.done();
}

/// Deactivating a manager workload (`spec.active: false`) evicts it the Kueue way: its
/// replicas go, its manager quota is released, and the next workload is dispatched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivating_a_workload_releases_its_manager_quota() {
    let (suite, q) =
        Suite::started(|env| queue(env, "deactivate-2", "deactivate-lq", 2, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("a", q.lq, 2, 0).await;
    suite
        .wait_wl("a", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("a").await;
    suite.submit("b", q.lq, 2, 0).await;
    suite
        .wait_wl("b", "waiting for quota", waiting_for_quota)
        .await;

    let inactive = json!({"spec": {"active": false}});
    suite
        .env
        .manager_workloads()
        .patch(
            "a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&inactive),
        )
        .await
        .expect("deactivate a");
    suite.wait_no_replicas("a").await;
    suite
        .wait_wl("b", "reserved once a was deactivated", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("b").await;
    let a = suite
        .wait_wl("a", "no longer holding quota", |w| {
            !is_true(w, condition::QUOTA_RESERVED) && status(w).admission.is_none()
        })
        .await;
    // Kueue: Evicted=True with reason Deactivated.
    suite.expect_kueue(
        has(&a, condition::EVICTED, "True", "Deactivated"),
        format!("the deactivated workload's conditions: {}", summary(&a)),
    );
    suite.done();
}

/// Done-when (6), Kueue's counting: `reservingWorkloads` and `flavorsReservation` count
/// every workload holding quota on the manager; `admittedWorkloads` and `flavorsUsage`
/// (and `kubectl get cq`'s ADMITTED column) only those Admitted, every check Ready: none
/// until a worker admits one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_status_counts_admitted_only_once_a_worker_admits() {
    let (suite, q) = Suite::started(|env| queue(env, "counts-2", "counts-lq", 2, json!({}))).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    for name in ["c1", "c2", "c3"] {
        suite.submit(name, q.lq, 1, 0).await;
    }
    let (reserved, _) = suite
        .wait_reserved_and_waiting(&names("c", 1..=3), (&cq, &check), (2, 1))
        .await;
    suite
        .wait_cq(
            &cq,
            "1 pending, 2 reserving, 0 admitted; 2 CPUs reserved, 0 in use",
            |queue| {
                let s = queue.status.clone().unwrap_or_default();
                cq_counts(queue) == (1, 2, 0)
                    && cpu_usage(&s.flavors_reservation).0 == "2"
                    && cpu_usage(&s.flavors_usage).0 == "0"
            },
        )
        .await;
    suite
        .wait("LocalQueue: 1 pending, 2 reserving, 0 admitted", || async {
            let lq = suite.local_queue(q.lq).await?;
            (lq_counts(&lq) == (1, 2, 0)).then_some(())
        })
        .await;
    // NAME, STRATEGY, PENDING, ADMITTED (no cohort: no cell).
    let table = suite
        .env
        .kubectl("manager", &["get", "cq", &cq, "-o", "wide"]);
    let row: Vec<&str> = table
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        [cq.as_str(), "BestEffortFIFO", "1", "0"],
        "kubectl get cq:\n{table}"
    );

    suite
        .env
        .admit(1, &reserved[0], Utc::now())
        .await
        .expect("admit");
    suite
        .wait_cq(&cq, "1 admitted, 1 CPU in use", |queue| {
            let s = queue.status.clone().unwrap_or_default();
            cq_counts(queue) == (1, 2, 1)
                && cpu_usage(&s.flavors_reservation).0 == "2"
                && cpu_usage(&s.flavors_usage).0 == "1"
        })
        .await;
    suite
        .wait("LocalQueue: 1 admitted", || async {
            let lq = suite.local_queue(q.lq).await?;
            (lq_counts(&lq) == (1, 2, 1)).then_some(())
        })
        .await;
    suite.done();
}

/// Kueue's eviction resets `clusterName` (and `nominatedClusterNames`): a workload
/// preempted on the manager after it ran on a worker no longer names that worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_preemption_resets_the_victims_cluster_name() {
    let spec = json!({"preemption": {"withinClusterQueue": "LowerPriority"}});
    let (suite, q) = Suite::started(|env| queue(env, "reset-2", "reset-lq", 2, spec)).await;
    let (cq, check) = (q.cq.clone(), suite.env.check());
    suite.submit("low", q.lq, 2, 0).await;
    suite
        .wait_wl("low", "reserved", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    suite.wait_replicas_everywhere("low").await;
    suite.env.admit(1, "low", Utc::now()).await.expect("admit");
    suite
        .wait_wl("low", "admitted through worker-1", |w| {
            status(w).cluster_name == Some(suite.env.cluster(1))
        })
        .await;
    suite.submit("high", q.lq, 2, 100).await;
    suite
        .wait_wl("high", "reserved after preempting low", |w| {
            reserved_awaiting_worker(w, &cq, &check)
        })
        .await;
    let low = suite
        .wait_wl("low", "back in its queue", waiting_for_quota)
        .await;
    let s = status(&low);
    assert!(
        s.cluster_name.is_none() && s.nominated_cluster_names.is_empty(),
        "the preempted workload still names a worker: {}",
        summary(&low)
    );
    suite.done();
}
