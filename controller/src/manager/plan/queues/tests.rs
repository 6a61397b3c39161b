use std::sync::Arc;

use baton_crds::conditions::find_condition;
use chrono::TimeZone;
use serde_json::json;

use super::*;

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Arc<T> {
    Arc::new(serde_json::from_value(value).unwrap())
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 1, 0).unwrap()
}

fn multikueue_check(name: &str, config: &str) -> Arc<AdmissionCheck> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": name, "generation": 3},
        "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": {
            "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config}}}),
    )
}

fn other_check(name: &str) -> Arc<AdmissionCheck> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": name}, "spec": {"controllerName": "example.com/provisioning"}}),
    )
}

fn config(name: &str, clusters: &[&str]) -> Arc<MultiKueueConfig> {
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
        "metadata": {"name": name}, "spec": {"clusters": clusters}}),
    )
}

fn cluster(name: &str, active: Option<bool>) -> Arc<MultiKueueCluster> {
    let mut value = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
        "metadata": {"name": name}, "spec": {"clusterSource": {"kubeConfig": {
            "locationType": "Secret", "location": name}}}});
    if let Some(active) = active {
        value["status"] = json!({"conditions": [{"type": "Active",
            "status": if active { "True" } else { "False" }, "reason": "r", "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    }
    object(value)
}

fn cluster_queue(name: &str, checks: &[&str]) -> Arc<ClusterQueue> {
    let rules: Vec<_> = checks.iter().map(|c| json!({"name": c})).collect();
    object(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name}, "spec": {"namespaceSelector": {}, "resourceGroups": [],
            "admissionChecksStrategy": {"admissionChecks": rules}}}),
    )
}

struct World {
    checks: Vec<Arc<AdmissionCheck>>,
    configs: Vec<Arc<MultiKueueConfig>>,
    clusters: Vec<Arc<MultiKueueCluster>>,
    cluster_queues: Vec<Arc<ClusterQueue>>,
}

impl World {
    /// One MultiKueue check `mk` over config `workers` = [w1, w2], both Active.
    fn new() -> Self {
        World {
            checks: vec![multikueue_check("mk", "workers")],
            configs: vec![config("workers", &["w1", "w2"])],
            clusters: vec![cluster("w1", Some(true)), cluster("w2", Some(true))],
            cluster_queues: vec![cluster_queue("cq", &["mk"])],
        }
    }

    fn objects(&self) -> QueueObjects<'_> {
        QueueObjects {
            checks: &self.checks,
            configs: &self.configs,
            clusters: &self.clusters,
            cluster_queues: &self.cluster_queues,
        }
    }

    fn check(&self, name: &str) -> CheckActivity {
        check_activity(&self.objects())
            .remove(name)
            .unwrap_or_else(|| panic!("no activity for {name}"))
    }

    fn queues(&self) -> BTreeMap<String, Option<Inactive>> {
        let activity = check_activity(&self.objects());
        queue_activity(&self.cluster_queues, &activity)
    }
}

#[test]
fn a_check_whose_clusters_are_all_active_is_active() {
    let a = World::new().check("mk");
    assert_eq!((a.active, a.reason), (true, "Active"));
}

#[test]
fn some_unusable_clusters_keep_the_check_active_and_name_them() {
    let mut w = World::new();
    w.configs = vec![config("workers", &["w1", "w2", "w3"])];
    w.clusters[1] = cluster("w2", Some(false));
    let a = w.check("mk");
    assert_eq!((a.active, a.reason), (true, "SomeActiveClusters"));
    assert_eq!(a.message, "Missing clusters: [w3], Inactive clusters: [w2]");
}

#[test]
fn no_usable_cluster_makes_the_check_inactive() {
    let mut w = World::new();
    w.clusters = vec![cluster("w1", None), cluster("w2", Some(false))];
    let a = w.check("mk");
    assert_eq!((a.active, a.reason), (false, "NoUsableClusters"));
    assert_eq!(a.message, "Inactive clusters: [w1 w2]");
}

#[test]
fn bad_parameters_make_the_check_inactive_and_say_which_field() {
    let mut w = World::new();
    w.configs.clear();
    let a = w.check("mk");
    assert_eq!((a.active, a.reason), (false, "BadConfig"));
    assert!(
        a.message.contains("MultiKueueConfig \"workers\" not found"),
        "{}",
        a.message
    );

    let mut w = World::new();
    w.checks = vec![object(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck", "metadata": {"name": "mk"},
        "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}))];
    let a = w.check("mk");
    assert_eq!(a.reason, "BadConfig");
    assert!(
        a.message.contains("spec.parameters is not set"),
        "{}",
        a.message
    );

    let mut w = World::new();
    w.checks = vec![object(json!({"apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck", "metadata": {"name": "mk"},
        "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": {
            "apiGroup": "example.com", "kind": "Other", "name": "x"}}}))];
    let a = w.check("mk");
    assert!(
        a.message.contains("names a example.com/Other"),
        "{}",
        a.message
    );
}

#[test]
fn checks_of_other_controllers_are_left_alone() {
    let mut w = World::new();
    w.checks.push(other_check("provisioning"));
    let all = check_activity(&w.objects());
    assert_eq!(all.keys().collect::<Vec<_>>(), vec!["mk"]);
}

#[test]
fn check_status_is_written_only_when_its_condition_changes() {
    let w = World::new();
    let activity = check_activity(&w.objects());
    let first = check_statuses(&w.checks, &activity, now());
    assert_eq!(first.len(), 1);
    let condition = find_condition(&first[0].1.conditions, condition::ACTIVE).unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("True", "Active")
    );
    assert_eq!(condition.observed_generation, Some(3));

    let mut stored = serde_json::to_value(w.checks[0].as_ref()).unwrap();
    stored["status"] = serde_json::to_value(&first[0].1).unwrap();
    let stored: Vec<Arc<AdmissionCheck>> = vec![object(stored)];
    assert!(check_statuses(&stored, &activity, now()).is_empty());
}

#[test]
fn cluster_queues_naming_a_multikueue_check_are_the_managers() {
    let mut w = World::new();
    w.checks.push(other_check("provisioning"));
    w.cluster_queues = vec![
        cluster_queue("cq", &["mk"]),
        cluster_queue("both", &["mk", "provisioning"]),
        cluster_queue("local", &["provisioning"]),
        cluster_queue("plain", &[]),
    ];
    let queues = w.queues();
    assert_eq!(queues.keys().collect::<Vec<_>>(), vec!["both", "cq"]);
    assert!(queues.values().all(Option::is_none));
}

#[test]
fn an_inactive_multikueue_check_makes_the_queue_inactive_other_checks_do_not() {
    let mut w = World::new();
    w.cluster_queues = vec![cluster_queue("cq", &["mk", "gone"])];
    assert_eq!(w.queues().remove("cq"), Some(None));

    let mut w = World::new();
    w.clusters.clear();
    let why = w.queues().remove("cq").flatten().unwrap();
    assert_eq!(why.reason, "AdmissionCheckInactive");
    assert!(
        why.message.ends_with("AdmissionCheck(s): mk"),
        "{}",
        why.message
    );
}
