//! batch/v1 Job: one pod set `main` of `spec.template`, `parallelism` pods (1 when unset),
//! never more than `completions`; finished on `Complete` or `Failed`; active while pods are
//! active or terminating.

use serde_json::Value;

use crate::integrations::shape::{
    Finished, RolePodSet, Shape, ShapeError, count_at, template_at, true_condition,
};
use baton_crds::constants::job::POD_SET_NAME;

pub struct BatchJob;

impl Shape for BatchJob {
    fn pod_sets(&self, job: &Value, _: Option<&Value>) -> Result<Vec<RolePodSet>, ShapeError> {
        let path = "/spec/template";
        let template = template_at(job, path, "spec.template")?;
        let parallelism = count_at(job, "/spec/parallelism", 1, "spec.parallelism")?;
        let count = match job.pointer("/spec/completions") {
            None | Some(Value::Null) => parallelism,
            Some(_) => parallelism.min(count_at(job, "/spec/completions", 1, "spec.completions")?),
        };
        Ok(vec![RolePodSet {
            name: POD_SET_NAME.to_string(),
            template,
            path: Some(path.to_string()),
            count,
            min_count: None,
        }])
    }

    fn finished(&self, job: &Value) -> Option<Finished> {
        let (type_, message) = true_condition(job, &["Complete", "Failed"])?;
        Some(Finished {
            succeeded: type_ == "Complete",
            message,
        })
    }

    fn active(&self, job: &Value) -> bool {
        let n = |p: &str| job.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        n("/status/active") > 0 || n("/status/terminating") > 0
    }
}
