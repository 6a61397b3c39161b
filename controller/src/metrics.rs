//! Prometheus metrics (prefix `baton_`), served in OpenMetrics text format on `/metrics`,
//! beside upstream Kueue's two MultiKueue counters under upstream's own names and labels
//! (`multikueue_workloads_dispatched_total`, `multikueue_workloads_admitted_total`), so that
//! Kueue users' dashboards and alerts keep working.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabel {
    pub cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReleaseLabel {
    pub cluster: String,
    /// The release reason (`NoPreemptionCandidates`, `PreemptionInsufficient`,
    /// `ClusterQueueInactive`).
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabel {
    pub cluster_queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PendingLabel {
    pub cluster_queue: String,
    /// `active` or `inadmissible`.
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassLabel {
    pub kind: String,
    pub name: String,
}

/// Upstream Kueue's labels of its MultiKueue counters (`pkg/metrics/metrics.go`): the manager
/// Workload's ClusterQueue, the worker cluster, and the controller replica's role.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamLabel {
    pub cluster_queue: String,
    pub cluster: String,
    pub replica_role: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PriorityLabel {
    /// The workload's priority class name (empty: none).
    pub priority_class: String,
}

/// The role of this controller replica, as upstream Kueue labels it (`replica_role`): a
/// replica under leader election counts only while it leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaRole {
    Leader,
    Standalone,
}

impl ReplicaRole {
    /// `Leader` under leader election, else `Standalone`.
    pub fn under_election(enabled: bool) -> Self {
        if enabled {
            Self::Leader
        } else {
            Self::Standalone
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Leader => "leader",
            Self::Standalone => "standalone",
        }
    }
}

/// A gauge counting the members of a set (e.g. workloads whose preemption gate is open now),
/// kept by marking each key in or out as it is looked at.
pub struct SetGauge<K> {
    members: Mutex<HashSet<K>>,
    gauge: Gauge,
}

impl<K: Hash + Eq> SetGauge<K> {
    fn new(gauge: Gauge) -> Self {
        Self {
            members: Mutex::default(),
            gauge,
        }
    }

    /// Marks `key` in (`member`) or out, and sets the gauge to the set's size.
    pub fn mark(&self, key: K, member: bool) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        if member {
            members.insert(key);
        } else {
            members.remove(&key);
        }
        self.gauge.set(members.len() as i64);
    }

    /// Keeps only the members `keep` accepts (after a relist: those still there).
    pub fn retain(&self, keep: impl Fn(&K) -> bool) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        members.retain(|k| keep(k));
        self.gauge.set(members.len() as i64);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabel {
    pub version: String,
}

/// Every metric Baton exports.
pub struct Metrics {
    registry: Registry,
    /// Every sample name the registry can expose (see [`Metrics::sample_names`]).
    names: Vec<String>,
    role: ReplicaRole,
    /// Upstream Kueue's `multikueue_workloads_dispatched_total`.
    pub upstream_dispatched: Family<UpstreamLabel, Counter>,
    /// Upstream Kueue's `multikueue_workloads_admitted_total`.
    pub upstream_admitted: Family<UpstreamLabel, Counter>,
    /// From a manager Workload's creation to its admission on a worker, by priority class.
    pub admission_wait: Family<PriorityLabel, Histogram>,
    /// Workloads not yet admitted with an open preemption gate on some worker.
    pub gates_open: SetGauge<baton_crds::WorkloadKey>,
    /// Writes of the MultiKueueCluster room summary (`status.baton`).
    pub room_writes: Family<ClusterLabel, Counter>,
    /// Manager Workload status writes that changed `status.baton`.
    pub view_writes: Counter,
    /// 1 once a status write showed that the Workload CRD prunes `status.baton`.
    pub view_pruned: Gauge,
    /// Manager Workloads woken and waiting to be handed to the reconciler.
    pub reconcile_backlog: Gauge,
    pub workloads_dispatched: Counter,
    pub workloads_admitted: Family<ClusterLabel, Counter>,
    pub replicas_created: Family<ClusterLabel, Counter>,
    pub replicas_deleted: Family<ClusterLabel, Counter>,
    pub workloads_redispatched: Counter,
    pub cluster_connected: Family<ClusterLabel, Gauge>,
    pub reconcile_duration: Histogram,
    pub reconcile_errors: Family<ErrorLabel, Counter>,
    pub gates_opened: Family<ClusterLabel, Counter>,
    pub gate_open_delay: Histogram,
    pub gate_timeouts: Counter,
    pub gate_releases: Family<ReleaseLabel, Counter>,
    pub workloads_gated: SetGauge<baton_crds::WorkloadKey>,
    pub wasted_preemptions: Family<ClusterLabel, Counter>,
    pub worker_wasted_preemptions: Counter,
    pub pending_workloads: Family<PendingLabel, Gauge>,
    pub quota_reservations: Family<QueueLabel, Counter>,
    pub preemptions: Family<ErrorLabel, Counter>,
    pub preemption_gated: Gauge,
    pub scheduling_cycle_duration: Histogram,
    pub class_annotation_errors: Family<ClassLabel, Counter>,
    pub status_write_conflicts: Counter,
    /// Events the full publishing queue turned away (see [`crate::events`]).
    pub events_dropped: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The metrics of a replica without leader election.
    pub fn new() -> Self {
        Self::with_role(ReplicaRole::Standalone)
    }

    pub fn with_role(role: ReplicaRole) -> Self {
        let mut root = Registry::default();
        let mut names = Vec::new();
        let upstream_dispatched = Family::<UpstreamLabel, Counter>::default();
        let upstream_admitted = Family::<UpstreamLabel, Counter>::default();
        {
            let upstream = root.sub_registry_with_prefix("multikueue");
            register(
                upstream,
                "multikueue",
                &mut names,
                "workloads_dispatched",
                "The total number of remote workloads created by the MultiKueue manager on a worker cluster, per 'cluster_queue' and 'cluster' (upstream Kueue's name and labels)",
                upstream_dispatched.clone(),
            );
            register(
                upstream,
                "multikueue",
                &mut names,
                "workloads_admitted",
                "The total number of remote workload admissions on a worker cluster, per 'cluster_queue' and 'cluster' (upstream Kueue's name and labels)",
                upstream_admitted.clone(),
            );
        }
        let registry = root.sub_registry_with_prefix("baton");
        let build_info = Family::<BuildLabel, Gauge>::default();
        build_info
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        register(
            registry,
            "baton",
            &mut names,
            "build_info",
            "Build information",
            build_info,
        );

        let m = Self {
            workloads_dispatched: Counter::default(),
            workloads_admitted: Family::default(),
            replicas_created: Family::default(),
            replicas_deleted: Family::default(),
            workloads_redispatched: Counter::default(),
            cluster_connected: Family::default(),
            reconcile_duration: Histogram::new(exponential_buckets(0.0005, 2.0, 16)),
            reconcile_errors: Family::default(),
            gates_opened: Family::default(),
            gate_open_delay: Histogram::new(exponential_buckets(0.005, 2.0, 18)),
            gate_timeouts: Counter::default(),
            gate_releases: Family::default(),
            workloads_gated: SetGauge::new(Gauge::default()),
            wasted_preemptions: Family::default(),
            worker_wasted_preemptions: Counter::default(),
            pending_workloads: Family::default(),
            quota_reservations: Family::default(),
            preemptions: Family::default(),
            preemption_gated: Gauge::default(),
            scheduling_cycle_duration: Histogram::new(exponential_buckets(0.0001, 2.0, 18)),
            class_annotation_errors: Family::default(),
            status_write_conflicts: Counter::default(),
            events_dropped: Counter::default(),
            registry: Registry::default(),
            names: Vec::new(),
            role,
            upstream_dispatched,
            upstream_admitted,
            admission_wait: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.5, 2.0, 16))
            }),
            gates_open: SetGauge::new(Gauge::default()),
            room_writes: Family::default(),
            view_writes: Counter::default(),
            view_pruned: Gauge::default(),
            reconcile_backlog: Gauge::default(),
        };
        register(
            registry,
            "baton",
            &mut names,
            "workloads_dispatched",
            "Workloads dispatched to worker clusters",
            m.workloads_dispatched.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workloads_admitted",
            "Workloads admitted, by worker cluster",
            m.workloads_admitted.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "replicas_created",
            "Replicas created, by worker cluster",
            m.replicas_created.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "replicas_deleted",
            "Replicas deleted, by worker cluster",
            m.replicas_deleted.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workloads_redispatched",
            "Workloads sent back to dispatch (evicted on their worker or worker lost)",
            m.workloads_redispatched.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_cluster_connected",
            "1 when the worker cluster is connected",
            m.cluster_connected.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "reconcile_duration_seconds",
            "Time to reconcile one manager Workload",
            m.reconcile_duration.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "reconcile_errors",
            "Reconcile errors, by reason",
            m.reconcile_errors.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "preemption_gates_opened",
            "Preemption gates opened, by worker cluster",
            m.gates_opened.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "preemption_gate_open_delay_seconds",
            "Time from a replica's first gated signal to its gate being opened",
            m.gate_open_delay.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "events_dropped",
            "Events not published because the publishing queue was full",
            m.events_dropped.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "preemption_gate_timeouts",
            "Gates opened because singleClusterPreemptionTimeout passed the baton on",
            m.gate_timeouts.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "preemption_gate_releases",
            "Gates opened at once because the baton's holder gave it back (it could no longer make room), by holder cluster and reason",
            m.gate_releases.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workloads_gated",
            "Workloads with a replica waiting for its preemption gate",
            m.workloads_gated.gauge.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "wasted_preemptions",
            "Replicas removed from a cluster the workload does not run on after they may have preempted there (their gate was opened or they held quota)",
            m.wasted_preemptions.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_wasted_preemptions",
            "Workloads this worker evicted for a preemptor that was deleted before it reserved quota",
            m.worker_wasted_preemptions.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_pending_workloads",
            "Pending workloads on this worker, by ClusterQueue and status (active or inadmissible)",
            m.pending_workloads.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_quota_reservations",
            "Workloads that reserved quota on this worker, by ClusterQueue",
            m.quota_reservations.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_preemptions",
            "Workloads preempted on this worker, by reason",
            m.preemptions.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_preemption_gated_workloads",
            "Workloads that could preempt but wait for their preemption gate",
            m.preemption_gated.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_scheduling_cycle_duration_seconds",
            "Time of one scheduling cycle (snapshot, decisions) on this worker",
            m.scheduling_cycle_duration.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_class_annotation_errors",
            "Malformed preemption-toleration annotations found on priority classes",
            m.class_annotation_errors.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_status_write_conflicts",
            "Workload status writes that lost a resourceVersion race (retried next cycle)",
            m.status_write_conflicts.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workload_admission_wait_seconds",
            "Time from a manager Workload's creation to its admission on a worker cluster, by priority class",
            m.admission_wait.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "preemption_gates_open",
            "Workloads not yet admitted whose preemption gate is open on some worker (the baton is held)",
            m.gates_open.gauge.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "worker_room_writes",
            "Writes of a MultiKueueCluster's room summary (status.baton), by worker cluster",
            m.room_writes.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workload_view_writes",
            "Manager Workload status writes that changed the replica view (status.baton)",
            m.view_writes.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "workload_view_pruned",
            "1 when the manager's Workload CRD prunes status.baton (upstream Kueue's CRD): the replica view is then no longer sent",
            m.view_pruned.clone(),
        );
        register(
            registry,
            "baton",
            &mut names,
            "reconcile_backlog",
            "Manager Workloads woken and waiting to be handed to the reconciler (a burst's backlog)",
            m.reconcile_backlog.clone(),
        );
        Self {
            registry: root,
            names,
            ..m
        }
    }

    /// Creates the per-worker series at zero when a worker connects, so that dashboards show
    /// 0 rather than nothing and the first increment is seen by `increase()`.
    pub fn worker_known(&self, cluster: &str) {
        let label = Self::cluster(cluster);
        for family in [
            &self.gates_opened,
            &self.wasted_preemptions,
            &self.replicas_created,
            &self.replicas_deleted,
            &self.workloads_admitted,
            &self.room_writes,
        ] {
            let _ = family.get_or_create(&label);
        }
        for reason in baton_crds::constants::ReleaseReason::ALL {
            let _ = self.gate_releases.get_or_create(&ReleaseLabel {
                cluster: cluster.to_string(),
                reason: reason.as_str().to_string(),
            });
        }
    }

    /// A replica was created on `cluster` for a manager Workload of `cluster_queue`.
    pub fn replica_created(&self, cluster: &str, cluster_queue: &str) {
        self.replicas_created
            .get_or_create(&Self::cluster(cluster))
            .inc();
        self.upstream_dispatched
            .get_or_create(&self.upstream(cluster, cluster_queue))
            .inc();
    }

    /// A manager Workload of `cluster_queue` and `priority_class` was admitted on `cluster`,
    /// `waited` seconds after its creation.
    pub fn admitted(&self, cluster: &str, cluster_queue: &str, priority_class: &str, waited: f64) {
        self.workloads_admitted
            .get_or_create(&Self::cluster(cluster))
            .inc();
        self.upstream_admitted
            .get_or_create(&self.upstream(cluster, cluster_queue))
            .inc();
        self.admission_wait
            .get_or_create(&PriorityLabel {
                priority_class: priority_class.to_string(),
            })
            .observe(waited.max(0.0));
    }

    fn upstream(&self, cluster: &str, cluster_queue: &str) -> UpstreamLabel {
        UpstreamLabel {
            cluster_queue: cluster_queue.to_string(),
            cluster: cluster.to_string(),
            replica_role: self.role.label(),
        }
    }

    /// The name of every sample the registry can expose (counters with `_total`, histograms
    /// with `_bucket`, `_sum` and `_count`), as registered: a family shows in the exposition
    /// only once it has a child, its name is here from the start.
    pub fn sample_names(&self) -> &[String] {
        &self.names
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!(error = %e, "cannot encode metrics");
        }
        out
    }

    pub fn cluster(cluster: &str) -> ClusterLabel {
        ClusterLabel {
            cluster: cluster.to_string(),
        }
    }
}

/// Registers `metric` as `name` under `prefix` and records the sample names it exposes.
fn register(
    registry: &mut Registry,
    prefix: &str,
    names: &mut Vec<String>,
    name: &str,
    help: &str,
    metric: impl prometheus_client::registry::Metric,
) {
    use prometheus_client::metrics::MetricType;
    let suffixes: &[&str] = match metric.metric_type() {
        MetricType::Counter => &["_total"],
        MetricType::Histogram => &["_bucket", "_sum", "_count"],
        _ => &[""],
    };
    names.extend(suffixes.iter().map(|s| format!("{prefix}_{name}{s}")));
    registry.register(name, help, metric);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_exposed_with_the_baton_prefix() {
        let m = Metrics::new();
        m.gates_opened
            .get_or_create(&Metrics::cluster("worker-2"))
            .inc();
        m.gate_open_delay.observe(0.02);
        let text = m.encode();
        assert!(
            text.contains("baton_preemption_gates_opened_total{cluster=\"worker-2\"} 1"),
            "{text}"
        );
        assert!(text.contains("baton_build_info{version="), "{text}");
        assert!(
            text.contains("baton_preemption_gate_open_delay_seconds_count 1"),
            "{text}"
        );
        assert!(
            text.contains("baton_preemption_gate_timeouts_total 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn upstream_counters_keep_upstream_names_and_labels() {
        let m = Metrics::with_role(ReplicaRole::Leader);
        m.replica_created("worker-1", "cq");
        m.admitted("worker-1", "cq", "high", 3.0);
        let text = m.encode();
        for line in [
            "multikueue_workloads_dispatched_total{cluster_queue=\"cq\",cluster=\"worker-1\",replica_role=\"leader\"} 1",
            "multikueue_workloads_admitted_total{cluster_queue=\"cq\",cluster=\"worker-1\",replica_role=\"leader\"} 1",
            "baton_replicas_created_total{cluster=\"worker-1\"} 1",
            "baton_workload_admission_wait_seconds_count{priority_class=\"high\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(!text.contains("baton_multikueue"), "{text}");
        let standalone = Metrics::new();
        standalone.replica_created("w", "q");
        assert!(standalone.encode().contains("replica_role=\"standalone\""));
    }

    #[test]
    fn a_known_worker_has_its_series_at_zero() {
        let m = Metrics::new();
        m.worker_known("w");
        let text = m.encode();
        for line in [
            "baton_wasted_preemptions_total{cluster=\"w\"} 0",
            "baton_preemption_gate_releases_total{cluster=\"w\",reason=\"PreemptionInsufficient\"} 0",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }

    #[test]
    fn a_set_gauge_counts_members_once() {
        let m = Metrics::new();
        let key = baton_crds::WorkloadKey::new("ns", "a");
        m.gates_open.mark(key.clone(), true);
        m.gates_open.mark(key.clone(), true);
        m.gates_open
            .mark(baton_crds::WorkloadKey::new("ns", "b"), true);
        assert!(m.encode().contains("baton_preemption_gates_open 2"));
        m.gates_open.mark(key, false);
        assert!(m.encode().contains("baton_preemption_gates_open 1"));
        m.gates_open.retain(|k| k.name() != "b");
        assert!(m.encode().contains("baton_preemption_gates_open 0"));
    }

    #[test]
    fn sample_names_come_from_the_registry() {
        let metrics = Metrics::new();
        let names = metrics.sample_names();
        for name in [
            "baton_reconcile_duration_seconds_bucket",
            "baton_preemption_gate_releases_total",
            "baton_worker_cluster_connected",
            "multikueue_workloads_dispatched_total",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
    }
}
