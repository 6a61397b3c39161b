mod labels;
mod name;
mod template;
mod workload;

use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

/// A queued Job `ns/sample` (uid `uid-1`) with one container; `patch` is merged over it.
pub(super) fn job(patch: Value) -> Job {
    let mut base = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "sample", "namespace": "ns", "uid": "uid-1",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}}}]}}}
    });
    merge(&mut base, patch);
    serde_json::from_value(base).unwrap()
}

/// JSON merge patch (RFC 7386): null deletes.
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(&k);
                } else {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p,
    }
}
