//! KEP-8303 preemption gates: reading their effective state and changing it.
//!
//! Rules (DESIGN.md §2): a gate listed in `spec.preemptionGates` with no status entry is
//! Closed. Baton writes both `state` and `position` (upstream Kueue's name); when the two
//! disagree, `position` wins, because only a non-Baton writer updates one without the other
//! and its write is the newer one.

use chrono::{DateTime, Utc};

use crate::time::{to_chrono, to_kube};
use crate::workload::{GateState, PreemptionGateState, Workload, WorkloadStatus};

/// One gate of a workload as the decision code sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateView {
    pub name: String,
    pub state: GateState,
    /// When the gate last changed state; `None` for a gate with no status entry yet.
    pub last_transition_time: Option<DateTime<Utc>>,
}

/// The state a status entry stands for.
pub fn entry_state(entry: &PreemptionGateState) -> GateState {
    match (entry.state, entry.position) {
        (_, Some(position)) => position,
        (Some(state), None) => state,
        (None, None) => GateState::Closed,
    }
}

/// Every gate listed in spec, with its effective state.
pub fn gates(workload: &Workload) -> Vec<GateView> {
    let status = workload.status.as_ref();
    workload
        .spec
        .preemption_gates
        .iter()
        .map(|gate| {
            let entry =
                status.and_then(|s| s.preemption_gates.iter().find(|e| e.name == gate.name));
            GateView {
                name: gate.name.clone(),
                state: entry.map(entry_state).unwrap_or(GateState::Closed),
                last_transition_time: entry.map(|e| to_chrono(&e.last_transition_time)),
            }
        })
        .collect()
}

/// The effective state of one gate, or `None` when the gate is not listed in spec.
pub fn gate_state(workload: &Workload, name: &str) -> Option<GateState> {
    gates(workload)
        .into_iter()
        .find(|g| g.name == name)
        .map(|g| g.state)
}

/// Whether any gate forbids preemption. A workload without gates may preempt.
pub fn preemption_gated(workload: &Workload) -> bool {
    gates(workload).iter().any(|g| g.state == GateState::Closed)
}

/// Sets one gate's status entry to `state`, writing both `state` and `position`. The transition
/// time moves only when the effective state changes. Returns whether the status changed.
pub fn set_gate_state(
    status: &mut WorkloadStatus,
    name: &str,
    state: GateState,
    now: DateTime<Utc>,
) -> bool {
    match status.preemption_gates.iter_mut().find(|e| e.name == name) {
        Some(entry) => {
            let mut changed = false;
            if entry_state(entry) != state {
                entry.last_transition_time = to_kube(now);
                changed = true;
            }
            if entry.state != Some(state) || entry.position != Some(state) {
                entry.state = Some(state);
                entry.position = Some(state);
                changed = true;
            }
            changed
        }
        None => {
            status.preemption_gates.push(PreemptionGateState {
                name: name.to_string(),
                state: Some(state),
                position: Some(state),
                last_transition_time: to_kube(now),
            });
            true
        }
    }
}

/// Adds a Closed status entry for every spec gate that has none, and drops entries for gates no
/// longer in spec. Returns whether the status changed.
pub fn initialize_gates(workload: &mut Workload, now: DateTime<Utc>) -> bool {
    let names: Vec<String> = workload
        .spec
        .preemption_gates
        .iter()
        .map(|g| g.name.clone())
        .collect();
    let status = workload.status.get_or_insert_with(WorkloadStatus::default);
    let before = status.preemption_gates.len();
    status.preemption_gates.retain(|e| names.contains(&e.name));
    let mut changed = status.preemption_gates.len() != before;
    for name in &names {
        if !status.preemption_gates.iter().any(|e| &e.name == name) {
            set_gate_state(status, name, GateState::Closed, now);
            changed = true;
        }
    }
    changed
}

/// Closes every spec gate again (on eviction, KEP-8303). Returns whether the status changed.
pub fn close_all_gates(workload: &mut Workload, now: DateTime<Utc>) -> bool {
    let names: Vec<String> = workload
        .spec
        .preemption_gates
        .iter()
        .map(|g| g.name.clone())
        .collect();
    let status = workload.status.get_or_insert_with(WorkloadStatus::default);
    let mut changed = false;
    for name in &names {
        changed |= set_gate_state(status, name, GateState::Closed, now);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{PreemptionGate, WorkloadSpec};
    use chrono::{Duration, TimeZone};

    const GATE: &str = crate::constants::MULTIKUEUE_GATE;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0)
            .single()
            .expect("valid date")
    }

    fn gated() -> Workload {
        Workload::new(
            "wl",
            WorkloadSpec {
                preemption_gates: vec![PreemptionGate { name: GATE.into() }],
                ..Default::default()
            },
        )
    }

    fn entry(state: Option<GateState>, position: Option<GateState>) -> PreemptionGateState {
        PreemptionGateState {
            name: GATE.into(),
            state,
            position,
            last_transition_time: to_kube(t0()),
        }
    }

    #[test]
    fn spec_gate_without_status_is_closed() {
        let wl = gated();
        assert_eq!(gate_state(&wl, GATE), Some(GateState::Closed));
        assert!(preemption_gated(&wl));
        assert_eq!(gates(&wl)[0].last_transition_time, None);
    }

    #[test]
    fn workload_without_gates_may_preempt() {
        let wl = Workload::new("wl", WorkloadSpec::default());
        assert!(!preemption_gated(&wl));
        assert_eq!(gate_state(&wl, GATE), None);
    }

    #[test]
    fn status_only_gate_is_ignored() {
        let mut wl = Workload::new("wl", WorkloadSpec::default());
        wl.status = Some(WorkloadStatus {
            preemption_gates: vec![entry(Some(GateState::Closed), None)],
            ..Default::default()
        });
        assert!(!preemption_gated(&wl));
    }

    #[test]
    fn entry_state_prefers_position_when_fields_disagree() {
        assert_eq!(
            entry_state(&entry(Some(GateState::Open), None)),
            GateState::Open
        );
        assert_eq!(
            entry_state(&entry(None, Some(GateState::Open))),
            GateState::Open
        );
        assert_eq!(entry_state(&entry(None, None)), GateState::Closed);
        assert_eq!(
            entry_state(&entry(Some(GateState::Closed), Some(GateState::Open))),
            GateState::Open
        );
        assert_eq!(
            entry_state(&entry(Some(GateState::Open), Some(GateState::Closed))),
            GateState::Closed
        );
    }

    #[test]
    fn open_gate_allows_preemption_and_reports_time() {
        let mut wl = gated();
        let status = wl.status.get_or_insert_with(Default::default);
        assert!(set_gate_state(status, GATE, GateState::Open, t0()));
        assert!(!preemption_gated(&wl));
        assert_eq!(gates(&wl)[0].last_transition_time, Some(t0()));
        let entry = &wl.status.as_ref().expect("status").preemption_gates[0];
        assert_eq!(
            (entry.state, entry.position),
            (Some(GateState::Open), Some(GateState::Open))
        );
    }

    #[test]
    fn setting_the_same_state_keeps_the_transition_time() {
        let mut wl = gated();
        let status = wl.status.get_or_insert_with(Default::default);
        set_gate_state(status, GATE, GateState::Open, t0());
        assert!(!set_gate_state(
            status,
            GATE,
            GateState::Open,
            t0() + Duration::minutes(3)
        ));
        assert_eq!(gates(&wl)[0].last_transition_time, Some(t0()));
    }

    #[test]
    fn setting_fills_a_missing_field_without_moving_the_time() {
        let mut status = WorkloadStatus {
            preemption_gates: vec![entry(None, Some(GateState::Open))],
            ..Default::default()
        };
        assert!(set_gate_state(
            &mut status,
            GATE,
            GateState::Open,
            t0() + Duration::minutes(1)
        ));
        assert_eq!(status.preemption_gates[0].state, Some(GateState::Open));
        assert_eq!(
            to_chrono(&status.preemption_gates[0].last_transition_time),
            t0()
        );
    }

    #[test]
    fn initialize_adds_closed_entries_once_and_drops_stale_ones() {
        let mut wl = gated();
        wl.status = Some(WorkloadStatus {
            preemption_gates: vec![PreemptionGateState {
                name: "example.com/stale".into(),
                ..entry(Some(GateState::Open), None)
            }],
            ..Default::default()
        });
        assert!(initialize_gates(&mut wl, t0()));
        let status = wl.status.as_ref().expect("status");
        assert_eq!(status.preemption_gates.len(), 1);
        assert_eq!(status.preemption_gates[0].name, GATE);
        assert_eq!(entry_state(&status.preemption_gates[0]), GateState::Closed);
        assert!(!initialize_gates(&mut wl, t0() + Duration::seconds(1)));
    }

    #[test]
    fn close_all_resets_open_gates_with_a_new_time() {
        let mut wl = gated();
        set_gate_state(
            wl.status.get_or_insert_with(Default::default),
            GATE,
            GateState::Open,
            t0(),
        );
        let later = t0() + Duration::minutes(2);
        assert!(close_all_gates(&mut wl, later));
        assert_eq!(gate_state(&wl, GATE), Some(GateState::Closed));
        assert_eq!(gates(&wl)[0].last_transition_time, Some(later));
        assert!(!close_all_gates(&mut wl, later + Duration::minutes(1)));
    }
}
