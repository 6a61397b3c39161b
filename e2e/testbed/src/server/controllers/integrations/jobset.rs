//! The JobSet controller's decisions for one JobSet (kubernetes-sigs/jobset), pure with
//! `now` passed in: which child Jobs to create, suspend or resume, and the status to write.
//!
//! As upstream: each replicated job `r` with `replicas: n` gets Jobs `<jobset>-<r>-0` …
//! `<jobset>-<r>-<n-1>`, built from `r`'s Job template, owned by the JobSet and labelled (the
//! Job and its pod template) with the JobSet's name, the replicated job's name and replicas,
//! and the Job's index; a Job is created suspended while the JobSet is. Suspending the
//! JobSet suspends every child Job (the job controller model deletes their pods);
//! resuming it first copies the replicated job template's pod labels, annotations, node
//! selector, tolerations and scheduling gates onto each child Job (what Kueue's admission
//! wrote into the JobSet), clearing a started Job's `status.startTime` so its template may
//! change, then unsuspends it. `status.replicatedJobsStatus` counts the child Jobs per
//! replicated job (`active`: with running pods; `ready`: all of its pods ready; `suspended`,
//! `succeeded`, `failed`); the `Completed` condition (and `terminalState`) comes once the
//! success policy's Jobs all completed, `Failed` once any Job failed, and `Suspended` follows
//! `spec.suspend`. Not imitated: startup policies, failure policies and restarts, headless
//! Services and DNS hostnames, coordinator labels, the webhooks beyond the pod template's
//! default `restartPolicy: OnFailure`, TTL after finishing.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::{carry_run_seconds, condition_true, controller_ref, name_of, namespace_of};

pub const GROUP: &str = "jobset.x-k8s.io";
pub const VERSION: &str = "v1alpha2";
pub const PLURAL: &str = "jobsets";
pub const KIND: &str = "JobSet";
/// `spec.managedBy` of JobSets this controller manages (as is one without it).
pub const CONTROLLER_NAME: &str = "jobset.sigs.k8s.io/jobset-controller";
pub const JOBSET_NAME_LABEL: &str = "jobset.sigs.k8s.io/jobset-name";
pub const REPLICATED_JOB_NAME_LABEL: &str = "jobset.sigs.k8s.io/replicatedjob-name";
pub const REPLICATED_JOB_REPLICAS_LABEL: &str = "jobset.sigs.k8s.io/replicatedjob-replicas";
pub const JOB_INDEX_LABEL: &str = "jobset.sigs.k8s.io/job-index";
pub const JOB_GLOBAL_INDEX_LABEL: &str = "jobset.sigs.k8s.io/job-global-index";

pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

/// The name of the `index`th Job of replicated job `replicated` of JobSet `jobset`.
pub fn child_name(jobset: &str, replicated: &str, index: i64) -> String {
    format!("{jobset}-{replicated}-{index}")
}

/// One replicated job of a JobSet's spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Replicated<'a> {
    pub name: &'a str,
    pub replicas: i64,
    /// The Job template.
    pub template: &'a Value,
}

/// The replicated jobs of `jobset`, in order (`replicas` defaults to 1).
pub fn replicated_jobs(jobset: &Value) -> Vec<Replicated<'_>> {
    jobset["spec"]["replicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            Some(Replicated {
                name: r["name"].as_str()?,
                replicas: r["replicas"].as_i64().unwrap_or(1).max(0),
                template: &r["template"],
            })
        })
        .collect()
}

/// Pods one child Job of `template` runs at once: `parallelism` (default 1), at most
/// `completions` when set.
pub fn pods_per_job(template: &Value) -> i64 {
    let parallelism = template["spec"]["parallelism"].as_i64().unwrap_or(1).max(0);
    match template["spec"]["completions"].as_i64() {
        Some(c) => parallelism.min(c.max(0)),
        None => parallelism,
    }
}

fn suspended(obj: &Value) -> bool {
    obj["spec"]["suspend"] == true
}

fn merge_into(target: &mut Value, extra: &Map<String, Value>) {
    if !target.is_object() {
        *target = json!({});
    }
    if let Some(map) = target.as_object_mut() {
        for (k, v) in extra {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// The labels (and annotations) JobSet puts on a child Job and its pods.
fn jobset_labels(
    jobset: &Value,
    r: &Replicated<'_>,
    index: i64,
    global: i64,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(JOBSET_NAME_LABEL.into(), json!(name_of(jobset)));
    m.insert(REPLICATED_JOB_NAME_LABEL.into(), json!(r.name));
    m.insert(
        REPLICATED_JOB_REPLICAS_LABEL.into(),
        json!(r.replicas.to_string()),
    );
    m.insert(JOB_INDEX_LABEL.into(), json!(index.to_string()));
    m.insert(JOB_GLOBAL_INDEX_LABEL.into(), json!(global.to_string()));
    m
}

/// The `index`th child Job of replicated job `r` (`global`: its index among all the JobSet's
/// Jobs), as the JobSet controller creates it.
pub fn child_job(jobset: &Value, r: &Replicated<'_>, index: i64, global: i64) -> Value {
    let extra = jobset_labels(jobset, r, index, global);
    let mut spec = r.template["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    merge_into(&mut spec["template"]["metadata"]["labels"], &extra);
    merge_into(&mut spec["template"]["metadata"]["annotations"], &extra);
    // The JobSet webhook's default: Jobs' pods restart on failure.
    if spec["template"]["spec"]["restartPolicy"].is_null() {
        spec["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    }
    spec["suspend"] = json!(suspended(jobset));
    let mut job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": child_name(name_of(jobset), r.name, index),
            "namespace": namespace_of(jobset),
            "labels": r.template["metadata"]["labels"].clone(),
            "annotations": r.template["metadata"]["annotations"].clone(),
            "ownerReferences": [controller_ref(jobset, &api_version(), KIND)],
        },
        "spec": spec,
    });
    merge_into(&mut job["metadata"]["labels"], &extra);
    merge_into(&mut job["metadata"]["annotations"], &extra);
    carry_run_seconds(jobset, &mut job);
    job
}

/// What a resumed child Job takes from its replicated job's template (what Kueue's
/// admission writes): pod labels and annotations (added), node selector, tolerations and
/// scheduling gates (replaced).
#[derive(Debug, Clone, PartialEq)]
pub struct Directives {
    pub labels: Value,
    pub annotations: Value,
    pub node_selector: Value,
    pub tolerations: Value,
    pub scheduling_gates: Value,
}

impl Directives {
    /// The directives of a Job as built by [`child_job`].
    pub fn of(job: &Value) -> Self {
        let t = &job["spec"]["template"];
        Directives {
            labels: t["metadata"]["labels"].clone(),
            annotations: t["metadata"]["annotations"].clone(),
            node_selector: t["spec"]["nodeSelector"].clone(),
            tolerations: t["spec"]["tolerations"].clone(),
            scheduling_gates: t["spec"]["schedulingGates"].clone(),
        }
    }

    /// Writes the directives into `job` (a stored Job).
    pub fn apply(&self, job: &mut Value) {
        let t = &mut job["spec"]["template"];
        for (field, value) in [("labels", &self.labels), ("annotations", &self.annotations)] {
            if let Some(extra) = value.as_object() {
                merge_into(&mut t["metadata"][field], extra);
            }
        }
        for (field, value) in [
            ("nodeSelector", &self.node_selector),
            ("tolerations", &self.tolerations),
            ("schedulingGates", &self.scheduling_gates),
        ] {
            match (value.is_null(), t["spec"].as_object_mut()) {
                (true, Some(spec)) => {
                    spec.remove(field);
                }
                (false, _) => t["spec"][field] = value.clone(),
                (true, None) => {}
            }
        }
    }
}

/// A write to an existing child Job, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildWrite {
    /// Set `spec.suspend: true`.
    Suspend(String),
    /// Clear `status.startTime` (a started Job's template may change only then).
    ClearStartTime(String),
    /// Write the directives and set `spec.suspend: false`.
    Resume(String, Box<Directives>),
}

/// What to do for one JobSet, in this order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// Child Jobs to create.
    pub create: Vec<Value>,
    pub writes: Vec<ChildWrite>,
    /// The JobSet's new `status`, when it changes.
    pub status: Option<Value>,
}

/// Whether the JobSet finished (a True `Completed` or `Failed` condition).
pub fn is_finished(jobset: &Value) -> bool {
    condition_true(jobset, "Completed") || condition_true(jobset, "Failed")
}

/// The JobSet controller's sync of `jobset`, whose Jobs (those it controls) are `children`.
pub fn sync(jobset: &Value, children: &[&Value], now: Timestamp) -> Plan {
    let mut plan = Plan::default();
    if !super::manages(jobset, CONTROLLER_NAME) || super::deleting(jobset) || is_finished(jobset) {
        return plan;
    }
    let suspend = suspended(jobset);
    let mut global = 0;
    for r in replicated_jobs(jobset) {
        for index in 0..r.replicas {
            let desired = child_job(jobset, &r, index, global);
            global += 1;
            let name = name_of(&desired).to_string();
            let Some(child) = children.iter().find(|c| name_of(c) == name) else {
                plan.create.push(desired);
                continue;
            };
            if super::deleting(child) || job_finished(child) || suspended(child) == suspend {
                continue;
            }
            if suspend {
                plan.writes.push(ChildWrite::Suspend(name));
                continue;
            }
            if child["status"]["startTime"].is_string() {
                plan.writes.push(ChildWrite::ClearStartTime(name.clone()));
            }
            plan.writes
                .push(ChildWrite::Resume(name, Box::new(Directives::of(&desired))));
        }
    }
    let status = status(jobset, children, now);
    if status != jobset["status"] {
        plan.status = Some(status);
    }
    plan
}

fn job_finished(job: &Value) -> bool {
    condition_true(job, "Complete") || condition_true(job, "Failed")
}

/// `replicatedJobsStatus` entry of replicated job `r`, over the Jobs it owns.
pub fn replicated_status(r: &Replicated<'_>, jobs: &[&Value]) -> Value {
    let (mut ready, mut succeeded, mut failed, mut active, mut suspended_n) = (0, 0, 0, 0, 0);
    let want = pods_per_job(r.template);
    for job in jobs {
        if condition_true(job, "Complete") {
            succeeded += 1;
            continue;
        }
        if condition_true(job, "Failed") {
            failed += 1;
            continue;
        }
        if suspended(job) {
            suspended_n += 1;
        }
        let s = &job["status"];
        if s["active"].as_i64().unwrap_or(0) > 0 {
            active += 1;
        }
        let done = s["ready"].as_i64().unwrap_or(0) + s["succeeded"].as_i64().unwrap_or(0);
        if want > 0 && done >= want {
            ready += 1;
        }
    }
    json!({"name": r.name, "ready": ready, "succeeded": succeeded, "failed": failed,
        "active": active, "suspended": suspended_n})
}

/// Whether the success policy holds: every Job (operator `All`, the default) or any Job
/// (`Any`) of the target replicated jobs (default: all of them) completed.
fn succeeded(jobset: &Value, statuses: &[Value]) -> bool {
    let policy = &jobset["spec"]["successPolicy"];
    let targets: Vec<&str> = policy["targetReplicatedJobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let rjs = replicated_jobs(jobset);
    let targeted: Vec<(&Replicated<'_>, &Value)> = rjs
        .iter()
        .zip(statuses)
        .filter(|(r, _)| targets.is_empty() || targets.contains(&r.name))
        .collect();
    let done =
        |(r, s): &(&Replicated<'_>, &Value)| (r.replicas, s["succeeded"].as_i64().unwrap_or(0));
    if policy["operator"] == "Any" {
        targeted.iter().map(done).any(|(_, n)| n > 0)
    } else {
        !targeted.is_empty() && targeted.iter().map(done).all(|(want, n)| n >= want)
    }
}

/// The status `jobset` should have, given its Jobs.
pub fn status(jobset: &Value, children: &[&Value], now: Timestamp) -> Value {
    let old = &jobset["status"];
    let mut status = if old.is_object() {
        old.clone()
    } else {
        json!({})
    };
    let statuses: Vec<Value> = replicated_jobs(jobset)
        .iter()
        .map(|r| {
            let mine: Vec<&Value> = children
                .iter()
                .copied()
                .filter(|c| c["metadata"]["labels"][REPLICATED_JOB_NAME_LABEL] == r.name)
                .collect();
            replicated_status(r, &mine)
        })
        .collect();
    let failed = statuses
        .iter()
        .any(|s| s["failed"].as_i64().unwrap_or(0) > 0);
    let done = !failed && succeeded(jobset, &statuses);
    let mut conditions = status["conditions"].take();
    if suspended(jobset) {
        conditions = super::set_condition(
            &conditions,
            "Suspended",
            true,
            "SuspendedJobs",
            "jobset is suspended",
            now,
        );
    } else if conditions
        .as_array()
        .is_some_and(|l| l.iter().any(|c| c["type"] == "Suspended"))
    {
        conditions = super::set_condition(
            &conditions,
            "Suspended",
            false,
            "ResumeJobs",
            "jobset is resumed",
            now,
        );
    }
    if failed {
        conditions = super::set_condition(
            &conditions,
            "Failed",
            true,
            "FailedJobs",
            "jobset failed due to a failed job",
            now,
        );
        status["terminalState"] = json!("Failed");
    } else if done {
        conditions = super::set_condition(
            &conditions,
            "Completed",
            true,
            "AllJobsCompleted",
            "jobset completed successfully",
            now,
        );
        status["terminalState"] = json!("Completed");
    }
    if !conditions.is_null() {
        status["conditions"] = conditions;
    }
    status["replicatedJobsStatus"] = Value::Array(statuses);
    if status["restarts"].is_null() {
        status["restarts"] = json!(0);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-01-01T00:00:10Z".parse().expect("time")
    }

    /// How many Jobs, in all, a JobSet has.
    pub fn job_count(jobset: &Value) -> i64 {
        replicated_jobs(jobset).iter().map(|r| r.replicas).sum()
    }

    /// The documentation's sample: `workers` (1 Job) and `driver` (1 Job), 1 pod each.
    fn sample(suspend: bool) -> Value {
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ns", "uid": "u1",
            "annotations": {crate::server::controllers::jobs::RUN_SECONDS_ANNOTATION: "3"}},
        "spec": {"suspend": suspend, "replicatedJobs": [
            {"name": "workers", "replicas": 2, "template": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {"parallelism": 2, "completions": 2, "template": {
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
            {"name": "driver", "template": {"spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}
        ]}})
    }

    fn job(name: &str, rj: &str, suspend: bool, status: Value) -> Value {
        json!({"metadata": {"name": name, "labels": {REPLICATED_JOB_NAME_LABEL: rj}},
            "spec": {"suspend": suspend, "parallelism": 2}, "status": status})
    }

    #[test]
    fn children_are_named_by_replicated_job_and_index() {
        let plan = sync(&sample(true), &[], now());
        let names: Vec<&str> = plan.create.iter().map(name_of).collect();
        assert_eq!(names, ["js-workers-0", "js-workers-1", "js-driver-0"]);
        assert_eq!(job_count(&sample(true)), 3);
    }

    #[test]
    fn a_child_carries_the_labels_the_owner_and_the_pod_template_of_its_replicated_job() {
        let js = sample(true);
        let r = &replicated_jobs(&js)[0];
        let job = child_job(&js, r, 1, 1);
        assert_eq!(job["spec"]["suspend"], true);
        assert_eq!(job["metadata"]["labels"]["team"], "a");
        let pod_labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(pod_labels[JOBSET_NAME_LABEL], "js");
        assert_eq!(pod_labels[REPLICATED_JOB_NAME_LABEL], "workers");
        assert_eq!(pod_labels[JOB_INDEX_LABEL], "1");
        assert_eq!(
            job["metadata"]["labels"][REPLICATED_JOB_REPLICAS_LABEL],
            "2"
        );
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "JobSet");
        assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "u1");
        assert_eq!(
            job["spec"]["template"]["spec"]["restartPolicy"],
            "OnFailure"
        );
        assert_eq!(
            job["metadata"]["annotations"]
                [crate::server::controllers::jobs::RUN_SECONDS_ANNOTATION],
            "3"
        );
        let driver = child_job(&js, &replicated_jobs(&js)[1], 0, 2);
        assert_eq!(driver["spec"]["template"]["spec"]["restartPolicy"], "Never");
    }

    #[test]
    fn pods_per_job_are_parallelism_bounded_by_completions() {
        assert_eq!(
            pods_per_job(&json!({"spec": {"parallelism": 3, "completions": 2}})),
            2
        );
        assert_eq!(pods_per_job(&json!({"spec": {"parallelism": 3}})), 3);
        assert_eq!(pods_per_job(&json!({"spec": {}})), 1);
    }

    #[test]
    fn suspending_suspends_every_running_child_and_resuming_writes_the_directives_first() {
        let mut js = sample(true);
        let a = job("js-workers-0", "workers", false, json!({"active": 2}));
        let b = job("js-workers-1", "workers", true, json!({}));
        let c = job("js-driver-0", "driver", false, json!({}));
        let plan = sync(&js, &[&a, &b, &c], now());
        assert!(plan.create.is_empty());
        assert_eq!(
            plan.writes,
            [
                ChildWrite::Suspend("js-workers-0".into()),
                ChildWrite::Suspend("js-driver-0".into())
            ]
        );
        js["spec"]["suspend"] = json!(false);
        js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] =
            json!({"flavor": "gpu"});
        let started = job(
            "js-workers-0",
            "workers",
            true,
            json!({"startTime": "2026-01-01T00:00:00Z"}),
        );
        let plan = sync(&js, &[&started], now());
        assert_eq!(plan.create.len(), 2, "the missing children are created");
        assert_eq!(
            plan.writes[0],
            ChildWrite::ClearStartTime("js-workers-0".into())
        );
        let ChildWrite::Resume(name, d) = &plan.writes[1] else {
            panic!("expected a resume, got {:?}", plan.writes[1]);
        };
        assert_eq!(name, "js-workers-0");
        assert_eq!(d.node_selector, json!({"flavor": "gpu"}));
        let mut stored = json!({"spec": {"template": {"metadata": {"labels": {"job-name": "x"}},
            "spec": {"nodeSelector": {"old": "1"}, "tolerations": [{"key": "k"}]}}}});
        d.apply(&mut stored);
        let t = &stored["spec"]["template"];
        assert_eq!(t["spec"]["nodeSelector"], json!({"flavor": "gpu"}));
        assert!(t["spec"]["tolerations"].is_null(), "replaced by none");
        assert_eq!(
            t["metadata"]["labels"]["job-name"], "x",
            "labels are added to"
        );
        assert_eq!(t["metadata"]["labels"][JOBSET_NAME_LABEL], "js");
    }

    #[test]
    fn replicated_job_status_counts_jobs() {
        let js = sample(false);
        let r = &replicated_jobs(&js)[0];
        let running = job("a", "workers", false, json!({"active": 2, "ready": 2}));
        let starting = job("b", "workers", false, json!({"active": 2, "ready": 1}));
        let done =
            json!({"spec": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        let parked = job("c", "workers", true, json!({}));
        let s = replicated_status(r, &[&running, &starting, &done, &parked]);
        assert_eq!(
            s,
            json!({"name": "workers", "ready": 1, "succeeded": 1, "failed": 0, "active": 2, "suspended": 1})
        );
    }

    #[test]
    fn status_conditions_follow_suspension_and_completion() {
        let js = sample(true);
        let s = status(&js, &[], now());
        assert_eq!(s["conditions"][0]["type"], "Suspended");
        assert_eq!(s["conditions"][0]["reason"], "SuspendedJobs");
        assert_eq!(s["replicatedJobsStatus"].as_array().map(Vec::len), Some(2));
        let mut resumed = sample(false);
        resumed["status"] = s;
        let s = status(&resumed, &[], now());
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(s["conditions"][0]["reason"], "ResumeJobs");
        let complete = json!({"type": "Complete", "status": "True"});
        let done = |n: &str, rj: &str| {
            json!({"metadata": {"name": n, "labels": {REPLICATED_JOB_NAME_LABEL: rj}},
                "status": {"conditions": [complete.clone()]}})
        };
        let (a, b, c) = (
            done("a", "workers"),
            done("b", "workers"),
            done("c", "driver"),
        );
        let s = status(&resumed, &[&a, &b], now());
        assert!(s["terminalState"].is_null(), "the driver has not completed");
        let s = status(&resumed, &[&a, &b, &c], now());
        assert_eq!(s["terminalState"], "Completed");
        assert!(
            s["conditions"]
                .as_array()
                .expect("list")
                .iter()
                .any(|c| c["type"] == "Completed"
                    && c["status"] == "True"
                    && c["reason"] == "AllJobsCompleted")
        );
        let mut finished = resumed.clone();
        finished["status"] = s;
        assert_eq!(sync(&finished, &[&a, &b, &c], now()), Plan::default());
        let failed = json!({"metadata": {"labels": {REPLICATED_JOB_NAME_LABEL: "driver"}},
            "status": {"conditions": [{"type": "Failed", "status": "True"}]}});
        assert_eq!(
            status(&resumed, &[&failed], now())["terminalState"],
            "Failed"
        );
    }

    #[test]
    fn any_success_policy_completes_with_one_target_job() {
        let mut js = sample(false);
        js["spec"]["successPolicy"] =
            json!({"operator": "Any", "targetReplicatedJobs": ["driver"]});
        let c = json!({"metadata": {"labels": {REPLICATED_JOB_NAME_LABEL: "driver"}},
            "status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(status(&js, &[&c], now())["terminalState"], "Completed");
    }

    #[test]
    fn jobsets_of_other_controllers_are_left_alone() {
        let mut js = sample(false);
        js["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        assert_eq!(sync(&js, &[], now()), Plan::default());
        js["spec"]["managedBy"] = json!(CONTROLLER_NAME);
        assert_eq!(sync(&js, &[], now()).create.len(), 3);
    }
}
