use std::collections::BTreeMap;

use kube::core::DynamicObject;
use serde_json::json;

use super::*;
use crate::manager::plan::job_adapter::{Observation, decide};

fn manager_object(kind: &Kind) -> DynamicObject {
    let mut obj = DynamicObject::new("train", &kind.api_resource()).within("team");
    obj.metadata.uid = Some("u1".into());
    obj.metadata.labels = Some(BTreeMap::from([(
        "kueue.x-k8s.io/queue-name".to_string(),
        "q".to_string(),
    )]));
    obj.data = json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": false, "replicatedJobs": []},
        "status": {"conditions": []}});
    obj
}

#[test]
fn the_copy_drops_managed_by_binds_to_the_replica_and_starts_suspended_for_built_in_kinds() {
    let copy = build_remote_object(
        &Kind::JobSet,
        &manager_object(&Kind::JobSet),
        "jobset-train-1",
        "multikueue",
    );
    assert_eq!(copy.data.pointer("/spec/managedBy"), None);
    assert_eq!(copy.data.pointer("/spec/suspend"), Some(&json!(true)));
    assert_eq!(copy.data.get("status"), None);
    assert!(is_copy_of(&copy, "jobset-train-1", "multikueue"));
    assert!(!is_copy_of(&copy, "jobset-train-1", "other"));
    assert_eq!(copy.types.as_ref().map(|t| t.kind.as_str()), Some("JobSet"));
    let ext = Kind::external("Thing.v1.example.com").expect("ext");
    let copy = build_remote_object(&ext, &manager_object(&ext), "w", "multikueue");
    assert_eq!(
        copy.data.pointer("/spec/suspend"),
        Some(&json!(false)),
        "external spec as it is"
    );
}

#[test]
fn the_status_is_mirrored_whole_and_external_kinds_keep_their_own_suspend() {
    let kind = Kind::external("Thing.v1.example.com").expect("ext");
    let manager = KindObject::new(&kind, manager_object(&kind));
    let mut remote = manager.clone();
    remote.object.data["status"] = json!({"phase": "Running", "anything": [1, 2]});
    let copies = BTreeMap::from([("w1".to_string(), remote)]);
    let mut wl = baton_crds::Workload::new("thing-train-1", Default::default());
    wl.status = Some(
        serde_json::from_value(json!({"clusterName": "w1", "conditions": []})).expect("status"),
    );
    let plan = decide(&Observation {
        job: &manager,
        workload: Some(&wl),
        winner_replica: None,
        copies: &copies,
        winner_jobs_known: true,
        label_class_value: None,
    });
    assert_eq!(
        plan.status,
        Some(json!({"phase": "Running", "anything": [1, 2]}))
    );
    assert_eq!(
        plan.suspend, None,
        "not admitted, but an external kind's suspend is not ours"
    );
    let builtin = KindObject::new(&Kind::JobSet, manager_object(&Kind::JobSet));
    assert_eq!(builtin.suspended(), Some(false));
}
