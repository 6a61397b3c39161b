//! Where a manager Workload stands with its gates, as the two gate gauges count it
//! (`baton_workloads_gated`, `baton_preemption_gates_open`). Two separate facts: while one
//! replica holds the baton (its gate Open), another may wait for it (gate Closed, blocked
//! signal), and the workload is counted by both.
//!
//! Only a workload that is routed, not admitted on a worker (`status.clusterName` unset)
//! and not being deleted counts: an admitted one waits for nothing, and a deleted one will
//! not be admitted, whatever its replicas still show (its last reconcile may remove the
//! finalizer before they are gone, and it is not looked at again).

use std::collections::BTreeMap;

use baton_crds::workload::{GateState, Workload};

use crate::manager::plan::replica::CachedReplica;

/// The workload's standing with its gates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GateStanding {
    /// Some replica waits for its gate: Closed, with a blocked signal.
    pub waiting: bool,
    /// Some replica holds the baton: its gate is Open.
    pub holding: bool,
}

/// The standing of `wl` (`routed`: it has a MultiKueue route) with its `replicas` by
/// cluster.
pub fn gate_standing(
    wl: &Workload,
    routed: bool,
    replicas: &BTreeMap<String, CachedReplica>,
) -> GateStanding {
    let undecided = routed
        && wl.metadata.deletion_timestamp.is_none()
        && wl.status.as_ref().is_none_or(|s| s.cluster_name.is_none());
    if !undecided {
        return GateStanding::default();
    }
    let views = || replicas.iter().map(|(cluster, r)| r.view(cluster));
    GateStanding {
        waiting: views()
            .any(|v| v.gate.is_some_and(|g| g.state == GateState::Closed) && v.signal.is_some()),
        holding: views().any(|v| v.gate.is_some_and(|g| g.state == GateState::Open)),
    }
}

#[cfg(test)]
mod tests {
    use baton_core::ungate::ReplicaGating;
    use baton_crds::conditions::{ConditionStatus, NewCondition, set_condition};
    use baton_crds::constants::{MULTIKUEUE_GATE, condition, reason};
    use baton_crds::gates::set_gate_state;
    use baton_crds::time::to_kube;
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::manager::plan::replica::build_replica;

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap_or_default()
    }

    fn manager() -> Workload {
        let mut wl = Workload::new("job", Default::default());
        wl.metadata.namespace = Some("ns".into());
        wl
    }

    /// A gated replica, signalling when `signal`, its gate set to `gate`.
    fn replica(gate: GateState, signal: bool) -> CachedReplica {
        let mut r = build_replica(&manager(), None, "multikueue", ReplicaGating::Gated);
        let status = r.status.get_or_insert_with(Default::default);
        set_gate_state(status, MULTIKUEUE_GATE, gate, t(1));
        if signal {
            set_condition(
                &mut status.conditions,
                NewCondition::new(
                    condition::QUOTA_RESERVATION_BLOCKED,
                    ConditionStatus::True,
                    reason::PREEMPTION_GATED,
                    "",
                ),
                t(0),
            );
        }
        CachedReplica::compact(&r)
    }

    /// w1 holds the baton, w2 waits for it.
    fn held_and_awaited() -> BTreeMap<String, CachedReplica> {
        BTreeMap::from([
            ("w1".to_string(), replica(GateState::Open, true)),
            ("w2".to_string(), replica(GateState::Closed, true)),
        ])
    }

    #[test]
    fn one_replica_may_hold_the_baton_while_another_waits() {
        let standing = gate_standing(&manager(), true, &held_and_awaited());
        assert_eq!(
            standing,
            GateStanding {
                waiting: true,
                holding: true
            }
        );
    }

    #[test]
    fn a_closed_gate_without_a_signal_waits_for_nothing() {
        let replicas = BTreeMap::from([("w1".to_string(), replica(GateState::Closed, false))]);
        assert_eq!(
            gate_standing(&manager(), true, &replicas),
            GateStanding::default()
        );
    }

    #[test]
    fn a_workload_unrouted_admitted_or_being_deleted_counts_for_neither() {
        let replicas = held_and_awaited();
        assert_eq!(
            gate_standing(&manager(), false, &replicas),
            GateStanding::default(),
            "unrouted"
        );
        let mut admitted = manager();
        admitted
            .status
            .get_or_insert_with(Default::default)
            .cluster_name = Some("w1".into());
        assert_eq!(
            gate_standing(&admitted, true, &replicas),
            GateStanding::default(),
            "admitted on w1"
        );
        let mut deleted = manager();
        deleted.metadata.deletion_timestamp = Some(to_kube(t(5)));
        assert_eq!(
            gate_standing(&deleted, true, &replicas),
            GateStanding::default(),
            "being deleted"
        );
    }
}
