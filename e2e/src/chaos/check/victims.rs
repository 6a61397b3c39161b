//! (e) No victim evicted on a worker for a preemptor whose gate there was Closed: when a
//! workload's `Evicted` condition turns True, the worker names the preemptor in its message;
//! the preemptor's latest version on that worker, stored before the eviction, must not be a
//! replica with a Closed MultiKueue gate.

use std::collections::HashMap;

use baton_crds::workload::GateState;

use super::{Invariant, Outcome, Violation, worker_changes};
use crate::chaos::log::{Event, Millis, Snapshot, preemptor_of};

pub fn check(events: &[Event], outcome: &mut Outcome) {
    // (worker, name) → the latest version seen, and when.
    let mut latest: HashMap<(usize, String), (Millis, Snapshot)> = HashMap::new();
    for change in worker_changes(events) {
        let key = (change.cluster, change.name.clone());
        let before = latest.get(&key).map(|(_, s)| s.clone());
        let newly_evicted = !change.deleted
            && change.snapshot.evicted.is_some()
            && before
                .as_ref()
                .is_none_or(|b| b.uid != change.snapshot.uid || b.evicted.is_none());
        if newly_evicted {
            let message = change.snapshot.evicted.clone().unwrap_or_default();
            let preemptor =
                preemptor_of(&message).map(|key| key.rsplit('/').next().unwrap_or(key).to_string());
            match preemptor.and_then(|p| latest.get(&(change.cluster, p.clone())).map(|v| (p, v))) {
                Some((name, (seen_at, p))) => {
                    outcome.measures.evictions_checked += 1;
                    if p.replica && p.gate == Some(GateState::Closed) {
                        outcome.violations.push(Violation {
                            invariant: Invariant::EvictedWhileGateClosed,
                            workload: name.clone(),
                            evidence: format!(
                                "victim {} evicted on worker-{} at {} ms (rv {}) while preemptor {name}'s gate there was Closed (uid {}, rv {}, seen {} ms): {message}",
                                change.name,
                                change.cluster,
                                change.at,
                                change.snapshot.rv,
                                p.uid,
                                p.rv,
                                seen_at
                            ),
                        });
                    }
                }
                None => outcome.measures.evictions_unverified += 1,
            }
        }
        // A deleted preemptor's last version stays the evidence for late evictions.
        latest.insert(key, (change.at, change.snapshot.clone()));
    }
}
