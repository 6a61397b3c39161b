//! (b) No two gates of one workload open less than `singleClusterPreemptionTimeout` apart:
//! a replica's gate counts from its Closed → Open transition until it closes again (a
//! victim's gates reset) or the replica is deleted, as the manager's ungating rule reads them.

use std::collections::{BTreeMap, HashMap};

use baton_crds::workload::GateState;

use super::{CheckConfig, GATE_TIMESTAMP_SLACK, Invariant, Outcome, Violation, worker_changes};
use crate::chaos::log::{Event, Millis};

#[derive(Clone, Debug)]
struct Opened {
    at: Millis,
    rv: u64,
    uid: String,
}

pub fn check(events: &[Event], config: &CheckConfig, outcome: &mut Outcome) {
    let mut open: HashMap<String, BTreeMap<usize, Opened>> = HashMap::new();
    for change in worker_changes(events) {
        let now_open = !change.deleted && change.snapshot.gate == Some(GateState::Open);
        let per_worker = open.entry(change.name.clone()).or_default();
        let was = per_worker
            .get(&change.cluster)
            .filter(|o| o.uid == change.snapshot.uid)
            .cloned();
        if !now_open {
            per_worker.remove(&change.cluster);
            continue;
        }
        if was.is_some() {
            continue;
        }
        outcome.measures.gate_openings += 1;
        // The latest opening still open elsewhere is the one the timeout counts from.
        let previous = per_worker
            .iter()
            .filter(|(w, _)| **w != change.cluster)
            .max_by_key(|(_, o)| o.at)
            .map(|(w, o)| (*w, o.clone()));
        if let Some((worker, before)) = previous {
            let gap = change.at.saturating_sub(before.at);
            let m = &mut outcome.measures;
            m.baton_passes += 1;
            m.min_baton_gap = Some(m.min_baton_gap.map_or(gap, |g| g.min(gap)));
            if gap + GATE_TIMESTAMP_SLACK < config.preemption_timeout {
                outcome.violations.push(Violation {
                    invariant: Invariant::GatesTooClose,
                    workload: change.name.clone(),
                    evidence: format!(
                        "gate opened on worker-{worker} (uid {}, {} ms, rv {}) and on worker-{} (uid {}, {} ms, rv {}): {gap} ms apart, timeout {} ms",
                        before.uid,
                        before.at,
                        before.rv,
                        change.cluster,
                        change.snapshot.uid,
                        change.at,
                        change.snapshot.rv,
                        config.preemption_timeout
                    ),
                });
            }
        }
        per_worker.insert(
            change.cluster,
            Opened {
                at: change.at,
                rv: change.snapshot.rv,
                uid: change.snapshot.uid.clone(),
            },
        );
    }
}
