//! Stand-ins for the controllers of the job kinds AI teams submit — JobSet
//! (`jobset.x-k8s.io/v1alpha2`), Kubeflow Trainer's TrainJob (`trainer.kubeflow.org/v1alpha1`)
//! and KubeRay's RayJob (`ray.io/v1`) — reduced to what Kueue and Baton observe of them
//! (e2e/README.md, "Job kinds: JobSet, TrainJob and RayJob"). They run only where the kinds'
//! CRDs are installed, and they stand on the job controller and kubelet model (`jobs`):
//!
//! - `jobset`: a JobSet's child Jobs (`<jobset>-<replicatedJob>-<index>`), suspended and
//!   resumed with it, and its `replicatedJobsStatus` and conditions. The Jobs' pods come
//!   from the job controller model, as on a real cluster.
//! - `trainjob`: the JobSet a TrainJob runs as, built from its (Cluster)TrainingRuntime,
//!   `trainer` and `runtimePatches`; suspension follows the TrainJob, conditions come back.
//! - `rayjob`: a RayJob's head and worker pods (created directly, without a RayCluster
//!   object), its `jobDeploymentStatus` and `jobStatus`.
//!
//! Each module holds the pure decisions (names, documents, counts, status); `controller` is
//! the background task that runs them over the store and writes their outcome through `ops`.
//! Objects whose `spec.managedBy` names another controller are left alone, as upstream does.

pub(crate) mod controller;
pub(crate) mod jobset;
pub(crate) mod rayjob;
pub(crate) mod trainjob;

use jiff::Timestamp;
use serde_json::{Value, json};

/// `spec.managedBy` of an object: `None` when unset.
pub fn managed_by(obj: &Value) -> Option<&str> {
    obj["spec"]["managedBy"].as_str()
}

/// Whether the controller called `own` manages `obj` (no `spec.managedBy`, or `own`).
pub fn manages(obj: &Value, own: &str) -> bool {
    managed_by(obj).is_none_or(|m| m == own)
}

/// The controller reference a child of `owner` (of `api_version`/`kind`) carries.
pub fn controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// Whether `child` is controlled by the object with `owner_uid`.
pub fn controlled_by(child: &Value, owner_uid: &str) -> bool {
    child["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["controller"] == true && r["uid"] == owner_uid)
}

fn str_field<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

/// `metadata.name`.
pub fn name_of(obj: &Value) -> &str {
    str_field(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace_of(obj: &Value) -> &str {
    str_field(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid_of(obj: &Value) -> &str {
    str_field(obj, "uid")
}

/// Whether `obj` is being deleted.
pub fn deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

/// Whether `obj` has a condition of `kind` with status `True`.
pub fn condition_true(obj: &Value, kind: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// `meta.SetStatusCondition` on a list of `metav1.Condition`s: a condition of that type is
/// replaced when its status, reason or message differ (its transition time moves only when
/// the status does); a missing one is added. Returns the new list.
pub fn set_condition(
    conditions: &Value,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> Value {
    let status = if status { "True" } else { "False" };
    let mut list = conditions.as_array().cloned().unwrap_or_default();
    let fresh = json!({"type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": rfc3339(now)});
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(c) if c["status"] == status => {
            c["reason"] = json!(reason);
            c["message"] = json!(message);
        }
        Some(c) => *c = fresh,
        None => list.push(fresh),
    }
    Value::Array(list)
}

/// `metav1.Time` as the API writes it (whole seconds).
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Copies the testbed's [`super::jobs::RUN_SECONDS_ANNOTATION`] from `from` onto `to`'s
/// annotations, if `from` has it: the pods of a kind's children then succeed after it.
pub fn carry_run_seconds(from: &Value, to: &mut Value) {
    let key = super::jobs::RUN_SECONDS_ANNOTATION;
    if let Some(v) = from["metadata"]["annotations"][key].as_str() {
        to["metadata"]["annotations"][key] = json!(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().expect("time")
    }

    #[test]
    fn managed_by_names_the_controller_or_nobody() {
        let own = "jobset.sigs.k8s.io/jobset-controller";
        assert!(manages(&json!({"spec": {}}), own));
        assert!(manages(&json!({"spec": {"managedBy": own}}), own));
        assert!(!manages(
            &json!({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}),
            own
        ));
    }

    #[test]
    fn conditions_change_in_place_and_move_their_time_only_on_a_new_status() {
        let later: Timestamp = "2026-01-01T00:01:00Z".parse().expect("time");
        let one = set_condition(&Value::Null, "Suspended", true, "A", "a", now());
        let same = set_condition(&one, "Suspended", true, "B", "b", later);
        assert_eq!(same[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(same[0]["reason"], "B");
        let flipped = set_condition(&same, "Suspended", false, "C", "c", later);
        assert_eq!(flipped[0]["lastTransitionTime"], "2026-01-01T00:01:00Z");
        assert_eq!(flipped.as_array().map(Vec::len), Some(1));
        let two = set_condition(&flipped, "Completed", true, "D", "d", later);
        assert_eq!(two.as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn owners_and_run_seconds_carry_over() {
        let owner = json!({"metadata": {"name": "o", "uid": "u",
            "annotations": {crate::server::controllers::jobs::RUN_SECONDS_ANNOTATION: "5"}}});
        let child = json!({"metadata": {"ownerReferences": [controller_ref(&owner, "x/v1", "X")]}});
        assert!(controlled_by(&child, "u"));
        assert!(!controlled_by(&child, "other"));
        let mut to = json!({"metadata": {}});
        carry_run_seconds(&owner, &mut to);
        assert_eq!(
            to["metadata"]["annotations"][crate::server::controllers::jobs::RUN_SECONDS_ANNOTATION],
            "5"
        );
    }
}
