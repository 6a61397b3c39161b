//! The flavor oracle's answers within one scheduling cycle (`oracle::simulate`): a cycle
//! asks what preempting would do for every workload that does not fit, and most ask with
//! the same inputs as an earlier one (same queue, shape and priority, nothing changed in
//! their cohort's usage).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use baton_crds::WorkloadKey;
use chrono::{DateTime, Utc};

use super::quota::{FrId, Usage};

/// The outcome of a simulated preemption that finds victims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Simulated {
    /// Some victim is in the preemptor's own queue (Kueue's `Preempt`; otherwise `Reclaim`).
    pub own_queue: bool,
    /// The preemptor borrows once its victims are gone and it is admitted.
    pub borrows_after: bool,
}

/// Everything of the pending workload and the quota that the simulated preemption reads
/// and a cycle may change: the queue, the preemptor's priority (and its place in queue
/// order where newer workloads of equal priority may go), the demand and its short pairs,
/// and the usage of the demand's pairs by every queue of the neighbourhood (all that
/// `available`, `borrows_with` and `is_borrowing` read for those pairs; the search asks
/// about no other pair).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct MemoKey {
    pub(super) queue: usize,
    pub(super) priority: i32,
    pub(super) order: Option<(DateTime<Utc>, WorkloadKey)>,
    pub(super) demand: Usage,
    pub(super) short: Vec<FrId>,
    pub(super) used: Vec<i128>,
}

/// By the inputs' fingerprint, the keys with that fingerprint and their answers.
type Answers = HashMap<u64, Vec<(MemoKey, Option<Simulated>)>>;

/// The oracle's answers while a cycle runs (`None` outside one: nothing is remembered).
/// During a cycle only the quota changes: the admitted workloads, their queues and the
/// policies stay as they are, so an answer depends only on what `MemoKey` holds.
#[derive(Default)]
pub struct Memo(Mutex<Option<Answers>>);

impl Memo {
    /// Starts remembering (a cycle begins).
    pub(super) fn start(&mut self) {
        *self.0.get_mut().unwrap_or_else(PoisonError::into_inner) = Some(HashMap::new());
    }

    /// Forgets everything (the cycle is over).
    pub(super) fn stop(&mut self) {
        *self.0.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The answer remembered for the key `is` recognises among those of `fingerprint`, else
    /// `compute`'s (remembered under `key()` while a cycle runs). Debug builds compute every
    /// remembered answer again and check it is the same.
    pub(super) fn answer(
        &self,
        fingerprint: u64,
        is: impl Fn(&MemoKey) -> bool,
        key: impl FnOnce() -> MemoKey,
        compute: impl Fn() -> Option<Simulated>,
    ) -> Option<Simulated> {
        {
            let answers = self.lock();
            let Some(answers) = answers.as_ref() else {
                return compute();
            };
            let known = answers
                .get(&fingerprint)
                .and_then(|known| known.iter().find(|(k, _)| is(k)));
            if let Some((k, answer)) = known {
                let answer = *answer;
                debug_assert_eq!(answer, compute(), "the oracle's memo answered {k:?}");
                return answer;
            }
        }
        let answer = compute();
        if let Some(answers) = self.lock().as_mut() {
            answers
                .entry(fingerprint)
                .or_default()
                .push((key(), answer));
        }
        answer
    }

    fn lock(&self) -> MutexGuard<'_, Option<Answers>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A copy remembers nothing.
impl Clone for Memo {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}
