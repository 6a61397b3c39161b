//! The malformed-input campaign's machinery (issue 14 part 3): a table of bad objects, each
//! with the outcome Baton promises — the API server refuses it naming the field, or it is
//! stored and the object (or the process log) gets a condition, Event or line that names the
//! object and the field — and the checks that follow every table: the processes are alive,
//! nothing stored was lost, and a good workload in the same queue is still admitted.

pub mod cases;
pub mod forged;
pub mod manager_cases;
mod run;
mod signals;
pub mod worker_cases;

pub use run::{Outcome, Runner};
pub use signals::{alive, condition_message, event_messages};

use serde_json::{Value, json};

/// Which cluster a case is submitted to: 0 = the manager, `i` = worker `i`.
pub type Cluster = usize;

/// What a case must lead to.
#[derive(Clone, Debug)]
pub enum Expect {
    /// The API server refuses the object (or its status write) with a message holding every
    /// needle (the field path, the rule).
    Rejected(&'static [&'static str]),
    /// Either refused as `Rejected` (a real kube-apiserver), or stored and then `otherwise`
    /// (a server that validates less, as the testbed where it differs).
    RejectedOr(&'static [&'static str], Box<Expect>),
    /// Stored; the object's condition `kind` gets `status`, and a message holding every needle.
    Condition {
        kind: &'static str,
        status: &'static str,
        needles: Vec<String>,
    },
    /// Stored; an Event about the object with `reason` and a message holding every needle.
    Event {
        reason: &'static str,
        needles: Vec<String>,
    },
    /// Stored, and it is admitted (`QuotaReserved=True`): the input is odd but valid.
    Admitted,
    /// The check holds on the object of the same kind, namespace and name on another cluster
    /// (a MultiKueue replica).
    On(Cluster, Box<Expect>),
    /// The check holds on the Workload the object owns (a Job's).
    Owned(Box<Expect>),
}

/// One bad input.
#[derive(Clone, Debug)]
pub struct Case {
    /// A short label for the report.
    pub id: &'static str,
    pub cluster: Cluster,
    /// The object as created (it must name its apiVersion, kind and metadata).
    pub object: Value,
    /// A status written after creation (merge patch on the status subresource), if any.
    pub status: Option<Value>,
    pub expect: Expect,
}

impl Case {
    pub fn new(id: &'static str, cluster: Cluster, object: Value, expect: Expect) -> Case {
        Case {
            id,
            cluster,
            object,
            status: None,
            expect,
        }
    }

    /// The same case, with a status written after creation.
    pub fn with_status(mut self, status: Value) -> Case {
        self.status = Some(status);
        self
    }

    pub fn name(&self) -> String {
        self.object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn kind(&self) -> String {
        self.object["kind"].as_str().unwrap_or_default().to_string()
    }
}

/// `Expect::Condition` with owned needles.
pub fn condition(kind: &'static str, status: &'static str, needles: &[&str]) -> Expect {
    Expect::Condition {
        kind,
        status,
        needles: needles.iter().map(|s| s.to_string()).collect(),
    }
}

/// `Expect::Event` with owned needles.
pub fn event(reason: &'static str, needles: &[&str]) -> Expect {
    Expect::Event {
        reason,
        needles: needles.iter().map(|s| s.to_string()).collect(),
    }
}

/// Merges `extra` into `base`, object by object; `null` deletes a key (a JSON merge patch).
pub fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                if v.is_null() {
                    b.remove(&k);
                } else {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (b, e) => *b = e,
    }
}

/// A Workload in `namespace` on queue `user-queue`: one pod set of `cpu` CPUs, priority 0;
/// `extra` is merged in.
pub fn workload(namespace: &str, name: &str, cpu: &str, extra: Value) -> Value {
    let mut doc = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queueName": "user-queue", "priority": 0, "podSets": [{"name": "main", "count": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": cpu}}}]}}}]},
    });
    merge(&mut doc, extra);
    doc
}

/// A condition entry for `status.conditions`.
pub fn condition_entry(kind: &str, status: &str, reason: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// A kubeconfig for `server` with a bearer token (`user` overrides the user entry).
pub fn kubeconfig(server: &str, current_context: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: {current_context}\n\
         clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n\
         users: [{{name: u, user: {user}}}]\n\
         contexts: [{{name: c, context: {{cluster: c, user: u}}}}]\n"
    )
}
