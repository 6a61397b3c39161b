//! Gate times the manager's clock cannot trust. The timeout is counted from an Open gate's
//! `lastTransitionTime`; a time in the future (the manager's clock went back after it opened
//! the gate, or the status was written by someone else) would hold the baton until that time,
//! perhaps for years. Such a gate counts as opened when the manager first saw it so, so the
//! baton passes at most one timeout later (one more after a manager restart).

use baton_crds::workload::GateState;
use chrono::{DateTime, Utc};

use baton_core::ungate::STORED_TIME_PRECISION;

use crate::manager::plan::replica::CachedReplica;

/// The Open MultiKueue gate's time, when it lies in the future beyond the stored precision.
pub fn future_open_time(replica: &CachedReplica, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let margin = chrono::Duration::from_std(STORED_TIME_PRECISION).unwrap_or_default();
    replica
        .gate()
        .filter(|g| g.state == GateState::Open)
        .and_then(|g| g.since)
        .filter(|at| {
            now.checked_add_signed(margin)
                .is_some_and(|limit| *at > limit)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_crds::constants::MULTIKUEUE_GATE;
    use baton_crds::gates::set_gate_state;
    use baton_crds::workload::{PreemptionGate, Workload, WorkloadSpec};

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("time")
    }

    fn replica(state: GateState, since: i64) -> CachedReplica {
        let mut r = Workload::new(
            "w",
            WorkloadSpec {
                preemption_gates: vec![PreemptionGate {
                    name: MULTIKUEUE_GATE.into(),
                }],
                ..Default::default()
            },
        );
        set_gate_state(
            r.status.get_or_insert_with(Default::default),
            MULTIKUEUE_GATE,
            state,
            at(since),
        );
        CachedReplica::compact(&r)
    }

    #[test]
    fn only_an_open_gate_beyond_the_stored_second_is_in_the_future() {
        assert_eq!(
            future_open_time(&replica(GateState::Open, 100), at(0)),
            Some(at(100))
        );
        assert_eq!(future_open_time(&replica(GateState::Open, 1), at(0)), None);
        assert_eq!(future_open_time(&replica(GateState::Open, -5), at(0)), None);
        assert_eq!(
            future_open_time(&replica(GateState::Closed, 100), at(0)),
            None
        );
    }

    #[test]
    fn the_observed_time_replaces_the_stored_one() {
        let r = replica(GateState::Open, 100).with_open_time(at(3));
        let gate = r.gate().expect("gate");
        assert_eq!(gate.since, Some(at(3)));
        assert_eq!(gate.state, GateState::Open);
    }
}
