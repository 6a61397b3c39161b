//! RayJob (`ray.io/v1`), as upstream Kueue's RayJob integration: a pod set `head` of one pod
//! (the head group's template), then one per worker group, named after it (lower-cased),
//! with `replicas × numOfHosts` pods (`replicas` 1 when unset). With in-tree autoscaling on,
//! a worker group may run with as few as `minReplicas × numOfHosts` pods: that is its
//! `minCount` (Kueue's partial admission; Baton's scheduler admits the full count).
//!
//! Finished once `status.jobDeploymentStatus` is `Complete` or `Failed`, succeeded when
//! `status.jobStatus` is `SUCCEEDED`. Active unless the deployment is `Suspended`, or has
//! not begun (no status, `New`), or finished: KubeRay deletes the cluster before it reports
//! `Suspended`.

use serde_json::Value;

use crate::integrations::shape::{Finished, RolePodSet, Shape, ShapeError, count_at, template_at};

pub struct RayJob;

/// The head group's pod set.
pub const HEAD: &str = "head";

impl Shape for RayJob {
    fn pod_sets(&self, job: &Value, _: Option<&Value>) -> Result<Vec<RolePodSet>, ShapeError> {
        let head = "/spec/rayClusterSpec/headGroupSpec/template";
        let mut sets = vec![RolePodSet {
            name: HEAD.to_string(),
            template: template_at(job, head, "spec.rayClusterSpec.headGroupSpec.template")?,
            path: Some(head.to_string()),
            count: 1,
            min_count: None,
        }];
        let autoscaling = job
            .pointer("/spec/rayClusterSpec/enableInTreeAutoscaling")
            .and_then(Value::as_bool)
            == Some(true);
        let groups = job
            .pointer("/spec/rayClusterSpec/workerGroupSpecs")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        for i in 0..groups {
            sets.push(worker_group(job, i, autoscaling)?);
        }
        Ok(sets)
    }

    fn finished(&self, job: &Value) -> Option<Finished> {
        let deployment = job.pointer("/status/jobDeploymentStatus")?.as_str()?;
        if deployment != "Complete" && deployment != "Failed" {
            return None;
        }
        let succeeded =
            job.pointer("/status/jobStatus").and_then(Value::as_str) == Some("SUCCEEDED");
        let message = job
            .pointer("/status/message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map_or_else(|| format!("RayJob deployment {deployment}"), str::to_string);
        Some(Finished { succeeded, message })
    }

    fn active(&self, job: &Value) -> bool {
        let deployment = job
            .pointer("/status/jobDeploymentStatus")
            .and_then(Value::as_str)
            .unwrap_or("");
        !matches!(deployment, "" | "New" | "Suspended" | "Complete" | "Failed")
    }
}

fn worker_group(job: &Value, i: usize, autoscaling: bool) -> Result<RolePodSet, ShapeError> {
    let at = format!("/spec/rayClusterSpec/workerGroupSpecs/{i}");
    let field = |f: &str| format!("spec.rayClusterSpec.workerGroupSpecs[{i}].{f}");
    let name = job
        .pointer(&format!("{at}/groupName"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ShapeError::new(field("groupName"), "required"))?
        .to_ascii_lowercase();
    if name == HEAD {
        return Err(ShapeError::new(
            field("groupName"),
            "\"head\" names the head group",
        ));
    }
    let replicas = count_at(job, &format!("{at}/replicas"), 1, &field("replicas"))?;
    let hosts = count_at(job, &format!("{at}/numOfHosts"), 1, &field("numOfHosts"))?.max(1);
    let min_count = if autoscaling {
        let min = count_at(job, &format!("{at}/minReplicas"), 0, &field("minReplicas"))?;
        // A pod set's minCount is at least 1; fewer than all is what makes it partial.
        Some(min.saturating_mul(hosts).max(1)).filter(|m| *m < replicas.saturating_mul(hosts))
    } else {
        None
    };
    let path = format!("{at}/template");
    Ok(RolePodSet {
        name,
        template: template_at(job, &path, &field("template"))?,
        path: Some(path),
        count: replicas.saturating_mul(hosts),
        min_count,
    })
}
