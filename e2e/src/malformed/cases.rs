//! Shared pieces of the case tables: names, Jobs, and expectation shorthands.

use serde_json::{Value, json};

use super::{Expect, merge};

pub const KUEUE: &str = "kueue.x-k8s.io/v1beta2";
pub const TOLERATION: &str = "preemption-toleration.scheduling.x-k8s.io/";
/// The worker's quota in the worker and manager groups: room for every odd-but-valid case
/// and the good workload after them.
pub const WORKER_CPUS: u32 = 20;

/// `n` times `c` (boundary-length names and huge values).
pub fn repeat(n: usize, c: char) -> String {
    std::iter::repeat_n(c, n).collect()
}

/// The check holds on the Workload the object owns.
pub fn owned(inner: Expect) -> Expect {
    Expect::Owned(Box::new(inner))
}

/// A queued, suspended Job of one 1-CPU pod on `queue`; `extra` is merged in.
pub fn job(namespace: &str, name: &str, queue: &str, extra: Value) -> Value {
    let mut doc = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"suspend": true, "parallelism": 1, "completions": 1,
                 "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}}}]}}}
    });
    merge(&mut doc, extra);
    doc
}
