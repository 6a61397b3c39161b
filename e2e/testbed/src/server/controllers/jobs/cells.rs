//! `kubectl get jobs` and `kubectl get pods` cells that are not plain JSON paths, as
//! kube-apiserver's table printers (`printJob`, `printPod`) compute them.

use serde_json::{Value, json};

use super::grace::parse_time;
use crate::server::api::meta::human_duration;

/// The cell of a `#name()` column of a Job or Pod, if `func` is one of them.
pub fn cell(obj: &Value, func: &str) -> Option<Value> {
    let text = match func {
        "jobstatus" => job_status(obj),
        "completions" => completions(obj),
        "jobduration" => job_duration(obj, jiff::Timestamp::now()),
        "podready" => pod_ready(obj),
        "podstatus" => pod_status(obj),
        "restarts" => restarts(obj),
        _ => return None,
    };
    Some(json!(text))
}

fn has_condition(obj: &Value, kind: &str) -> bool {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// STATUS: the first that holds of Complete, Failed, Terminating (being deleted), Suspended,
/// FailureTarget, SuccessCriteriaMet; else Running.
pub fn job_status(job: &Value) -> String {
    let status = if has_condition(job, "Complete") {
        "Complete"
    } else if has_condition(job, "Failed") {
        "Failed"
    } else if job["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has_condition(job, "Suspended") {
        "Suspended"
    } else if has_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    status.into()
}

/// COMPLETIONS: `succeeded/completions`, or `succeeded/1` (`of <parallelism>` when more
/// than one pod runs) for Jobs without completions.
pub fn completions(job: &Value) -> String {
    let succeeded = job["status"]["succeeded"].as_i64().unwrap_or(0);
    if let Some(c) = job["spec"]["completions"].as_i64() {
        return format!("{succeeded}/{c}");
    }
    match job["spec"]["parallelism"].as_i64().unwrap_or(0) {
        p if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    }
}

/// DURATION: from start to completion (or to `now` while it runs); empty before it starts.
pub fn job_duration(job: &Value, now: jiff::Timestamp) -> String {
    let Some(start) = parse_time(&job["status"]["startTime"]) else {
        return String::new();
    };
    let end = parse_time(&job["status"]["completionTime"]).unwrap_or(now);
    human_duration((end.as_second() - start.as_second()).max(0))
}

fn container_statuses(pod: &Value) -> impl Iterator<Item = &Value> {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
}

/// READY: ready containers / containers.
pub fn pod_ready(pod: &Value) -> String {
    let total = pod["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = container_statuses(pod)
        .filter(|c| c["ready"] == true)
        .count();
    format!("{ready}/{total}")
}

/// STATUS: the phase (or the pod's reason), overridden by a container's waiting or
/// terminated reason; `Terminating` once deleted.
pub fn pod_status(pod: &Value) -> String {
    let status = &pod["status"];
    let mut reason = status["phase"].as_str().unwrap_or("").to_string();
    if let Some(r) = status["reason"].as_str().filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    let mut running = false;
    let statuses: Vec<&Value> = container_statuses(pod).collect();
    for c in statuses.iter().rev() {
        let state = &c["state"];
        if let Some(r) = state["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if let Some(r) = state["terminated"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if state["terminated"].is_object() {
            reason = match state["terminated"]["signal"].as_i64().filter(|s| *s != 0) {
                Some(s) => format!("Signal:{s}"),
                None => format!(
                    "ExitCode:{}",
                    state["terminated"]["exitCode"].as_i64().unwrap_or(0)
                ),
            };
        } else if c["ready"] == true && state["running"].is_object() {
            running = true;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    if pod["metadata"]["deletionTimestamp"].is_string() {
        reason = "Terminating".into();
    }
    reason
}

/// RESTARTS: the containers' restarts.
pub fn restarts(pod: &Value) -> String {
    container_statuses(pod)
        .map(|c| c["restartCount"].as_i64().unwrap_or(0))
        .sum::<i64>()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_cells() {
        let mut job = json!({"spec": {"completions": 2, "parallelism": 2},
            "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z"}});
        assert_eq!(job_status(&job), "Running");
        assert_eq!(completions(&job), "1/2");
        let now: jiff::Timestamp = "2026-01-01T00:00:45Z".parse().expect("time");
        assert_eq!(job_duration(&job, now), "45s");
        job["status"]["completionTime"] = json!("2026-01-01T00:03:00Z");
        job["status"]["conditions"] = json!([{"type": "SuccessCriteriaMet", "status": "True"}]);
        assert_eq!(job_status(&job), "SuccessCriteriaMet");
        job["status"]["conditions"] = json!([{"type": "Suspended", "status": "True"}]);
        assert_eq!(job_status(&job), "Suspended");
        job["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(job_status(&job), "Complete");
        assert_eq!(job_duration(&job, now), "3m");
        assert_eq!(
            completions(&json!({"spec": {"parallelism": 3}})),
            "0/1 of 3"
        );
        assert_eq!(completions(&json!({"spec": {"parallelism": 1}})), "0/1");
        assert_eq!(job_duration(&json!({}), now), "");
        assert_eq!(cell(&json!({}), "nothing"), None);
    }

    #[test]
    fn pod_cells() {
        let mut pod = json!({"spec": {"containers": [{"name": "c"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]}});
        assert_eq!(pod_ready(&pod), "1/1");
        assert_eq!(pod_status(&pod), "Running");
        assert_eq!(restarts(&pod), "0");
        pod["status"]["containerStatuses"][0] = json!({"name": "c", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
        pod["status"]["phase"] = json!("Succeeded");
        assert_eq!(pod_ready(&pod), "0/1");
        assert_eq!(pod_status(&pod), "Completed");
        pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_status(&pod), "Terminating");
        assert_eq!(
            pod_status(&json!({"status": {"phase": "Pending"}})),
            "Pending"
        );
    }
}
