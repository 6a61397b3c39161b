//! Jobs and pods: a *model* of the job controller and the kubelet that makes Jobs run on a testbed cluster.
//!
//! The model is deliberately small (see e2e/README.md, "Jobs and pods"): the job controller
//! creates `parallelism` pods for an unsuspended Job it manages, deletes them when the Job is
//! suspended, and keeps `status` as upstream does (`active`, `ready`, `terminating`,
//! `startTime`, the `Suspended`, `SuccessCriteriaMet` and `Complete` conditions); the kubelet
//! starts every pod bound to a node at once (Running and Ready), lets a Job's pods succeed
//! after [`RUN_SECONDS_ANNOTATION`] seconds, and removes a deleted pod once its grace period
//! (capped per cluster, [`JobsSettings`]) has passed. No scheduling, nodes, containers,
//! restarts, backoff, indexes or pod failure policies.
//!
//! Job and Pod admission and graceful pod deletion are per-kind behaviour (`kinds::jobs`).
//! Here: `cells` (`kubectl get` cells), `pod_template` (the pods a Job gets), `job_sync` (the job controller's decisions), `kubelet` (the kubelet's),
//! `events` (what the job controller records), `settings`, and `controller` (the background
//! task that applies both).

pub(crate) mod cells;
pub(crate) mod controller;
pub(crate) mod events;
pub(crate) mod job_sync;
pub(crate) mod kubelet;
pub(crate) mod pod_template;
pub(crate) mod settings;

use crate::server::kinds::jobs::grace;
pub use settings::{DEFAULT_TERMINATION_GRACE_CAP, JobsSettings};

/// Testbed-only Job annotation: the Job's pods succeed this many seconds (`"<N>"`) after they
/// start. Without it they run until the Job is suspended or deleted.
pub const RUN_SECONDS_ANNOTATION: &str = "testbed.baton.dev/run-seconds";

/// `spec.managedBy` of Jobs the built-in job controller manages (as is a Job without it).
pub const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";

/// The node the model binds its pods to (there is no scheduler and no Node object).
pub const NODE_NAME: &str = "testbed-node";

/// The field managers of the model's writes, as the real components' user agents name them.
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";
pub const KUBELET_MANAGER: &str = "kubelet";
