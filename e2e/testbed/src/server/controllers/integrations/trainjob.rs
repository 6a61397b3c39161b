//! Kubeflow Trainer's decisions for one TrainJob (kubeflow/trainer v2), pure with `now`
//! passed in: the JobSet it runs as, and the status it reports.
//!
//! As upstream: the JobSet has the TrainJob's name and namespace, is owned by it, and is the
//! runtime's (`spec.runtimeRef`: a ClusterTrainingRuntime by default, or a TrainingRuntime in
//! the TrainJob's namespace) JobSet template, where the trainer's replicated job (labelled
//! `trainer.kubeflow.org/trainjob-ancestor-step: trainer`) runs `numNodes` pods at once
//! (`spec.trainer.numNodes`, else the runtime's `mlPolicy.numNodes`, else 1: its
//! `parallelism` and `completions`) with the trainer's image, command, args, env and
//! `resourcesPerNode` in its `node` container; `spec.runtimePatches` (how Kueue injects its
//! flavors' node selectors and tolerations) patch the replicated jobs' templates;
//! `spec.suspend` is the JobSet's. The TrainJob's `Suspended`, `Complete` and `Failed`
//! conditions and its `jobsStatus` follow the JobSet's. Not imitated: initializers (dataset
//! and model steps), ML policies' environment (torchrun, MPI host files), containers'
//! patches, the `Created` condition, `trainerStatus`.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{carry_run_seconds, condition_true, controller_ref, jobset, name_of, namespace_of};

pub const GROUP: &str = "trainer.kubeflow.org";
pub const VERSION: &str = "v1alpha1";
pub const PLURAL: &str = "trainjobs";
pub const KIND: &str = "TrainJob";
pub const CLUSTER_RUNTIMES: &str = "clustertrainingruntimes";
pub const RUNTIMES: &str = "trainingruntimes";
/// `spec.managedBy` of TrainJobs this controller manages (as is one without it).
pub const CONTROLLER_NAME: &str = "trainer.kubeflow.org/trainjob-controller";
/// The label that marks a runtime's replicated jobs with their step.
pub const ANCESTOR_LABEL: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
pub const TRAINER_STEP: &str = "trainer";
/// The trainer's container in the runtime's pod template.
pub const NODE_CONTAINER: &str = "node";

pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

/// Which runtime a TrainJob names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeRef {
    /// A ClusterTrainingRuntime (cluster-scoped).
    Cluster(String),
    /// A TrainingRuntime in the TrainJob's namespace.
    Namespaced(String),
}

/// `spec.runtimeRef` (kind defaults to ClusterTrainingRuntime).
pub fn runtime_ref(trainjob: &Value) -> Option<RuntimeRef> {
    let r = &trainjob["spec"]["runtimeRef"];
    let name = r["name"].as_str()?.to_string();
    match r["kind"].as_str().unwrap_or("ClusterTrainingRuntime") {
        "TrainingRuntime" => Some(RuntimeRef::Namespaced(name)),
        _ => Some(RuntimeRef::Cluster(name)),
    }
}

/// The number of training nodes: the TrainJob's, else the runtime's, else 1.
pub fn num_nodes(trainjob: &Value, runtime: &Value) -> i64 {
    trainjob["spec"]["trainer"]["numNodes"]
        .as_i64()
        .or_else(|| runtime["spec"]["mlPolicy"]["numNodes"].as_i64())
        .unwrap_or(1)
        .max(0)
}

fn is_trainer(rj: &Value) -> bool {
    rj["template"]["metadata"]["labels"][ANCESTOR_LABEL] == TRAINER_STEP
}

/// Puts the TrainJob's trainer settings into a trainer replicated job.
fn apply_trainer(rj: &mut Value, trainer: &Value, nodes: i64) {
    let spec = &mut rj["template"]["spec"];
    spec["parallelism"] = json!(nodes);
    spec["completions"] = json!(nodes);
    let Some(containers) = spec["template"]["spec"]["containers"].as_array_mut() else {
        return;
    };
    for c in containers
        .iter_mut()
        .filter(|c| c["name"] == NODE_CONTAINER)
    {
        for (from, to) in [
            ("image", "image"),
            ("command", "command"),
            ("args", "args"),
            ("env", "env"),
            ("resourcesPerNode", "resources"),
        ] {
            if !trainer[from].is_null() {
                c[to] = trainer[from].clone();
            }
        }
    }
}

fn merge_map(target: &mut Value, extra: &Value) {
    let Some(extra) = extra.as_object() else {
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Some(map) = target.as_object_mut() {
        map.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

fn append_list(target: &mut Value, extra: &Value) {
    let Some(extra) = extra.as_array() else {
        return;
    };
    if !target.is_array() {
        *target = json!([]);
    }
    if let Some(list) = target.as_array_mut() {
        list.extend(extra.iter().cloned());
    }
}

/// Applies one runtime patch's per-replicated-job part to `rj` (when it names `rj`).
fn apply_patch(rj: &mut Value, patch: &Value) {
    let t = &patch["template"];
    merge_map(
        &mut rj["template"]["metadata"]["labels"],
        &t["metadata"]["labels"],
    );
    merge_map(
        &mut rj["template"]["metadata"]["annotations"],
        &t["metadata"]["annotations"],
    );
    let (pod, from) = (
        &mut rj["template"]["spec"]["template"],
        &t["spec"]["template"],
    );
    merge_map(&mut pod["metadata"]["labels"], &from["metadata"]["labels"]);
    merge_map(
        &mut pod["metadata"]["annotations"],
        &from["metadata"]["annotations"],
    );
    merge_map(
        &mut pod["spec"]["nodeSelector"],
        &from["spec"]["nodeSelector"],
    );
    append_list(
        &mut pod["spec"]["tolerations"],
        &from["spec"]["tolerations"],
    );
    append_list(
        &mut pod["spec"]["schedulingGates"],
        &from["spec"]["schedulingGates"],
    );
    for field in ["serviceAccountName", "terminationGracePeriodSeconds"] {
        if !from["spec"][field].is_null() {
            pod["spec"][field] = from["spec"][field].clone();
        }
    }
}

/// The JobSet `trainjob` runs as, from `runtime`.
pub fn jobset_for(trainjob: &Value, runtime: &Value) -> Value {
    let template = &runtime["spec"]["template"];
    let mut spec = template["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    let nodes = num_nodes(trainjob, runtime);
    let patches = trainjob["spec"]["runtimePatches"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut labels = template["metadata"]["labels"].clone();
    let mut annotations = template["metadata"]["annotations"].clone();
    if let Some(rjs) = spec["replicatedJobs"].as_array_mut() {
        for rj in rjs.iter_mut() {
            if is_trainer(rj) {
                apply_trainer(rj, &trainjob["spec"]["trainer"], nodes);
            }
            for patch in &patches {
                let job_patches =
                    &patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"];
                for p in job_patches.as_array().into_iter().flatten() {
                    if p["name"] == rj["name"] {
                        apply_patch(rj, p);
                    }
                }
            }
        }
    }
    for patch in &patches {
        let meta = &patch["trainingRuntimeSpec"]["template"]["metadata"];
        merge_map(&mut labels, &meta["labels"]);
        merge_map(&mut annotations, &meta["annotations"]);
    }
    spec["suspend"] = json!(trainjob["spec"]["suspend"] == true);
    if let Some(s) = spec.as_object_mut() {
        s.remove("managedBy");
    }
    let mut out = json!({
        "apiVersion": jobset::api_version(),
        "kind": jobset::KIND,
        "metadata": {
            "name": name_of(trainjob),
            "namespace": namespace_of(trainjob),
            "ownerReferences": [controller_ref(trainjob, &api_version(), KIND)],
        },
        "spec": spec,
    });
    if labels.is_object() {
        out["metadata"]["labels"] = labels;
    }
    if annotations.is_object() {
        out["metadata"]["annotations"] = annotations;
    }
    carry_run_seconds(trainjob, &mut out);
    out
}

/// The parts of a JobSet a TrainJob keeps in step: `suspend`, and each replicated job's pod
/// scheduling directives and labels.
fn steered(js: &Value) -> Value {
    let jobs: Vec<Value> = js["spec"]["replicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|rj| {
            let pod = &rj["template"]["spec"]["template"];
            json!([
                rj["name"],
                pod["metadata"]["labels"],
                pod["metadata"]["annotations"],
                pod["spec"]["nodeSelector"],
                pod["spec"]["tolerations"],
                pod["spec"]["schedulingGates"]
            ])
        })
        .collect();
    json!([js["spec"]["suspend"] == true, jobs])
}

/// What to do for one TrainJob.
#[derive(Debug, Default, Clone, PartialEq)]
pub enum JobSetWrite {
    #[default]
    Nothing,
    Create(Value),
    /// Replace the JobSet's `spec.suspend` and `spec.replicatedJobs` with this JobSet's.
    Update(Value),
}

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    pub jobset: JobSetWrite,
    /// The TrainJob's new `status`, when it changes.
    pub status: Option<Value>,
}

/// Kubeflow Trainer's sync of `trainjob`, with its runtime (if found) and its JobSet (the
/// one it controls, if any).
pub fn sync(
    trainjob: &Value,
    runtime: Option<&Value>,
    jobset: Option<&Value>,
    now: Timestamp,
) -> Plan {
    let mut plan = Plan::default();
    let finished = condition_true(trainjob, "Complete") || condition_true(trainjob, "Failed");
    if !super::manages(trainjob, CONTROLLER_NAME) || super::deleting(trainjob) || finished {
        return plan;
    }
    let Some(runtime) = runtime else {
        return plan;
    };
    let desired = jobset_for(trainjob, runtime);
    plan.jobset = match jobset {
        None => JobSetWrite::Create(desired),
        Some(current) if steered(current) != steered(&desired) => JobSetWrite::Update(desired),
        Some(_) => JobSetWrite::Nothing,
    };
    let status = status(trainjob, jobset, now);
    if status != trainjob["status"] {
        plan.status = Some(status);
    }
    plan
}

/// The status `trainjob` should have, given its JobSet.
pub fn status(trainjob: &Value, jobset: Option<&Value>, now: Timestamp) -> Value {
    let mut status = if trainjob["status"].is_object() {
        trainjob["status"].clone()
    } else {
        json!({})
    };
    let mut conditions = status["conditions"].take();
    let had_suspended = conditions
        .as_array()
        .is_some_and(|l| l.iter().any(|c| c["type"] == "Suspended"));
    if trainjob["spec"]["suspend"] == true {
        conditions = super::set_condition(
            &conditions,
            "Suspended",
            true,
            "Suspended",
            "TrainJob is suspended",
            now,
        );
    } else if had_suspended {
        conditions = super::set_condition(
            &conditions,
            "Suspended",
            false,
            "Resumed",
            "TrainJob is resumed",
            now,
        );
    }
    if let Some(js) = jobset {
        for (from, to) in [("Completed", "Complete"), ("Failed", "Failed")] {
            let found = js["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == from && c["status"] == "True");
            if let Some(c) = found {
                let reason = c["reason"].as_str().unwrap_or(from);
                let message = c["message"].as_str().unwrap_or("");
                conditions = super::set_condition(&conditions, to, true, reason, message, now);
            }
        }
        if let Some(list) = js["status"]["replicatedJobsStatus"].as_array() {
            status["jobsStatus"] = Value::Array(list.clone());
        }
    }
    if !conditions.is_null() {
        status["conditions"] = conditions;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:10Z".parse().expect("time")
    }

    /// Kubeflow's `torch-distributed` runtime (manifests/base/runtimes).
    fn runtime() -> Value {
        json!({"metadata": {"name": "torch-distributed"}, "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                "metadata": {"labels": {ANCESTOR_LABEL: TRAINER_STEP}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node", "image": "pytorch/pytorch"}]}}}}}]}}}})
    }

    /// Kubeflow's Kueue example (examples/yaml/03-kueue-integration.yaml), with a uid.
    fn trainjob(suspend: bool) -> Value {
        json!({"metadata": {"name": "kueue-example", "namespace": "ns", "uid": "t1"},
            "spec": {"suspend": suspend,
                "runtimeRef": {"apiGroup": GROUP, "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
                "trainer": {"numNodes": 3, "image": "python:3.11-slim", "command": ["python3"],
                    "resourcesPerNode": {"requests": {"cpu": "2"}}}}})
    }

    #[test]
    fn the_runtime_reference_defaults_to_a_cluster_runtime() {
        assert_eq!(
            runtime_ref(&trainjob(true)),
            Some(RuntimeRef::Cluster("torch-distributed".into()))
        );
        let ns = json!({"spec": {"runtimeRef": {"kind": "TrainingRuntime", "name": "r"}}});
        assert_eq!(runtime_ref(&ns), Some(RuntimeRef::Namespaced("r".into())));
        let bare = json!({"spec": {"runtimeRef": {"name": "r"}}});
        assert_eq!(runtime_ref(&bare), Some(RuntimeRef::Cluster("r".into())));
        assert_eq!(runtime_ref(&json!({})), None);
    }

    #[test]
    fn the_jobset_runs_num_nodes_pods_of_the_trainer_in_the_runtime_template() {
        let js = jobset_for(&trainjob(true), &runtime());
        assert_eq!(name_of(&js), "kueue-example");
        assert_eq!(js["kind"], "JobSet");
        assert_eq!(js["spec"]["suspend"], true);
        assert_eq!(js["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
        let rj = &js["spec"]["replicatedJobs"][0];
        assert_eq!(rj["template"]["spec"]["parallelism"], 3);
        assert_eq!(rj["template"]["spec"]["completions"], 3);
        let c = &rj["template"]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["image"], "python:3.11-slim");
        assert_eq!(c["resources"]["requests"]["cpu"], "2");
        assert_eq!(jobset::replicated_jobs(&js)[0].replicas, 1);
        let mut without = trainjob(true);
        without["spec"]["trainer"] = json!({});
        assert_eq!(num_nodes(&without, &runtime()), 1);
    }

    #[test]
    fn runtime_patches_carry_node_selectors_and_tolerations_to_the_named_job() {
        let mut tj = trainjob(false);
        tj["spec"]["runtimePatches"] = json!([{"manager": "kueue.x-k8s.io/manager",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node",
                "template": {"spec": {"template": {"metadata": {"labels": {"l": "v"}}, "spec": {
                    "nodeSelector": {"flavor": "gpu"},
                    "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}}},
                {"name": "other", "template": {"spec": {"template": {"spec": {"nodeSelector": {"x": "y"}}}}}}]}}}}]);
        let js = jobset_for(&tj, &runtime());
        let pod = &js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
        assert_eq!(pod["spec"]["nodeSelector"], json!({"flavor": "gpu"}));
        assert_eq!(pod["spec"]["tolerations"][0]["key"], "gpu");
        assert_eq!(pod["metadata"]["labels"]["l"], "v");
        assert_eq!(js["spec"]["suspend"], false);
    }

    #[test]
    fn the_jobset_is_created_then_follows_suspension() {
        let tj = trainjob(true);
        let plan = sync(&tj, Some(&runtime()), None, now());
        let JobSetWrite::Create(js) = &plan.jobset else {
            panic!("expected a create, got {:?}", plan.jobset);
        };
        assert_eq!(
            plan.status.as_ref().expect("status")["conditions"][0]["reason"],
            "Suspended"
        );
        assert_eq!(
            sync(&tj, Some(&runtime()), Some(js), now()).jobset,
            JobSetWrite::Nothing
        );
        let resumed = trainjob(false);
        let JobSetWrite::Update(u) = sync(&resumed, Some(&runtime()), Some(js), now()).jobset
        else {
            panic!("expected an update");
        };
        assert_eq!(u["spec"]["suspend"], false);
        assert_eq!(
            sync(&resumed, None, None, now()),
            Plan::default(),
            "no runtime, nothing"
        );
    }

    #[test]
    fn status_mirrors_the_jobset() {
        let js = json!({"status": {"conditions": [{"type": "Completed", "status": "True",
            "reason": "AllJobsCompleted", "message": "jobset completed successfully"}],
            "replicatedJobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0,
                "active": 0, "suspended": 0}]}});
        let s = status(&trainjob(false), Some(&js), now());
        assert_eq!(s["conditions"][0]["type"], "Complete");
        assert_eq!(s["conditions"][0]["reason"], "AllJobsCompleted");
        assert_eq!(s["jobsStatus"][0]["succeeded"], 1);
        let mut done = trainjob(false);
        done["status"] = s;
        assert_eq!(
            sync(&done, Some(&runtime()), Some(&js), now()),
            Plan::default()
        );
    }

    #[test]
    fn trainjobs_of_other_controllers_are_left_alone() {
        let mut tj = trainjob(false);
        tj["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        assert_eq!(sync(&tj, Some(&runtime()), None, now()), Plan::default());
    }
}
