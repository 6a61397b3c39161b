//! Baton's API: the Kueue `kueue.x-k8s.io/v1beta2` kinds Baton implements, with the
//! preemption gates of KEP-8303, and the pure helpers every controller needs on them.
//!
//! Field names and shapes follow upstream Kueue so that Kueue manifests apply unchanged
//! (see `shared/DESIGN.md` §2). Nothing in this crate talks to a cluster or reads a clock.

pub mod admission_check;
pub mod cluster_queue;
pub mod conditions;
pub mod constants;
pub mod demand;
pub mod gates;
pub mod generate;
pub mod key;
pub mod local_queue;
pub mod multikueue;
pub mod pod_demand;
pub mod priority;
pub mod priority_class;
pub mod quantity;
pub mod resource_flavor;
pub mod schema;
pub mod time;
pub mod workload;

pub use admission_check::{AdmissionCheck, AdmissionCheckSpec};
pub use cluster_queue::{ClusterQueue, ClusterQueueSpec, ClusterQueueStatus};
pub use key::{ParseKeyError, WorkloadKey};
pub use local_queue::{LocalQueue, LocalQueueSpec, LocalQueueStatus};
pub use multikueue::{
    MultiKueueCluster, MultiKueueClusterSpec, MultiKueueConfig, MultiKueueConfigSpec,
};
pub use priority_class::{WorkloadPriorityClass, WorkloadPriorityClassSpec};
pub use resource_flavor::{ResourceFlavor, ResourceFlavorSpec};
pub use workload::{Workload, WorkloadSpec, WorkloadStatus};

/// The API group of every kind in this crate.
pub const GROUP: &str = "kueue.x-k8s.io";
/// The served and stored version.
pub const VERSION: &str = "v1beta2";
