use std::collections::{BTreeMap, HashMap};

use baton_crds::workload::{Admission, FlavorName, PodSetAssignment};
use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use serde_json::json;

use crate::jobs::template::PlacementError;
use crate::jobs::{FlavorPlacement, assigned_placements, inject, restore};

fn template(value: serde_json::Value) -> PodTemplateSpec {
    serde_json::from_value(value).unwrap()
}

fn toleration(key: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoSchedule".into()),
        ..Default::default()
    }
}

fn placement(labels: &[(&str, &str)], tolerations: &[&str]) -> FlavorPlacement {
    FlavorPlacement {
        node_labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        tolerations: tolerations.iter().map(|k| toleration(k)).collect(),
    }
}

fn user_template() -> PodTemplateSpec {
    template(json!({
        "metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}],
                 "nodeSelector": {"zone": "a"},
                 "tolerations": [{"key": "own", "operator": "Exists", "effect": "NoSchedule"}]}}))
}

#[test]
fn inject_merges_labels_keeping_existing_keys_and_appends_new_tolerations_once() {
    let flavors = [
        placement(&[("pool", "gpu"), ("zone", "b")], &["gpu", "own"]),
        placement(&[("pool", "other"), ("tier", "1")], &["gpu", "spot"]),
    ];
    let out = inject(&user_template(), &flavors);
    let spec = out.spec.as_ref().unwrap();
    let selector = spec.node_selector.as_ref().unwrap();
    assert_eq!(
        selector,
        &BTreeMap::from([
            ("pool".to_string(), "gpu".to_string()),
            ("tier".to_string(), "1".to_string()),
            ("zone".to_string(), "a".to_string()),
        ])
    );
    let keys: Vec<_> = spec
        .tolerations
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.key.clone().unwrap())
        .collect();
    assert_eq!(keys, ["own", "gpu", "spot"]);
    assert_eq!(out.metadata, user_template().metadata);
}

#[test]
fn inject_with_no_flavor_data_changes_nothing() {
    let bare = template(json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}));
    assert_eq!(inject(&bare, &[FlavorPlacement::default()]), bare);
    assert_eq!(inject(&user_template(), &[]), user_template());
}

#[test]
fn restore_undoes_inject_and_other_admission_changes() {
    let original = user_template();
    let mut changed = inject(&original, &[placement(&[("pool", "gpu")], &["gpu"])]);
    changed.metadata.as_mut().unwrap().annotations =
        Some(BTreeMap::from([("added".to_string(), "1".to_string())]));
    changed.spec.as_mut().unwrap().scheduling_gates =
        Some(vec![k8s_openapi::api::core::v1::PodSchedulingGate {
            name: "g".into(),
        }]);
    assert_ne!(changed, original);
    assert_eq!(restore(&changed, &original), original);
}

#[test]
fn restore_keeps_what_admission_does_not_touch_and_treats_absent_as_empty() {
    let original = user_template();
    let mut running = original.clone();
    // The image is not admission's business: it stays.
    running.spec.as_mut().unwrap().containers[0].image = Some("other".into());
    assert_eq!(restore(&running, &original), running);
    let bare = template(json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}));
    let mut empty_maps = bare.clone();
    empty_maps.spec.as_mut().unwrap().node_selector = Some(BTreeMap::new());
    empty_maps.spec.as_mut().unwrap().tolerations = Some(vec![]);
    assert_eq!(
        restore(&empty_maps, &bare),
        empty_maps,
        "absent and empty are the same"
    );
    assert_eq!(restore(&bare, &bare), bare);
}

fn admission(flavors: &[(&str, &str)]) -> Admission {
    Admission {
        cluster_queue: "cq".into(),
        pod_set_assignments: vec![PodSetAssignment {
            name: "main".into(),
            flavors: flavors
                .iter()
                .map(|(r, f)| (r.to_string(), FlavorName(f.to_string())))
                .collect(),
            ..Default::default()
        }],
    }
}

#[test]
fn assigned_placements_lists_each_assigned_flavor_once() {
    let flavors = HashMap::from([
        ("on-demand".to_string(), placement(&[("pool", "od")], &[])),
        (
            "spot".to_string(),
            placement(&[("pool", "spot")], &["spot"]),
        ),
    ]);
    let got = assigned_placements(
        &admission(&[
            ("cpu", "spot"),
            ("memory", "spot"),
            ("nvidia.com/gpu", "on-demand"),
        ]),
        "main",
        &flavors,
    )
    .unwrap();
    assert_eq!(
        got,
        vec![flavors["spot"].clone(), flavors["on-demand"].clone()]
    );
    assert_eq!(
        assigned_placements(&admission(&[("cpu", "gone")]), "main", &flavors),
        Err(PlacementError::MissingFlavor("gone".into(), "main".into()))
    );
    assert_eq!(
        assigned_placements(&admission(&[("cpu", "spot")]), "other", &flavors),
        Err(PlacementError::NoAssignment("other".into()))
    );
}

#[test]
fn restore_keeps_the_jobs_own_generated_selector_labels() {
    // A MultiKueue copy: the Workload's template carries the manager Job's uid.
    let original = template(json!({"metadata": {"labels": {"app": "a",
        "batch.kubernetes.io/controller-uid": "manager-uid", "controller-uid": "manager-uid"}}, "spec": {"containers": []}}));
    let copy = template(json!({"metadata": {"labels": {"app": "changed",
        "batch.kubernetes.io/controller-uid": "copy-uid", "controller-uid": "copy-uid"}}, "spec": {"containers": []}}));
    let restored = restore(&copy, &original);
    let labels = restored.metadata.unwrap().labels.unwrap();
    assert_eq!(labels["app"], "a");
    assert_eq!(labels["batch.kubernetes.io/controller-uid"], "copy-uid");
    assert_eq!(labels["controller-uid"], "copy-uid");
}
