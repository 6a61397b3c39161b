//! JobSet (`jobset.x-k8s.io/v1alpha2`), as upstream Kueue's JobSet integration: one pod set
//! per replicated job, named after it, of its Job template's pod template, with
//! `replicas × pods per Job` pods, where a Job runs `parallelism` pods (1 when unset), never
//! more than its `completions`. Finished on the JobSet's `Completed` or `Failed` condition;
//! active while any replicated job has an active Job.

use serde_json::Value;

use crate::integrations::shape::{
    Finished, RolePodSet, Shape, ShapeError, count_at, template_at, true_condition,
};

pub struct JobSet;

impl Shape for JobSet {
    fn pod_sets(&self, js: &Value, _: Option<&Value>) -> Result<Vec<RolePodSet>, ShapeError> {
        let jobs = js
            .pointer("/spec/replicatedJobs")
            .and_then(Value::as_array)
            .filter(|j| !j.is_empty())
            .ok_or_else(|| ShapeError::new("spec.replicatedJobs", "at least one is required"))?;
        (0..jobs.len()).map(|i| replicated_job(js, i)).collect()
    }

    fn finished(&self, js: &Value) -> Option<Finished> {
        let (type_, message) = true_condition(js, &["Completed", "Failed"])?;
        Some(Finished {
            succeeded: type_ == "Completed",
            message,
        })
    }

    fn active(&self, js: &Value) -> bool {
        js.pointer("/status/replicatedJobsStatus")
            .and_then(Value::as_array)
            .is_some_and(|all| {
                all.iter()
                    .any(|s| s.get("active").and_then(Value::as_i64).unwrap_or(0) > 0)
            })
    }
}

fn replicated_job(js: &Value, i: usize) -> Result<RolePodSet, ShapeError> {
    let at = format!("/spec/replicatedJobs/{i}");
    let field = |f: &str| format!("spec.replicatedJobs[{i}].{f}");
    let name = js
        .pointer(&format!("{at}/name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ShapeError::new(field("name"), "required"))?;
    let replicas = count_at(js, &format!("{at}/replicas"), 1, &field("replicas"))?;
    let job = format!("{at}/template/spec");
    let parallelism = count_at(js, &format!("{job}/parallelism"), 1, &field("parallelism"))?;
    let per_job = match js.pointer(&format!("{job}/completions")) {
        None | Some(Value::Null) => parallelism,
        Some(_) => parallelism.min(count_at(
            js,
            &format!("{job}/completions"),
            1,
            &field("completions"),
        )?),
    };
    let path = format!("{job}/template");
    Ok(RolePodSet {
        name: name.to_string(),
        template: template_at(js, &path, &field("template.spec.template"))?,
        path: Some(path),
        count: replicas.saturating_mul(per_job),
        min_count: None,
    })
}
