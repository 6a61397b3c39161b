//! Graceful deletion of pods (the pod strategy's `CheckGracefulDelete` and the generic
//! registry's `BeforeDelete`): a DELETE marks a running pod with `deletionTimestamp` (now +
//! grace period) and `deletionGracePeriodSeconds`; the kubelet model removes it later.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// What a DELETE does to a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum GraceStep {
    /// Store this (marked) pod and answer with it; the pod stays while it terminates.
    Mark(Value),
    /// Already terminating and not shortened: nothing changes, the answer is the pod.
    Pending,
    /// Delete at once (finalizers still hold it, as for any object).
    Now,
}

/// `metav1.Time` text of a timestamp (second precision).
pub fn time_text(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub fn parse_time(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

/// The grace period a DELETE gives a pod that is not terminating yet: the request's, else the
/// pod's `terminationGracePeriodSeconds` (none: 0); unscheduled and finished pods get 0, and a
/// negative period becomes 1.
pub fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested
        .or_else(|| pod["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(0);
    let unscheduled = pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty);
    let phase = &pod["status"]["phase"];
    if unscheduled || phase == "Failed" || phase == "Succeeded" {
        period = 0;
    }
    if period < 0 { 1 } else { period }
}

/// What a DELETE with `requested` (`gracePeriodSeconds`) does to `pod` at `now`.
pub fn on_delete(pod: &Value, requested: Option<i64>, now: Timestamp) -> GraceStep {
    let md = &pod["metadata"];
    if let Some(deleting) = parse_time(&md["deletionTimestamp"]) {
        let Some(current) = md["deletionGracePeriodSeconds"].as_i64() else {
            return GraceStep::Now;
        };
        return match requested {
            Some(0) => GraceStep::Now,
            // Only a shorter period counts; the deletion keeps its start.
            Some(p) if p < current => {
                let start = deleting - SignedDuration::from_secs(current);
                GraceStep::Mark(marked(pod, start + SignedDuration::from_secs(p), p))
            }
            _ => GraceStep::Pending,
        };
    }
    match grace_period(pod, requested) {
        0 => GraceStep::Now,
        p => GraceStep::Mark(marked(pod, now + SignedDuration::from_secs(p), p)),
    }
}

fn marked(pod: &Value, at: Timestamp, period: i64) -> Value {
    let mut out = pod.clone();
    out["metadata"]["deletionTimestamp"] = json!(time_text(at));
    out["metadata"]["deletionGracePeriodSeconds"] = json!(period);
    out
}

/// When the kubelet model removes a terminating pod: its grace period, at most `cap`, after
/// the deletion started (`deletionTimestamp` − `deletionGracePeriodSeconds`). `None` for pods
/// that are not terminating with a grace period (held by finalizers only, or not deleted).
pub fn removal_due(pod: &Value, cap: Duration) -> Option<Timestamp> {
    let md = &pod["metadata"];
    let deleting = parse_time(&md["deletionTimestamp"])?;
    let grace = md["deletionGracePeriodSeconds"]
        .as_i64()
        .filter(|g| *g > 0)?;
    let start = deleting - SignedDuration::from_secs(grace);
    let cap = SignedDuration::try_from(cap).unwrap_or(SignedDuration::MAX);
    Some(start + SignedDuration::from_secs(grace).min(cap))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn running(grace: Option<i64>) -> Value {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n"},
            "status": {"phase": "Running"}});
        if let Some(g) = grace {
            pod["spec"]["terminationGracePeriodSeconds"] = json!(g);
        }
        pod
    }

    #[test]
    fn a_running_pod_is_marked_with_its_grace_period() {
        let now = t("2026-01-01T00:00:00Z");
        let GraceStep::Mark(pod) = on_delete(&running(Some(30)), None, now) else {
            panic!("marked");
        };
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
        // The request's period wins; zero and finished or unscheduled pods go at once.
        let GraceStep::Mark(pod5) = on_delete(&running(Some(30)), Some(5), now) else {
            panic!("marked");
        };
        assert_eq!(pod5["metadata"]["deletionGracePeriodSeconds"], 5);
        assert_eq!(on_delete(&running(Some(30)), Some(0), now), GraceStep::Now);
        assert_eq!(on_delete(&running(None), None, now), GraceStep::Now);
        let mut done = running(Some(30));
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(on_delete(&done, None, now), GraceStep::Now);
        assert_eq!(
            on_delete(&json!({"spec": {}}), Some(10), now),
            GraceStep::Now
        );
        assert_eq!(grace_period(&running(Some(-5)), None), 1);
    }

    #[test]
    fn a_terminating_pod_can_only_be_shortened() {
        let now = t("2026-01-01T00:00:00Z");
        let GraceStep::Mark(pod) = on_delete(&running(Some(30)), None, now) else {
            panic!("marked");
        };
        let later = t("2026-01-01T00:00:03Z");
        assert_eq!(on_delete(&pod, None, later), GraceStep::Pending);
        assert_eq!(on_delete(&pod, Some(60), later), GraceStep::Pending);
        let GraceStep::Mark(shorter) = on_delete(&pod, Some(10), later) else {
            panic!("shortened");
        };
        assert_eq!(
            shorter["metadata"]["deletionTimestamp"],
            "2026-01-01T00:00:10Z"
        );
        assert_eq!(on_delete(&pod, Some(0), later), GraceStep::Now);
        let mut no_period = pod.clone();
        no_period["metadata"]
            .as_object_mut()
            .map(|m| m.remove("deletionGracePeriodSeconds"));
        assert_eq!(on_delete(&no_period, None, later), GraceStep::Now);
    }

    #[test]
    fn removal_comes_after_the_capped_grace_period() {
        let now = t("2026-01-01T00:00:00Z");
        let GraceStep::Mark(pod) = on_delete(&running(Some(30)), None, now) else {
            panic!("marked");
        };
        assert_eq!(
            removal_due(&pod, Duration::from_secs(2)),
            Some(t("2026-01-01T00:00:02Z"))
        );
        assert_eq!(
            removal_due(&pod, Duration::from_secs(60)),
            Some(t("2026-01-01T00:00:30Z"))
        );
        assert_eq!(removal_due(&pod, Duration::ZERO), Some(now));
        assert_eq!(removal_due(&running(Some(30)), Duration::ZERO), None);
    }
}
