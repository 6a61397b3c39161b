//! (a) No workload holds quota on two workers at once beyond [`LOSER_REMOVAL_WINDOW`]
//! (plus the downtime within the overlap).

use std::collections::{BTreeMap, HashMap};

use super::{CheckConfig, Invariant, LOSER_REMOVAL_WINDOW, Outcome, Violation, worker_changes};
use crate::chaos::log::{Downtime, Event, Millis, Span};

/// One replica holding quota since `at`.
#[derive(Clone, Debug)]
struct Hold {
    since: Millis,
    rv: u64,
    uid: String,
}

/// Two workers holding quota for one workload at once.
#[derive(Clone, Debug)]
struct Overlap {
    since: Millis,
    first: (usize, Hold),
    second: (usize, Hold),
}

pub fn check(events: &[Event], config: &CheckConfig, outcome: &mut Outcome) {
    let downtime = Downtime::from_log(events, config.workers, config.end);
    let mut holds: HashMap<String, BTreeMap<usize, Hold>> = HashMap::new();
    let mut open: HashMap<(String, usize, usize), Overlap> = HashMap::new();
    for change in worker_changes(events) {
        let holding = !change.deleted && change.snapshot.holds_quota;
        let per_worker = holds.entry(change.name.clone()).or_default();
        let was = per_worker.get(&change.cluster).cloned();
        match (was, holding) {
            (None, true) => {
                let hold = Hold {
                    since: change.at,
                    rv: change.snapshot.rv,
                    uid: change.snapshot.uid.clone(),
                };
                for (other, their) in per_worker.iter() {
                    let key = pair_key(&change.name, *other, change.cluster);
                    open.insert(
                        key,
                        Overlap {
                            since: change.at,
                            first: (*other, their.clone()),
                            second: (change.cluster, hold.clone()),
                        },
                    );
                }
                per_worker.insert(change.cluster, hold);
            }
            (Some(_), false) => {
                per_worker.remove(&change.cluster);
                let ended: Vec<(String, usize, usize)> = open
                    .keys()
                    .filter(|(n, a, b)| {
                        *n == change.name && (*a == change.cluster || *b == change.cluster)
                    })
                    .cloned()
                    .collect();
                for key in ended {
                    if let Some(overlap) = open.remove(&key) {
                        let end = format!(
                            "ended at {} ms (worker-{} rv {}{})",
                            change.at,
                            change.cluster,
                            change.snapshot.rv,
                            if change.deleted { ", deleted" } else { "" }
                        );
                        close(&key.0, overlap, change.at, end, &downtime, outcome);
                    }
                }
            }
            _ => {}
        }
    }
    for (key, overlap) in open {
        let end = format!("still both holding at the end ({} ms)", config.end);
        close(&key.0, overlap, config.end, end, &downtime, outcome);
    }
}

fn pair_key(name: &str, a: usize, b: usize) -> (String, usize, usize) {
    (name.to_string(), a.min(b), a.max(b))
}

fn close(
    name: &str,
    overlap: Overlap,
    to: Millis,
    end: String,
    downtime: &Downtime,
    outcome: &mut Outcome,
) {
    let span = Span {
        from: overlap.since,
        to,
    };
    let length = to.saturating_sub(overlap.since);
    let excused = downtime.excused(&span, &[overlap.first.0, overlap.second.0]);
    let unexcused = length - excused;
    let m = &mut outcome.measures;
    m.double_admissions += 1;
    m.max_double_admission = m.max_double_admission.max(length);
    m.max_double_admission_unexcused = m.max_double_admission_unexcused.max(unexcused);
    if unexcused > LOSER_REMOVAL_WINDOW {
        let (a, b) = (&overlap.first, &overlap.second);
        outcome.violations.push(Violation {
            invariant: Invariant::DoubleAdmission,
            workload: name.to_string(),
            evidence: format!(
                "holding quota on worker-{} (uid {}, since {} ms, rv {}) and worker-{} (uid {}, since {} ms, rv {}) for {length} ms ({excused} ms excused by downtime, window {LOSER_REMOVAL_WINDOW} ms); {end}",
                a.0, a.1.uid, a.1.since, a.1.rv, b.0, b.1.uid, b.1.since, b.1.rv
            ),
        });
    }
}
