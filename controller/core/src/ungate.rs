//! KEP-8303 ungating: which replica of one workload may preempt next.
//!
//! A pure function of the replicas' observed state, the cluster order, `now`, the timeout
//! and the ungating policy (DESIGN.md §3):
//! 1. `last_opened` = the latest transition time among replicas whose gate is Open;
//! 2. candidates = replicas whose gate is Closed and that signal `QuotaReservationBlocked`
//!    (or upstream's `BlockedOnPreemptionGates`) = True with reason `PreemptionGated`;
//! 3. no candidate: nothing to do (a watch event brings the next change);
//! 4. a gate opened less than `timeout` ago: wait for the remainder;
//! 5. otherwise open one candidate and look again after `timeout`:
//!    - `FirstComeFirstServed` (the default, the KEP's rule): the earliest signaller (ties:
//!      cluster order, then cluster name);
//!    - `LeastDisruption`: see [`least_disruption`] (the cheapest victim set, after a short
//!      collection window);
//!    - `SoonestRoom`: see [`soonest_room`] (the victims gone soonest, then the cheapest,
//!      after the same window).
//!
//! Release on failure (Baton extension): a worker whose replica holds the baton and can no
//! longer make room gives it back — it sets its own MultiKueue gate back to Closed and says
//! why on `QuotaReservationBlocked=False` ([`ReleaseReason`]). A Closed gate holds no baton,
//! so step 4 no longer counts it and the next candidate is opened at once; the opening names
//! the release ([`Released`]). The replica is a candidate again only once it signals anew,
//! by its new signal time (no flapping ahead of the queue). Upstream Kueue workers never
//! give the baton back: their holders keep it until the timeout.
//!
//! Release on failure is what the manager asks for on each replica
//! ([`UngatingPolicy::releases_on_failure`]): by default with `LeastDisruption` and
//! `SoonestRoom`, not with FCFS, whose holders keep an Open gate until the timeout exactly as
//! KEP-8303 says (unless the operator asks for releases with FCFS too).
//!
//! Prefer admission without preemption (Baton extension, `LeastDisruption` and `SoonestRoom`
//! only): before step 5 opens anything, a replica whose worker says it will be admitted
//! without eviction soon (room of workloads already stopping there) holds the openings for a
//! bounded time; see [`room_expected`].
//!
//! While a replica is admitted, nothing is opened: the lifecycle takes over.

use std::time::Duration;

use baton_crds::conditions::find_condition;
use baton_crds::constants::{MULTIKUEUE_GATE, ReleaseReason, condition, reason};
use baton_crds::gates::gates;
use baton_crds::time::to_chrono;
use baton_crds::workload::{GateState, Workload};
use chrono::{DateTime, Utc};

pub use baton_crds::workload::PreemptionCost;

pub mod least_disruption;
pub mod room_expected;
pub mod soonest_room;

/// How the manager chooses among the replicas waiting for the baton.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UngatingPolicy {
    /// KEP-8303: the earliest signaller.
    #[default]
    FirstComeFirstServed,
    /// The replica whose worker needs the cheapest victim set, among those that signal within
    /// `window` of the first signal (see [`least_disruption`]).
    LeastDisruption { window: Duration },
    /// The replica whose worker's victims will be gone soonest (`preemptionCost.stopSeconds`),
    /// then the cheapest, among those that signal within `window` of the first signal (see
    /// [`soonest_room`]).
    SoonestRoom { window: Duration },
}

/// How the manager gates the replicas it creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaGating {
    /// Orchestration off: no gate (plain MultiKueue).
    Off,
    /// The MultiKueue gate (KEP-8303): a holder keeps the baton until the timeout.
    Gated,
    /// The MultiKueue gate, and the worker asked to give the baton back when it can no
    /// longer make room (annotation `baton.dev/release-on-failure: "true"`).
    GatedReleasing,
}

impl UngatingPolicy {
    /// Whether, by default, the manager asks the workers to give the baton back when they can
    /// no longer make room (the replica's `baton.dev/release-on-failure` annotation): not
    /// with FCFS, which keeps KEP-8303's timeout exactly; yes with the other policies.
    pub fn releases_on_failure(self) -> bool {
        !matches!(self, UngatingPolicy::FirstComeFirstServed)
    }

    /// Whether a replica expecting room without eviction holds the openings
    /// ([`room_expected`]): not with FCFS (KEP-8303's rule), yes with the other policies.
    pub fn prefers_admission_without_preemption(self) -> bool {
        !matches!(self, UngatingPolicy::FirstComeFirstServed)
    }
}

/// The default collection window of `LeastDisruption`.
pub const DEFAULT_LEAST_DISRUPTION_WINDOW: Duration = Duration::from_secs(2);

/// What the manager knows of one replica, for this decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicaView {
    pub cluster: String,
    /// The MultiKueue gate; `None` when the replica carries no such gate (orchestration off or
    /// a replica made by someone else), which makes it neither a candidate nor an opened one.
    pub gate: Option<GateObservation>,
    /// The blocked signal, when the replica reports one with status True.
    pub signal: Option<Signal>,
    pub admitted: bool,
    /// What the replica's worker says its preemption would evict (`status.preemptionCost`,
    /// a Baton extension); `None` from upstream Kueue workers and when not gated.
    pub cost: Option<PreemptionCost>,
    /// Its worker gave the baton back, and why: its gate is Closed again and its
    /// `QuotaReservationBlocked` condition is False with a [`ReleaseReason`] (Baton
    /// extension; the gate's transition time is when).
    pub released: Option<ReleaseReason>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateObservation {
    pub state: GateState,
    /// When the gate last changed state; `None` for a gate with no status entry (Closed).
    pub since: Option<DateTime<Utc>>,
}

/// A True `QuotaReservationBlocked`/`BlockedOnPreemptionGates` condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    pub reason: String,
    /// The condition's transition time: when the replica started signalling (FCFS key).
    pub since: DateTime<Utc>,
}

impl Signal {
    fn preemption_gated(&self) -> bool {
        self.reason == reason::PREEMPTION_GATED
    }
}

/// The decision for one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UngateDecision {
    /// No replica is waiting for the baton (or one is admitted): nothing to do.
    Nothing,
    /// A gate was opened less than the timeout ago; look again after `requeue_after`.
    Wait {
        requeue_after: Duration,
        waiting: usize,
    },
    /// `LeastDisruption`: the collection window is still open and some replica has not
    /// signalled yet; choose after `requeue_after`.
    Collect {
        requeue_after: Duration,
        waiting: usize,
    },
    /// A replica expects room without eviction ([`room_expected`]): open nothing for now,
    /// look again after `requeue_after`.
    AwaitRoom {
        cluster: String,
        requeue_after: Duration,
        waiting: usize,
    },
    /// Open this cluster's gate, then look again after the timeout.
    Open {
        cluster: String,
        /// When that replica started signalling.
        signalled_at: DateTime<Utc>,
        /// When the previous gate was opened, if one was: the timeout passed the baton on.
        previous_opened_at: Option<DateTime<Utc>>,
        /// The cluster whose gate was opened last (it held the baton until now).
        previous_cluster: Option<String>,
        /// The holder gave the baton back since the last opening (then the timeout did not
        /// pass it on: `previous_opened_at` and `previous_cluster` are `None`).
        released_by: Option<Released>,
        requeue_after: Duration,
        /// Why this replica was chosen.
        why: OpenReason,
    },
}

/// A holder that gave the baton back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    pub cluster: String,
    pub reason: ReleaseReason,
    /// Its gate's Closed transition.
    pub at: DateTime<Utc>,
}

/// Why a replica got the baton (for the gate-opened event).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenReason {
    /// First come, first served: the earliest of `signalling` candidates.
    FirstSignaller { signalling: usize },
    /// `LeastDisruption`: the cheapest victim set among `signalling` candidates.
    LeastDisruptive {
        cost: PreemptionCost,
        signalling: usize,
    },
    /// `SoonestRoom`: the victims gone soonest (then the cheapest) among `signalling`
    /// candidates.
    SoonestRoom {
        cost: PreemptionCost,
        signalling: usize,
    },
    /// `LeastDisruption` or `SoonestRoom` fell back to first come, first served because
    /// `without_cost` of the `signalling` candidates report no cost, or no stop time
    /// (upstream Kueue workers, older Baton workers).
    FirstSignallerWithoutCost {
        signalling: usize,
        without_cost: usize,
    },
}

/// Kubernetes stores `metav1.Time` floored to the second: a gate recorded as opened at `t`
/// may have opened up to a second later. The timeout is counted from the latest such
/// instant, so the baton never passes on earlier than the timeout in real time.
pub const STORED_TIME_PRECISION: Duration = Duration::from_secs(1);

/// Decides which gate, if any, to open now, first come first served (the KEP's rule).
pub fn decide(
    replicas: &[ReplicaView],
    cluster_order: &[String],
    now: DateTime<Utc>,
    timeout: Duration,
) -> UngateDecision {
    decide_with_policy(
        replicas,
        cluster_order,
        now,
        timeout,
        UngatingPolicy::FirstComeFirstServed,
    )
}

/// Decides which gate, if any, to open now, under `policy`.
pub fn decide_with_policy(
    replicas: &[ReplicaView],
    cluster_order: &[String],
    now: DateTime<Utc>,
    timeout: Duration,
    policy: UngatingPolicy,
) -> UngateDecision {
    if replicas.iter().any(|r| r.admitted) {
        return UngateDecision::Nothing;
    }
    let last_open = replicas
        .iter()
        .filter_map(|r| r.gate.as_ref().map(|g| (g, &r.cluster)))
        .filter(|(g, _)| g.state == GateState::Open)
        .map(|(g, cluster)| (g.since.unwrap_or(DateTime::<Utc>::MIN_UTC), cluster))
        .max();
    let last_opened = last_open.map(|(at, _)| at);
    let released_by = latest_release(replicas, last_opened);
    let mut candidates: Vec<Candidate<'_>> = replicas
        .iter()
        .filter(|r| is_closed(r))
        .filter_map(|r| {
            r.signal
                .as_ref()
                .filter(|s| s.preemption_gated())
                .map(|signal| Candidate { replica: r, signal })
        })
        .collect();
    if candidates.is_empty() {
        return UngateDecision::Nothing;
    }
    if let Some(opened) = last_opened.filter(|_| released_by.is_none()) {
        // Checked: a gate stamped at the end of time and a timeout beyond chrono's range
        // must not overflow (found by `decide_is_total_on_extreme_inputs`).
        let elapsed = now
            .signed_duration_since(opened)
            .checked_sub(&stored_time_margin())
            .unwrap_or(chrono::TimeDelta::MIN);
        let timeout_chrono = chrono::Duration::from_std(timeout).unwrap_or(chrono::TimeDelta::MAX);
        if elapsed < timeout_chrono {
            // A clock that went backwards must not make us wait longer than one timeout.
            let remaining = timeout_chrono
                .checked_sub(&elapsed)
                .and_then(|d| d.to_std().ok())
                .unwrap_or(timeout)
                .min(timeout);
            return UngateDecision::Wait {
                requeue_after: remaining,
                waiting: candidates.len(),
            };
        }
    }
    let signalling = candidates.len();
    candidates.sort_by(|a, b| fcfs_order(a, b, cluster_order));
    if policy.prefers_admission_without_preemption()
        && let room_expected::Room::Awaited {
            cluster,
            requeue_after,
        } = room_expected::awaited(replicas, candidates[0].signal.since, now, timeout)
    {
        return UngateDecision::AwaitRoom {
            cluster,
            requeue_after,
            waiting: signalling,
        };
    }
    let why = match policy {
        UngatingPolicy::FirstComeFirstServed => OpenReason::FirstSignaller { signalling },
        UngatingPolicy::LeastDisruption { window } => {
            match least_disruption::choose(replicas, &mut candidates, now, window) {
                least_disruption::Choice::Collect { requeue_after } => {
                    return UngateDecision::Collect {
                        requeue_after,
                        waiting: signalling,
                    };
                }
                least_disruption::Choice::Open(why) => why,
            }
        }
        UngatingPolicy::SoonestRoom { window } => {
            match soonest_room::choose(replicas, &mut candidates, now, window) {
                least_disruption::Choice::Collect { requeue_after } => {
                    return UngateDecision::Collect {
                        requeue_after,
                        waiting: signalling,
                    };
                }
                least_disruption::Choice::Open(why) => why,
            }
        }
    };
    let chosen = &candidates[0];
    let timed_out = released_by.is_none();
    UngateDecision::Open {
        cluster: chosen.replica.cluster.clone(),
        signalled_at: chosen.signal.since,
        previous_opened_at: last_opened.filter(|_| timed_out),
        previous_cluster: last_open
            .filter(|_| timed_out)
            .map(|(_, cluster)| cluster.clone()),
        released_by,
        requeue_after: timeout,
        why,
    }
}

/// The latest release after the last gate still Open was opened: the holder gave the baton
/// back, so no Open gate holds it (a gate left Open by an earlier timeout does not). Strictly
/// after: a gate opened in the same stored second as a release was opened for it (the
/// released gate itself is Closed, so a holder that fails within the second it got the
/// baton still passes it on at once). A release with no stored time does not count.
fn latest_release(
    replicas: &[ReplicaView],
    last_opened: Option<DateTime<Utc>>,
) -> Option<Released> {
    replicas
        .iter()
        .filter(|r| is_closed(r))
        .filter_map(|r| {
            let reason = r.released?;
            let at = r.gate.as_ref()?.since?;
            Some(Released {
                cluster: r.cluster.clone(),
                reason,
                at,
            })
        })
        .filter(|r| last_opened.is_none_or(|opened| r.at > opened))
        .max_by(|a, b| a.at.cmp(&b.at).then_with(|| b.cluster.cmp(&a.cluster)))
}

/// A replica that may be given the baton, with its signal.
struct Candidate<'a> {
    replica: &'a ReplicaView,
    signal: &'a Signal,
}

fn is_closed(replica: &ReplicaView) -> bool {
    replica
        .gate
        .as_ref()
        .is_some_and(|g| g.state == GateState::Closed)
}

/// First come, first served: signal time, then cluster order, then cluster name.
fn fcfs_order(
    a: &Candidate<'_>,
    b: &Candidate<'_>,
    cluster_order: &[String],
) -> std::cmp::Ordering {
    a.signal
        .since
        .cmp(&b.signal.since)
        .then_with(|| {
            order_rank(&a.replica.cluster, cluster_order)
                .cmp(&order_rank(&b.replica.cluster, cluster_order))
        })
        .then_with(|| a.replica.cluster.cmp(&b.replica.cluster))
}

fn stored_time_margin() -> chrono::Duration {
    chrono::Duration::from_std(STORED_TIME_PRECISION).unwrap_or_default()
}

/// Position in the MultiKueueConfig's list; clusters not listed come after all listed ones.
fn order_rank(cluster: &str, order: &[String]) -> usize {
    order
        .iter()
        .position(|c| c == cluster)
        .unwrap_or(order.len())
}

/// The gate-opened event's message: which cluster, and why it got the baton.
pub fn opening_message(cluster: &str, signalled_at: DateTime<Utc>, why: &OpenReason) -> String {
    let signalled = signalled_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    match why {
        OpenReason::FirstSignaller { .. } => {
            format!("opened preemption gate on {cluster}; signalled first at {signalled}")
        }
        OpenReason::LeastDisruptive { cost, signalling } => format!(
            "opened preemption gate on {cluster}: least disruptive of {} ({}, highest priority {}, {}); signalled at {signalled}",
            plural(
                *signalling as i64,
                "signalling cluster",
                "signalling clusters"
            ),
            plural(cost.victims.into(), "victim", "victims"),
            cost.highest_priority,
            plural(cost.pods, "pod", "pods"),
        ),
        OpenReason::SoonestRoom { cost, signalling } => format!(
            "opened preemption gate on {cluster}: victims gone soonest of {} ({}s, {}, highest priority {}); signalled at {signalled}",
            plural(
                *signalling as i64,
                "signalling cluster",
                "signalling clusters"
            ),
            cost.stop_seconds.unwrap_or_default(),
            plural(cost.victims.into(), "victim", "victims"),
            cost.highest_priority,
        ),
        OpenReason::FirstSignallerWithoutCost {
            signalling,
            without_cost,
        } => format!(
            "opened preemption gate on {cluster}: first of {} ({without_cost} {} no preemption cost, so first come, first served); signalled first at {signalled}",
            plural(
                *signalling as i64,
                "signalling cluster",
                "signalling clusters"
            ),
            if *without_cost == 1 {
                "reports"
            } else {
                "report"
            },
        ),
    }
}

fn plural(n: i64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Reads a replica `Workload` (as watched on its worker) into the decision's view.
pub fn view_of(cluster: &str, replica: &Workload) -> ReplicaView {
    let gate = gates(replica)
        .into_iter()
        .find(|g| g.name == MULTIKUEUE_GATE)
        .map(|g| GateObservation {
            state: g.state,
            since: g.last_transition_time,
        });
    let conditions = replica
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    // Baton's condition first; upstream Kueue ≥ 0.17 workers report the other name.
    let signal = [
        condition::QUOTA_RESERVATION_BLOCKED,
        condition::BLOCKED_ON_PREEMPTION_GATES,
    ]
    .into_iter()
    .filter_map(|t| find_condition(conditions, t))
    .find(|c| c.status == "True")
    .map(|c| Signal {
        reason: c.reason.clone(),
        since: to_chrono(&c.last_transition_time),
    });
    let admitted =
        find_condition(conditions, condition::ADMITTED).is_some_and(|c| c.status == "True");
    let cost = replica.status.as_ref().and_then(|s| s.preemption_cost);
    // A release: the gate is Closed again and the signal False for a release reason.
    let released = gate
        .filter(|g| g.state == GateState::Closed && signal.is_none())
        .and_then(|_| find_condition(conditions, condition::QUOTA_RESERVATION_BLOCKED))
        .filter(|c| c.status == "False")
        .and_then(|c| ReleaseReason::parse(&c.reason));
    ReplicaView {
        cluster: cluster.to_string(),
        gate,
        signal,
        admitted,
        cost,
        released,
    }
}

#[cfg(test)]
mod tests;
