use std::collections::BTreeMap;
use std::sync::Arc;

use baton_crds::cluster_queue::{ClusterQueuePreemption, FlavorFungibility, QueueingStrategy};
use baton_crds::{ClusterQueue, LocalQueue, Workload};

use super::*;

fn cq(name: &str) -> Arc<ClusterQueue> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": {}
        }))
        .unwrap(),
    )
}

fn lq(namespace: &str, name: &str, target: &str) -> Arc<LocalQueue> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": target}
        }))
        .unwrap(),
    )
}

fn wl(namespace: &str, name: &str, queue: Option<&str>) -> Arc<Workload> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1,
                "template": {"spec": {"containers": []}}}]}
        }))
        .unwrap(),
    )
}

fn model(name: &str, inactive: Option<QueueProblem>) -> QueueModel {
    QueueModel {
        name: name.into(),
        cohort: None,
        strategy: QueueingStrategy::BestEffortFIFO,
        groups: Vec::new(),
        fungibility: FlavorFungibility::default(),
        preemption: ClusterQueuePreemption::default(),
        inactive,
    }
}

fn only(entries: &[(&str, Option<Inactive>)]) -> Scope {
    Scope::Only(
        entries
            .iter()
            .map(|(n, i)| (n.to_string(), i.clone()))
            .collect::<BTreeMap<_, _>>(),
    )
}

fn names<T: kube::ResourceExt>(objects: &[Arc<T>]) -> Vec<String> {
    objects.iter().map(|o| o.name_any()).collect()
}

#[test]
fn everything_keeps_every_object() {
    let (cqs, lqs) = scoped_queues(
        &Scope::Everything,
        vec![cq("a"), cq("b")],
        vec![lq("ns", "q", "a"), lq("ns", "r", "missing")],
    );
    assert_eq!(names(&cqs), vec!["a", "b"]);
    assert_eq!(names(&lqs), vec!["q", "r"]);
    let kept = scoped_workloads(
        &Scope::Everything,
        &lqs,
        vec![wl("ns", "w", Some("nowhere")), wl("ns", "v", None)],
    );
    assert_eq!(
        names(&kept),
        vec!["w", "v"],
        "the worker reports bad queues itself"
    );
}

#[test]
fn only_keeps_the_governed_queues_their_local_queues_and_their_workloads() {
    let scope = only(&[("mk", None)]);
    let (cqs, lqs) = scoped_queues(
        &scope,
        vec![cq("mk"), cq("local")],
        vec![
            lq("ns", "to-mk", "mk"),
            lq("ns", "to-local", "local"),
            lq("other", "to-mk", "mk"),
        ],
    );
    assert_eq!(names(&cqs), vec!["mk"]);
    assert_eq!(
        lqs.iter()
            .map(|q| format!("{}/{}", q.namespace().unwrap_or_default(), q.name_any()))
            .collect::<Vec<_>>(),
        vec!["ns/to-mk", "other/to-mk"]
    );
    let kept = scoped_workloads(
        &scope,
        &lqs,
        vec![
            wl("ns", "in", Some("to-mk")),
            wl("ns", "local", Some("to-local")),
            wl("elsewhere", "wrong-namespace", Some("to-mk")),
            wl("ns", "unqueued", None),
        ],
    );
    assert_eq!(names(&kept), vec!["in"]);
}

#[test]
fn an_inactive_check_makes_its_queue_inactive_unless_it_already_is() {
    let why = Inactive {
        reason: "AdmissionCheckInactive".into(),
        message: "Can't admit new workloads: references inactive AdmissionCheck(s): mk".into(),
    };
    let scope = only(&[("a", Some(why.clone())), ("b", Some(why)), ("c", None)]);
    let own = QueueProblem {
        reason: "FlavorNotFound",
        message: "flavor f not found".into(),
    };
    let mut queues = vec![
        model("a", None),
        model("b", Some(own.clone())),
        model("c", None),
    ];
    mark_inactive(&scope, &mut queues);
    assert_eq!(
        queues[0].inactive,
        Some(QueueProblem {
            reason: "AdmissionCheckInactive",
            message: "references inactive AdmissionCheck(s): mk".into(),
        })
    );
    assert_eq!(queues[1].inactive, Some(own), "its own reason stands");
    assert_eq!(queues[2].inactive, None);
    let mut untouched = vec![model("a", None)];
    mark_inactive(&Scope::Everything, &mut untouched);
    assert_eq!(untouched[0].inactive, None);
}
