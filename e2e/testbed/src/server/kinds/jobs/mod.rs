//! Jobs and pods as kube-apiserver admits them: `batch/v1` Job defaulting and validation
//! (`job_defaults`, `job_admission`), `v1` Pod validation (`pod_admission`), and graceful pod
//! deletion (`grace`). The job controller and kubelet model is `controllers::jobs`.

pub(crate) mod grace;
pub(crate) mod job_admission;
pub(crate) mod job_defaults;
pub(crate) mod pod_admission;

pub use job_admission::admit_job;
pub use pod_admission::admit_pod;

/// Labels the API server puts on a Job's pod template (and so on its pods).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";
