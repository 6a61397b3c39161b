use serde_json::json;

use super::job;
use crate::jobs::{
    is_managed_by_job_controller, is_managed_by_multikueue, prebuilt_workload_name, queue_name,
};

#[test]
fn queue_name_comes_from_the_label_and_empty_counts_as_none() {
    assert_eq!(queue_name(&job(json!({}))), Some("lq"));
    let unlabelled = job(json!({"metadata": {"labels": null}}));
    assert_eq!(queue_name(&unlabelled), None);
    let empty = job(json!({"metadata": {"labels": {"kueue.x-k8s.io/queue-name": ""}}}));
    assert_eq!(queue_name(&empty), None);
}

#[test]
fn prebuilt_name_is_read_from_the_label_first_then_the_annotation() {
    assert_eq!(prebuilt_workload_name(&job(json!({}))), None);
    let annotated = job(json!({"metadata": {"annotations":
        {"kueue.x-k8s.io/prebuilt-workload-name": "from-annotation"}}}));
    assert_eq!(prebuilt_workload_name(&annotated), Some("from-annotation"));
    let both = job(json!({"metadata": {
        "labels": {"kueue.x-k8s.io/prebuilt-workload-name": "from-label"},
        "annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "from-annotation"}}}));
    assert_eq!(prebuilt_workload_name(&both), Some("from-label"));
    let empty_label = job(json!({"metadata": {
        "labels": {"kueue.x-k8s.io/prebuilt-workload-name": ""},
        "annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "from-annotation"}}}));
    assert_eq!(
        prebuilt_workload_name(&empty_label),
        Some("from-annotation")
    );
}

#[test]
fn managed_by_decides_who_runs_the_job() {
    let plain = job(json!({}));
    assert!(!is_managed_by_multikueue(&plain));
    assert!(is_managed_by_job_controller(&plain));
    let multikueue = job(json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}));
    assert!(is_managed_by_multikueue(&multikueue));
    assert!(!is_managed_by_job_controller(&multikueue));
    let builtin = job(json!({"spec": {"managedBy": "kubernetes.io/job-controller"}}));
    assert!(is_managed_by_job_controller(&builtin));
    assert!(!is_managed_by_multikueue(&builtin));
    let other = job(json!({"spec": {"managedBy": "example.com/other"}}));
    assert!(!is_managed_by_job_controller(&other));
    assert!(!is_managed_by_multikueue(&other));
}
