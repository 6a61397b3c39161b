//! (c) At the end every manager workload is admitted (on a worker that holds its quota),
//! finished, or deleted — none lost, none pending while a worker has room for it; and (d) no
//! replica is left on a worker once its workload was deleted, finished or won elsewhere.
//!
//! A single instant may catch an admission or a removal in flight, so the state is sampled
//! every second over the last [`END_STATE_GRACE`] of the recording, and only what is wrong
//! at every sample is a violation.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::{CheckConfig, END_STATE_GRACE, Invariant, Outcome, Violation};
use crate::chaos::log::{Event, Millis, Snapshot};

const SAMPLE_EVERY: Millis = 1_000;

#[derive(Default)]
struct State {
    /// Cluster index → live Workloads by name.
    live: Vec<HashMap<String, Snapshot>>,
    submitted: BTreeMap<String, Millis>,
    deleted_by_stream: BTreeSet<String>,
    /// Manager workloads' deletions: name → (time, resourceVersion).
    manager_deletions: HashMap<String, (Millis, u64)>,
}

type Found = BTreeMap<(Invariant, String), String>;

pub fn check(events: &[Event], config: &CheckConfig, outcome: &mut Outcome) {
    let mut state = State {
        live: vec![HashMap::new(); config.workers + 1],
        ..Default::default()
    };
    let first = config.end.saturating_sub(END_STATE_GRACE);
    let samples: Vec<Millis> = (0..)
        .map(|k| first + k * SAMPLE_EVERY)
        .take_while(|t| *t <= config.end)
        .collect();
    let mut next = 0;
    let mut persistent: Option<Found> = None;
    let mut last = Found::new();
    let mut pending = 0;
    let mut sample = |state: &State, persistent: &mut Option<Found>| {
        let (found, waiting) = evaluate(state, config);
        pending = waiting;
        *persistent = Some(match persistent.take() {
            None => found.clone(),
            Some(before) => before
                .into_iter()
                .filter(|(k, _)| found.contains_key(k))
                .collect(),
        });
        last = found;
    };
    for event in events {
        while next < samples.len() && event.at() > samples[next] {
            sample(&state, &mut persistent);
            next += 1;
        }
        apply(&mut state, event);
    }
    while next < samples.len() {
        sample(&state, &mut persistent);
        next += 1;
    }
    outcome.measures.pending_at_end = pending;
    for (key, _) in persistent.unwrap_or_default() {
        let evidence = last.get(&key).cloned().unwrap_or_default();
        outcome.violations.push(Violation {
            invariant: key.0,
            workload: key.1,
            evidence,
        });
    }
}

fn apply(state: &mut State, event: &Event) {
    match event {
        Event::Object(o) => {
            let Some(live) = state.live.get_mut(o.cluster) else {
                return;
            };
            if o.deleted {
                live.remove(&o.name);
                if o.cluster == 0 {
                    state
                        .manager_deletions
                        .insert(o.name.clone(), (o.at, o.snapshot.rv));
                }
            } else {
                live.insert(o.name.clone(), o.snapshot.clone());
            }
        }
        Event::Submitted { at, name, .. } => {
            state.submitted.insert(name.clone(), *at);
        }
        Event::Deleted { name, .. } => {
            state.deleted_by_stream.insert(name.clone());
        }
        _ => {}
    }
}

/// What is wrong in this state, and how many workloads wait with every worker full.
fn evaluate(state: &State, config: &CheckConfig) -> (Found, usize) {
    let mut found = Found::new();
    let manager = &state.live[0];
    let mut waiting = 0;
    for (name, at) in &state.submitted {
        if !state.deleted_by_stream.contains(name) && !manager.contains_key(name) {
            let gone = match state.manager_deletions.get(name) {
                Some((t, rv)) => format!("deleted from the manager at {t} ms (rv {rv})"),
                None => "never stored on the manager".to_string(),
            };
            found.insert(
                (Invariant::Lost, name.clone()),
                format!("submitted at {at} ms, never deleted by the stream, {gone}"),
            );
        }
    }
    let free: Vec<i64> = (1..=config.workers)
        .map(|w| {
            let used: u32 = state.live[w]
                .values()
                .filter(|s| s.holds_quota)
                .map(|s| s.cpus)
                .sum();
            i64::from(config.worker_cpus) - i64::from(used)
        })
        .collect();
    for (name, m) in manager {
        if m.deleting {
            if state.deleted_by_stream.contains(name) {
                found.insert(
                    (Invariant::LeftBehind, name.clone()),
                    format!("deleted by the stream but still stored with a deletionTimestamp (uid {}, rv {})", m.uid, m.rv),
                );
            }
            continue;
        }
        if m.finished {
            continue;
        }
        if m.admitted {
            let cluster = m.cluster_name.clone().unwrap_or_default();
            let holds = config
                .worker_of(&cluster)
                .and_then(|w| state.live[w].get(name))
                .is_some_and(|r| r.holds_quota);
            if !holds {
                found.insert(
                    (Invariant::Lost, name.clone()),
                    format!("admitted on the manager (rv {}) on '{cluster}', where no replica holds its quota", m.rv),
                );
            }
            continue;
        }
        match free.iter().position(|f| *f >= i64::from(m.cpus)) {
            Some(i) => {
                found.insert(
                    (Invariant::Stranded, name.clone()),
                    format!("pending on the manager (uid {}, rv {}) needing {} CPUs while worker-{} has {} free", m.uid, m.rv, m.cpus, i + 1, free[i]),
                );
            }
            None => waiting += 1,
        }
    }
    for w in 1..=config.workers {
        for (name, r) in &state.live[w] {
            if !r.replica {
                continue;
            }
            let why = match manager.get(name) {
                None => Some(match state.manager_deletions.get(name) {
                    Some((t, rv)) => format!("its workload was deleted at {t} ms (rv {rv})"),
                    None => "its workload is not on the manager".to_string(),
                }),
                Some(m) if m.finished => Some(format!("its workload finished (rv {})", m.rv)),
                Some(m) if m.admitted => {
                    let winner = m.cluster_name.as_deref().and_then(|c| config.worker_of(c));
                    (winner.is_some() && winner != Some(w)).then(|| {
                        format!(
                            "its workload won on '{}' (rv {})",
                            m.cluster_name.clone().unwrap_or_default(),
                            m.rv
                        )
                    })
                }
                Some(_) => None,
            };
            if let Some(why) = why {
                found.insert(
                    (Invariant::LeftBehind, name.clone()),
                    format!(
                        "replica on worker-{w} (uid {}, rv {}) but {why}",
                        r.uid, r.rv
                    ),
                );
            }
        }
    }
    (found, waiting)
}
