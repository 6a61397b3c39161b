//! Well-known names: condition types, reasons, gate names, labels and annotations.

/// The preemption gate the MultiKueue manager puts on every replica it creates.
pub const MULTIKUEUE_GATE: &str = "kueue.x-k8s.io/multikueue";
/// The `controllerName` of an AdmissionCheck handled by the MultiKueue manager.
pub const MULTIKUEUE_CONTROLLER_NAME: &str = "kueue.x-k8s.io/multikueue";
/// Label on replicas naming the manager that created them.
pub const MULTIKUEUE_ORIGIN_LABEL: &str = "kueue.x-k8s.io/multikueue-origin";
/// Annotation on a Workload evicted by preemption: its preemptor's `namespace/name` (a
/// [`crate::WorkloadKey`]). The admission loop writes it with the eviction, in its own patch
/// (a status write cannot change metadata), and reads it back after a restart while the
/// workload's `Evicted` condition is True for `Preempted`; otherwise it is stale and ignored.
/// The condition's message names the preemptor too, for people; code reads only this.
pub const PREEMPTED_BY_ANNOTATION: &str = "baton.dev/preempted-by";
/// Annotation the manager puts on a replica (value `"true"`) when it passes the baton on at
/// once on a release (Baton extension, DESIGN.md §3): only then does the worker shim give the
/// baton back when it can no longer make room. Without it (FCFS by default, KEP-8303 exactly)
/// a holder keeps its Open gate and the baton passes on after the timeout.
pub const RELEASE_ON_FAILURE_ANNOTATION: &str = "baton.dev/release-on-failure";

/// Workload condition types.
pub mod condition {
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    pub const ADMITTED: &str = "Admitted";
    pub const FINISHED: &str = "Finished";
    pub const EVICTED: &str = "Evicted";
    pub const PREEMPTED: &str = "Preempted";
    pub const REQUEUED: &str = "Requeued";
    pub const POD_READY: &str = "PodsReady";
    pub const DEACTIVATION_TARGET: &str = "DeactivationTarget";
    /// KEP-8303: quota could be reserved by preempting, but a closed gate forbids it.
    pub const QUOTA_RESERVATION_BLOCKED: &str = "QuotaReservationBlocked";
    /// The same signal as written by upstream Kueue ≥ 0.17 workers.
    pub const BLOCKED_ON_PREEMPTION_GATES: &str = "BlockedOnPreemptionGates";
    /// MultiKueueCluster connectivity.
    pub const ACTIVE: &str = "Active";
}

/// Condition reasons.
pub mod reason {
    /// The workload could reserve quota by preempting, but a closed gate forbids it.
    pub const PREEMPTION_GATED: &str = "PreemptionGated";
    /// Baton extension, on `QuotaReservationBlocked=True` of a replica whose gate is Closed:
    /// it does not fit yet but will without evicting anyone, once workloads already stopping
    /// (evicted for other work) are gone, within `preemptionCost.stopSeconds` (its
    /// `victims` is 0). Not a request for the baton: the manager opens no other gate
    /// meanwhile (DESIGN.md §3, prefer admission without preemption).
    pub const ROOM_EXPECTED: &str = "RoomExpected";
    pub const PREEMPTED: &str = "Preempted";
    pub const IN_CLUSTER_QUEUE: &str = "InClusterQueue";
    pub const IN_COHORT_RECLAMATION: &str = "InCohortReclamation";
    pub const IN_COHORT_RECLAIM_WHILE_BORROWING: &str = "InCohortReclaimWhileBorrowing";
    pub const PENDING: &str = "Pending";
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    pub const ADMITTED: &str = "Admitted";
    pub const ACTIVE: &str = "Active";
    pub const BAD_KUBE_CONFIG: &str = "BadKubeConfig";
    pub const INSECURE_KUBE_CONFIG: &str = "InsecureKubeConfig";
    pub const CLIENT_CONNECTION_FAILED: &str = "ClientConnectionFailed";
    /// `Finished` on a worker whose prebuilt workload no longer matches its Job (upstream
    /// Kueue's `WorkloadFinishedReasonOutOfSync`): a sync failure, not a completion.
    pub const OUT_OF_SYNC: &str = "OutOfSync";
    /// Upstream Kueue's event reason for every MultiKueue admission-check decision.
    pub const MULTIKUEUE: &str = "MultiKueue";
}

/// Why a replica that held the baton gave it back (Baton extension, DESIGN.md §3): the reason
/// of its `QuotaReservationBlocked=False` condition, written by the worker shim together with
/// its MultiKueue gate set back to Closed, when the preemption the gate allowed can no longer
/// make room. The manager then passes the baton on at once instead of after
/// `singleClusterPreemptionTimeout`. Upstream Kueue workers never write these reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReleaseReason {
    /// No admitted workload may be evicted for it any more: none of lower priority, or all
    /// tolerate it, or a disruption budget protects them (`NoPreemptionCandidates`).
    NoCandidates,
    /// Evicting every candidate would still not make it fit: its victims are gone and it does
    /// not fit, or the quota was lowered (`PreemptionInsufficient`).
    Insufficient,
    /// Its ClusterQueue is inactive, or its queue is gone (`ClusterQueueInactive`).
    QueueInactive,
}

impl ReleaseReason {
    pub const ALL: [ReleaseReason; 3] = [
        ReleaseReason::NoCandidates,
        ReleaseReason::Insufficient,
        ReleaseReason::QueueInactive,
    ];

    /// The condition reason that says it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::NoCandidates => "NoPreemptionCandidates",
            ReleaseReason::Insufficient => "PreemptionInsufficient",
            ReleaseReason::QueueInactive => "ClusterQueueInactive",
        }
    }

    /// Reads a condition reason; `None` for any other reason.
    pub fn parse(reason: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == reason)
    }
}

impl std::fmt::Display for ReleaseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Annotations read from a victim's priority class (preemption toleration, KEP-4664).
pub mod toleration {
    pub const PREFIX: &str = "preemption-toleration.scheduling.x-k8s.io/";
    pub const MINIMUM_PREEMPTABLE_PRIORITY: &str =
        "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority";
    pub const TOLERATION_SECONDS: &str =
        "preemption-toleration.scheduling.x-k8s.io/toleration-seconds";
    pub const ALLOW_DISRUPTION_BY_PRIORITY: &str = "preemption-toleration.scheduling.x-k8s.io/allow-disruption-by-priority-greater-than-or-equal";
    /// Upper bound of `allow-disruption-by-priority-greater-than-or-equal` (user priorities end here).
    pub const MAX_ALLOW_DISRUPTION_PRIORITY: i64 = 2_000_000_000;
}

/// Labels and annotations of Kueue's batch/v1 Job integration (DESIGN.md §8).
pub mod job {
    /// The LocalQueue a Job is submitted to; a Job without it is not Baton's business.
    pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
    /// The WorkloadPriorityClass of a Job's Workload.
    pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
    /// Binds a Job to an existing Workload (the MultiKueue replica) instead of creating one.
    /// Accepted as a label or as an annotation.
    pub const PREBUILT_WORKLOAD_LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";
    /// `spec.managedBy` of a Job the MultiKueue manager dispatches to a worker.
    pub const MULTIKUEUE_MANAGED_BY: &str = "kueue.x-k8s.io/multikueue";
    /// `spec.managedBy` of a Job left to the built-in Job controller (same as no value).
    pub const JOB_CONTROLLER_MANAGED_BY: &str = "kubernetes.io/job-controller";
    /// The uid of the Job a Workload was created for (a label on the Workload).
    pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
    /// The pod set of a Job's Workload.
    pub const POD_SET_NAME: &str = "main";
}
