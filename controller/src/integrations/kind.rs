//! Which kind an integration is for: the built-in ones, named as Kueue's
//! `integrations.frameworks` names them, and external ones named by group, version and kind
//! (Kueue's `multiKueue.externalFrameworks`: `Kind.version.group`).

use std::fmt;

use kube::core::{ApiResource, GroupVersionKind};

use super::kinds::{batch_job, jobset, rayjob, trainjob};
use super::shape::Shape;

/// A job kind Baton handles.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `batch/v1` Job.
    Job,
    /// `jobset.x-k8s.io/v1alpha2` JobSet.
    JobSet,
    /// `trainer.kubeflow.org/v1alpha1` TrainJob.
    TrainJob,
    /// `ray.io/v1` RayJob.
    RayJob,
    /// Any other kind with `spec.suspend` and `spec.managedBy`, dispatched by the manager's
    /// generic adapter only (its Workload comes from the kind's own Kueue integration).
    External(External),
}

/// An external kind: group, version, kind, and its resource (plural) name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct External {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
}

/// A framework name that names no kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    #[error(
        "unknown framework {0:?}: expected one of batch/job, jobset.x-k8s.io/jobset, \
         trainer.kubeflow.org/trainjob, ray.io/rayjob"
    )]
    UnknownFramework(String),
    #[error(
        "external framework {0:?}: expected Kind.version.group, e.g. PipelineRun.v1.tekton.dev"
    )]
    BadExternal(String),
}

impl Kind {
    /// The built-in kinds, in the order they are listed.
    pub const BUILT_IN: [Kind; 4] = [Kind::Job, Kind::JobSet, Kind::TrainJob, Kind::RayJob];

    /// Whether the worker runs objects of this kind (the Job loop, or `worker::integrations`).
    pub fn runs_on_worker(&self) -> bool {
        !matches!(self, Kind::External(_))
    }

    /// A built-in kind from its Kueue framework name (`jobset.x-k8s.io/jobset`).
    pub fn from_framework(name: &str) -> Result<Kind, KindError> {
        Kind::BUILT_IN
            .into_iter()
            .find(|k| k.framework() == name)
            .ok_or_else(|| KindError::UnknownFramework(name.to_string()))
    }

    /// An external kind from `Kind.version.group` (the group may hold dots). Its plural is
    /// the lower-cased kind with an `s`, as kubebuilder names resources.
    pub fn external(name: &str) -> Result<Kind, KindError> {
        let bad = || KindError::BadExternal(name.to_string());
        let (kind, rest) = name.split_once('.').ok_or_else(bad)?;
        let (version, group) = rest.split_once('.').ok_or_else(bad)?;
        if kind.is_empty() || version.is_empty() || group.is_empty() {
            return Err(bad());
        }
        let external = Kind::External(External {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: format!("{}s", kind.to_ascii_lowercase()),
        });
        if Kind::BUILT_IN.iter().any(|b| b.gvk() == external.gvk()) {
            return Err(bad());
        }
        Ok(external)
    }

    /// Kueue's framework name (`group/kind` lower-cased; `batch/job` for Jobs).
    pub fn framework(&self) -> String {
        match self {
            Kind::External(e) => format!("{}.{}.{}", e.kind, e.version, e.group),
            _ => {
                let gvk = self.gvk();
                let group = if gvk.group.is_empty() {
                    "batch".into()
                } else {
                    gvk.group
                };
                format!("{group}/{}", gvk.kind.to_ascii_lowercase())
            }
        }
    }

    pub fn gvk(&self) -> GroupVersionKind {
        let (g, v, k) = match self {
            Kind::Job => ("batch", "v1", "Job"),
            Kind::JobSet => ("jobset.x-k8s.io", "v1alpha2", "JobSet"),
            Kind::TrainJob => ("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
            Kind::RayJob => ("ray.io", "v1", "RayJob"),
            Kind::External(e) => (e.group.as_str(), e.version.as_str(), e.kind.as_str()),
        };
        GroupVersionKind::gvk(g, v, k)
    }

    /// The API resource, for dynamic clients and watches.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(&self.gvk(), &self.plural())
    }

    /// The resource's plural name (`jobsets`).
    pub fn plural(&self) -> String {
        match self {
            Kind::External(e) => e.plural.clone(),
            _ => format!("{}s", self.gvk().kind.to_ascii_lowercase()),
        }
    }

    /// `apiVersion` of the kind's objects.
    pub fn api_version(&self) -> String {
        self.gvk().api_version()
    }

    /// The name of its CustomResourceDefinition (`jobsets.jobset.x-k8s.io`); `None` for Job.
    pub fn crd_name(&self) -> Option<String> {
        (*self != Kind::Job).then(|| format!("{}.{}", self.plural(), self.gvk().group))
    }

    /// The kind's pod sets, templates and progress; `None` for external kinds, whose
    /// Workloads their own integration builds.
    pub fn shape(&self) -> Option<&'static dyn Shape> {
        match self {
            Kind::Job => Some(&batch_job::BatchJob),
            Kind::JobSet => Some(&jobset::JobSet),
            Kind::TrainJob => Some(&trainjob::TrainJob),
            Kind::RayJob => Some(&rayjob::RayJob),
            Kind::External(_) => None,
        }
    }

    /// Whether an owner reference names this kind (any version of its group).
    pub fn owns(&self, api_version: &str, kind: &str) -> bool {
        let gvk = self.gvk();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        kind == gvk.kind && group == gvk.group
    }

    /// The prefix of its Workloads' names, as Kueue's (`jobset-<name>-<hash>`).
    pub fn workload_prefix(&self) -> String {
        self.gvk().kind.to_ascii_lowercase()
    }
}

/// The framework name.
impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.framework())
    }
}
