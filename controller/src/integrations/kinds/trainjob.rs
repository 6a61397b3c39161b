//! Kubeflow Trainer TrainJob (`trainer.kubeflow.org/v1alpha1`): it runs as a JobSet built
//! from its (Cluster)TrainingRuntime, so its pod sets are that JobSet's — one per replicated
//! job of the runtime's `spec.template` — except that the trainer step (the replicated job
//! labelled `trainer.kubeflow.org/trainjob-ancestor-step: trainer`, else the one named
//! `node`) runs `numNodes` pods (the TrainJob's `spec.trainer.numNodes`, else the runtime's
//! `spec.mlPolicy.numNodes`, else 1), its `node` container with the TrainJob's
//! `resourcesPerNode` when given. The TrainJob holds no pod template of its own: admission
//! writes the flavors' node selectors and tolerations as a `spec.runtimePatches` entry of
//! manager `kueue.x-k8s.io/manager` (one replicated job per pod set), as upstream Kueue does,
//! and eviction takes that entry out.
//! Finished on `Complete` or `Failed`; active while its JobSet has active Jobs
//! (`status.jobsStatus[].active`).

use serde_json::{Value, json};

use crate::integrations::kinds::jobset::JobSet;
use crate::integrations::shape::{
    Finished, RolePodSet, RuntimeRef, Shape, ShapeError, true_condition,
};

pub struct TrainJob;

const ANCESTOR_LABEL: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
/// The `runtimePatches` manager of the entry admission writes.
pub const PATCH_MANAGER: &str = "kueue.x-k8s.io/manager";

impl Shape for TrainJob {
    fn runtime(&self, job: &Value, namespace: &str) -> Option<RuntimeRef> {
        let r = job.pointer("/spec/runtimeRef")?;
        let name = r.get("name")?.as_str()?.to_string();
        let kind = r
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("ClusterTrainingRuntime");
        let (plural, namespace) = match kind {
            "TrainingRuntime" => ("trainingruntimes", Some(namespace.to_string())),
            _ => ("clustertrainingruntimes", None),
        };
        Some(RuntimeRef {
            api_version: "trainer.kubeflow.org/v1alpha1".into(),
            kind: kind.to_string(),
            plural: plural.into(),
            namespace,
            name,
        })
    }

    fn pod_sets(
        &self,
        job: &Value,
        runtime: Option<&Value>,
    ) -> Result<Vec<RolePodSet>, ShapeError> {
        let runtime = runtime
            .ok_or_else(|| ShapeError::new("spec.runtimeRef", "the runtime does not exist"))?;
        let jobset = serde_json::json!({"spec": runtime.pointer("/spec/template/spec").cloned().unwrap_or(Value::Null)});
        let mut sets = JobSet.pod_sets(&jobset, None).map_err(|e| {
            ShapeError::new(
                format!(
                    "runtime spec.template.{}",
                    e.field.trim_start_matches("spec.")
                ),
                e.problem,
            )
        })?;
        let nodes = match job
            .pointer("/spec/trainer/numNodes")
            .or_else(|| runtime.pointer("/spec/mlPolicy/numNodes"))
        {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_i64()
                .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
                .ok_or_else(|| {
                    ShapeError::new("spec.trainer.numNodes", "must be a positive integer")
                })? as i32,
        };
        let replicated = runtime
            .pointer("/spec/template/spec/replicatedJobs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let is_trainer = |i: usize| {
            replicated[i]
                .pointer(&format!(
                    "/template/metadata/labels/{}",
                    ANCESTOR_LABEL.replace('/', "~1")
                ))
                .and_then(Value::as_str)
                == Some("trainer")
        };
        let trainer = (0..sets.len())
            .find(|&i| is_trainer(i))
            .or_else(|| sets.iter().position(|s| s.name == "node"));
        let resources = job.pointer("/spec/trainer/resourcesPerNode").cloned();
        for (i, set) in sets.iter_mut().enumerate() {
            // Built from the runtime: nothing in the TrainJob to write into.
            set.path = None;
            if Some(i) != trainer {
                continue;
            }
            set.count = nodes;
            if let Some(resources) = &resources
                && let Some(containers) = set
                    .template
                    .pointer_mut("/spec/containers")
                    .and_then(Value::as_array_mut)
            {
                for c in containers
                    .iter_mut()
                    .filter(|c| c.get("name").and_then(Value::as_str) == Some("node"))
                {
                    c["resources"] = resources.clone();
                }
            }
        }
        Ok(sets)
    }

    fn templates_in_object(&self) -> bool {
        false
    }

    fn place(&self, job: &mut Value, placements: &[(String, Value)]) {
        self.unplace(job);
        let jobs: Vec<Value> = placements
            .iter()
            .map(|(name, template)| json!({"name": name, "template": {"spec": {"template": template}}}))
            .collect();
        let entry = json!({"manager": PATCH_MANAGER,
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}}});
        if let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) {
            let patches = spec.entry("runtimePatches").or_insert_with(|| json!([]));
            if let Some(list) = patches.as_array_mut() {
                list.push(entry);
            }
        }
    }

    fn unplace(&self, job: &mut Value) {
        if let Some(list) = job
            .pointer_mut("/spec/runtimePatches")
            .and_then(Value::as_array_mut)
        {
            list.retain(|p| p.get("manager").and_then(Value::as_str) != Some(PATCH_MANAGER));
        }
    }

    fn finished(&self, job: &Value) -> Option<Finished> {
        let (type_, message) = true_condition(job, &["Complete", "Failed"])?;
        Some(Finished {
            succeeded: type_ == "Complete",
            message,
        })
    }

    fn active(&self, job: &Value) -> bool {
        job.pointer("/status/jobsStatus")
            .and_then(Value::as_array)
            .is_some_and(|all| {
                all.iter()
                    .any(|s| s.get("active").and_then(Value::as_i64).unwrap_or(0) > 0)
            })
    }
}
