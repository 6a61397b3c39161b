//! Prometheus metrics (prefix `baton_`), served in OpenMetrics text format on `/metrics`.

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabel {
    pub version: String,
}

/// Every metric Baton exports.
pub struct Metrics {
    registry: Registry,
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
    pub workloads_gated: Gauge,
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
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("baton");
        let build_info = Family::<BuildLabel, Gauge>::default();
        build_info
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        registry.register("build_info", "Build information", build_info);

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
            workloads_gated: Gauge::default(),
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
        };
        registry.register(
            "workloads_dispatched",
            "Workloads dispatched to worker clusters",
            m.workloads_dispatched.clone(),
        );
        registry.register(
            "workloads_admitted",
            "Workloads admitted, by worker cluster",
            m.workloads_admitted.clone(),
        );
        registry.register(
            "replicas_created",
            "Replicas created, by worker cluster",
            m.replicas_created.clone(),
        );
        registry.register(
            "replicas_deleted",
            "Replicas deleted, by worker cluster",
            m.replicas_deleted.clone(),
        );
        registry.register(
            "workloads_redispatched",
            "Workloads sent back to dispatch (evicted on their worker or worker lost)",
            m.workloads_redispatched.clone(),
        );
        registry.register(
            "worker_cluster_connected",
            "1 when the worker cluster is connected",
            m.cluster_connected.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time to reconcile one manager Workload",
            m.reconcile_duration.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Reconcile errors, by reason",
            m.reconcile_errors.clone(),
        );
        registry.register(
            "preemption_gates_opened",
            "Preemption gates opened, by worker cluster",
            m.gates_opened.clone(),
        );
        registry.register(
            "preemption_gate_open_delay_seconds",
            "Time from a replica's first gated signal to its gate being opened",
            m.gate_open_delay.clone(),
        );
        registry.register(
            "events_dropped",
            "Events not published because the publishing queue was full",
            m.events_dropped.clone(),
        );
        registry.register(
            "preemption_gate_timeouts",
            "Gates opened because singleClusterPreemptionTimeout passed the baton on",
            m.gate_timeouts.clone(),
        );
        registry.register(
            "preemption_gate_releases",
            "Gates opened at once because the baton's holder gave it back (it could no longer make room), by holder cluster and reason",
            m.gate_releases.clone(),
        );
        registry.register(
            "workloads_gated",
            "Workloads with a replica waiting for its preemption gate",
            m.workloads_gated.clone(),
        );
        registry.register(
            "wasted_preemptions",
            "Replicas removed from a cluster the workload does not run on after they may have preempted there (their gate was opened or they held quota)",
            m.wasted_preemptions.clone(),
        );
        registry.register(
            "worker_wasted_preemptions",
            "Workloads this worker evicted for a preemptor that was deleted before it reserved quota",
            m.worker_wasted_preemptions.clone(),
        );
        registry.register(
            "worker_pending_workloads",
            "Pending workloads on this worker, by ClusterQueue and status (active or inadmissible)",
            m.pending_workloads.clone(),
        );
        registry.register(
            "worker_quota_reservations",
            "Workloads that reserved quota on this worker, by ClusterQueue",
            m.quota_reservations.clone(),
        );
        registry.register(
            "worker_preemptions",
            "Workloads preempted on this worker, by reason",
            m.preemptions.clone(),
        );
        registry.register(
            "worker_preemption_gated_workloads",
            "Workloads that could preempt but wait for their preemption gate",
            m.preemption_gated.clone(),
        );
        registry.register(
            "worker_scheduling_cycle_duration_seconds",
            "Time of one scheduling cycle (snapshot, decisions) on this worker",
            m.scheduling_cycle_duration.clone(),
        );
        registry.register(
            "worker_class_annotation_errors",
            "Malformed preemption-toleration annotations found on priority classes",
            m.class_annotation_errors.clone(),
        );
        registry.register(
            "worker_status_write_conflicts",
            "Workload status writes that lost a resourceVersion race (retried next cycle)",
            m.status_write_conflicts.clone(),
        );
        Self { registry, ..m }
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
}
