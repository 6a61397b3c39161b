//! The discrete-event simulation: virtual workers running the real admission cycle
//! (`baton_core::admission::cycle::schedule`, victim selection inside), a virtual manager running the
//! real ungating decision, and the delays between them, on a virtual clock.

use baton_crds::WorkloadKey;
use baton_crds::workload::PreemptionCost;

use super::events::{EventQueue, Millis};
use super::manager::{Fleet, Managed, Observed, millis, ungating_policy};
use super::metrics::{Eviction, Outcome, Reservation, WorkloadStats};
use super::model::{DelayRange, Mode, RunConfig, Workers};
use super::rng::Rng;
use super::trace::Trace;
use super::world::{Applied, Change, Entry, State, Worker, instant, key};
use baton_core::lifecycle::{Progress, RemovalCause};
use baton_crds::constants::ReleaseReason;

/// The worker's loop waits this long after a change for more changes to batch into one
/// cycle (`worker::run`'s `BATCH_WINDOW`).
const BATCH_WINDOW: Millis = 5;

#[derive(Clone, Debug)]
enum Event {
    Arrive(usize),
    CreateReplica {
        wl: usize,
        round: u32,
        worker: usize,
    },
    Cycle(usize),
    ManagerSees {
        wl: usize,
        round: u32,
        worker: usize,
        seen: Observed,
    },
    ManagerTick {
        wl: usize,
        at: Millis,
    },
    OpenGate {
        wl: usize,
        round: u32,
        worker: usize,
    },
    RemoveReplica {
        wl: usize,
        round: u32,
        worker: usize,
    },
    StartRun {
        wl: usize,
        round: u32,
        worker: usize,
    },
    VictimGone {
        worker: usize,
        key: WorkloadKey,
    },
    Finish {
        worker: usize,
        key: WorkloadKey,
        epoch: u32,
    },
}

struct Sim<'a> {
    trace: &'a Trace,
    config: RunConfig,
    queue: EventQueue<Event>,
    workers: Vec<Worker>,
    /// The manager's view of the workers and its lifecycle settings.
    fleet: Fleet,
    managed: Vec<Managed>,
    stats: Vec<WorkloadStats>,
    evictions: Vec<Eviction>,
    /// Milli-CPU × milliseconds of work done by running pods (cut runs included).
    useful: f64,
    rng: Rng,
    /// Per worker, the last delivery time of its watch and of writes to it: both keep order.
    last_watch: Vec<Millis>,
    last_write: Vec<Millis>,
}

/// Events per workload after which a run is stopped as not settling. Normal runs take
/// about 40. A run can fail to settle because the admission cycle does not hold a
/// preemptor's usage in the cycle it preempts: a lower-priority workload takes the room
/// beside the victims, and the preemptor evicts it next, forever.
pub const EVENT_BUDGET_PER_WORKLOAD: u64 = 500;

/// Runs `trace` under `config` to the end: every workload has finished.
pub fn simulate(trace: &Trace, config: RunConfig) -> Outcome {
    let workers: Vec<Worker> = trace.workers.iter().map(Worker::new).collect();
    let n = workers.len();
    let mut sim = Sim {
        trace,
        config,
        queue: EventQueue::default(),
        fleet: Fleet::new(
            workers.iter().map(|w| w.name.clone()).collect(),
            config.mode,
        ),
        workers,
        managed: vec![Managed::default(); trace.workloads.len()],
        stats: trace
            .workloads
            .iter()
            .map(|w| WorkloadStats {
                arrival: w.arrival,
                priority: w.priority,
                local: w.cluster.is_some(),
                ..WorkloadStats::default()
            })
            .collect(),
        evictions: Vec::new(),
        useful: 0.0,
        rng: Rng::new(config.seed),
        last_watch: vec![0; n],
        last_write: vec![0; n],
    };
    for (i, w) in trace.workloads.iter().enumerate() {
        sim.queue.at(w.arrival, Event::Arrive(i));
    }
    // A guard, not a model: the worker core can alternate two evictions forever (see
    // `EVENT_BUDGET_PER_WORKLOAD`); such a run stops with workloads unfinished.
    let budget = EVENT_BUDGET_PER_WORKLOAD * (trace.workloads.len() as u64 + 10);
    while let Some((_, event)) = sim.queue.pop() {
        if sim.queue.handled() > budget {
            break;
        }
        sim.handle(event);
    }
    let makespan = sim.queue.now();
    let capacity: i64 = trace.workers.iter().map(|w| w.cpu_milli).sum();
    Outcome::new(
        config.mode,
        sim.stats,
        sim.evictions,
        sim.useful / (capacity as f64 * makespan.max(1) as f64),
        makespan,
        sim.queue.handled(),
    )
}

impl Sim<'_> {
    fn now(&self) -> Millis {
        self.queue.now()
    }

    fn orchestrated(&self) -> bool {
        matches!(self.config.mode, Mode::Orchestrated { .. })
    }

    /// The workers are Baton's shims: they report `preemptionCost` and room expected without
    /// eviction; upstream Kueue's do not.
    fn baton_workers(&self) -> bool {
        matches!(
            self.config.mode,
            Mode::Orchestrated {
                workers: Workers::Baton | Workers::BatonReleasing,
                ..
            }
        )
    }

    /// The manager asks its (Baton) workers to give the baton back when they can no longer
    /// make room: by the policy's default (`ReplicaGating`), or always when told to.
    fn releases(&self) -> bool {
        match self.config.mode {
            Mode::Orchestrated {
                workers: Workers::Baton,
                policy,
                ..
            } => ungating_policy(policy).releases_on_failure(),
            Mode::Orchestrated {
                workers: Workers::BatonReleasing,
                ..
            } => true,
            _ => false,
        }
    }

    fn draw(&mut self, range: DelayRange) -> Millis {
        self.rng.between(range.min, range.max)
    }

    /// When a status change on `worker` made now reaches the manager.
    fn watch_at(&mut self, worker: usize) -> Millis {
        let at = (self.now() + self.draw(self.config.delays.watch)).max(self.last_watch[worker]);
        self.last_watch[worker] = at;
        at
    }

    /// When a manager write made now reaches `worker`.
    fn write_at(&mut self, worker: usize) -> Millis {
        let at = (self.now() + self.draw(self.config.delays.dispatch)).max(self.last_write[worker]);
        self.last_write[worker] = at;
        at
    }

    /// Schedules a cycle on `worker` after the batch window, unless one is already due.
    fn touch(&mut self, worker: usize) {
        if !self.workers[worker].cycle_queued {
            self.workers[worker].cycle_queued = true;
            let now = self.now();
            self.queue.at(now + BATCH_WINDOW, Event::Cycle(worker));
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Arrive(wl) => self.arrive(wl),
            Event::CreateReplica { wl, round, worker } => self.create_replica(wl, round, worker),
            Event::Cycle(worker) => self.cycle(worker),
            Event::ManagerSees {
                wl,
                round,
                worker,
                seen,
            } => self.manager_sees(wl, round, worker, seen),
            Event::ManagerTick { wl, at } => {
                if self.managed[wl].next_tick == Some(at) {
                    self.managed[wl].next_tick = None;
                }
                self.manage(wl);
            }
            Event::OpenGate { wl, round, worker } => {
                let k = key(&self.trace.workloads[wl].name, Some(round));
                if let Some(e) = self.workers[worker].entries.get_mut(&k) {
                    e.pending.gate_closed = false;
                    self.touch(worker);
                }
            }
            Event::RemoveReplica { wl, round, worker } => self.remove_replica(wl, round, worker),
            Event::StartRun { wl, round, worker } => self.start_run(wl, round, worker),
            Event::VictimGone { worker, key } => self.victim_gone(worker, &key),
            Event::Finish { worker, key, epoch } => self.finish(worker, &key, epoch),
        }
    }

    fn arrive(&mut self, wl: usize) {
        let w = &self.trace.workloads[wl];
        match w.cluster {
            Some(c) => {
                let entry = Entry::new(wl, w, None, self.now(), false);
                self.workers[c].entries.insert(entry.key().clone(), entry);
                self.touch(c);
            }
            None => self.manage(wl),
        }
    }

    fn create_replica(&mut self, wl: usize, round: u32, worker: usize) {
        let m = &self.managed[wl];
        let wanted =
            !m.done && m.round == round && m.replicas.get(worker).is_some_and(Option::is_some);
        if !wanted {
            return;
        }
        let gated = self.orchestrated();
        let entry = Entry::new(
            wl,
            &self.trace.workloads[wl],
            Some(round),
            self.now(),
            gated,
        );
        self.workers[worker]
            .entries
            .insert(entry.key().clone(), entry);
        self.touch(worker);
    }

    /// One step of the real worker admission loop, then its decisions applied.
    fn cycle(&mut self, worker: usize) {
        self.workers[worker].cycle_queued = false;
        let now = instant(self.queue.now());
        for decision in self.workers[worker].cycle(now) {
            self.apply(worker, decision);
        }
    }

    fn apply(&mut self, worker: usize, decision: Applied) {
        let now = self.now();
        let baton_workers = self.baton_workers();
        let releases = self.releases();
        let orchestrated = self.orchestrated();
        let last_victim_gone = self.workers[worker].last_victim_gone;
        let Some(entry) = self.workers[worker].entries.get_mut(&decision.key) else {
            return;
        };
        let wl = entry.wl;
        let round = entry.round;
        let before = (entry.signal_since, entry.cost, entry.expecting_since);
        let mut released = None;
        let mut evict = Vec::new();
        let mut finish_epoch = None;
        match decision.change {
            Change::Admit => {
                entry.expecting_since = None;
                entry.signal_since = None;
                entry.cost = None;
                let local = round.is_none();
                if let Some(r) = round {
                    let after_others_victim =
                        last_victim_gone.is_some_and(|(at, p)| p != wl && now <= at + BATCH_WINDOW);
                    self.stats[wl].reserved.push(Reservation {
                        round: r,
                        worker,
                        at: now,
                        after_others_victim,
                    });
                }
                entry.state = State::Admitted {
                    at: now,
                    evicting: false,
                    running_since: local.then_some(now),
                };
                if local {
                    finish_epoch = Some(entry.epoch);
                }
            }
            Change::Preempt(victims) => {
                entry.expecting_since = None;
                entry.signal_since = None;
                entry.cost = None;
                evict = victims;
            }
            Change::Gated(cost) => {
                entry.expecting_since = None;
                entry.signal_since.get_or_insert(now);
                // Upstream Kueue workers signal without a cost.
                entry.cost = baton_workers.then_some(cost);
            }
            Change::Pending {
                gives_back,
                room_expected,
            } => {
                let flags = Reports {
                    baton_workers,
                    releases,
                    orchestrated,
                };
                released = pending(entry, gives_back, room_expected, flags, now);
            }
            Change::Other => {
                entry.expecting_since = None;
                entry.signal_since = None;
                entry.cost = None;
            }
        }
        // What the manager's watch would report (evicting victims leaves this entry as is).
        let seen = Observed {
            signal: entry.signal_since,
            expecting: entry.expecting_since,
            cost: entry.cost,
            admitted: match entry.state {
                State::Admitted { at, .. } => Some(at),
                State::Pending => None,
            },
            evicted: false,
            released,
        };
        if let Some(epoch) = finish_epoch {
            let run = self.trace.workloads[wl].run;
            let key = decision.key.clone();
            self.queue
                .at(now + run, Event::Finish { worker, key, epoch });
            self.stats[wl].admitted_at(now, worker);
        }
        for victim in &evict {
            self.evict(worker, victim, wl, round);
        }
        // Replicas' status changes reach the manager through its watch.
        let Some(round) = round else { return };
        if (seen.signal, seen.cost, seen.expecting) != before
            || seen.admitted == Some(now)
            || seen.released.is_some()
        {
            self.notify(wl, round, worker, seen);
        }
    }

    fn notify(&mut self, wl: usize, round: u32, worker: usize, seen: Observed) {
        let at = self.watch_at(worker);
        self.queue.at(
            at,
            Event::ManagerSees {
                wl,
                round,
                worker,
                seen,
            },
        );
    }

    fn evict(&mut self, worker: usize, victim: &WorkloadKey, preemptor: usize, round: Option<u32>) {
        let now = self.now();
        let Some(e) = self.workers[worker].entries.get_mut(victim) else {
            return;
        };
        let State::Admitted {
            at,
            evicting: false,
            running_since,
        } = e.state
        else {
            return;
        };
        e.state = State::Admitted {
            at,
            evicting: true,
            running_since,
        };
        e.epoch += 1;
        e.eviction = Some(self.evictions.len());
        let (wl, victim_round, cpu) = (e.wl, e.round, e.cpu_milli);
        // Pods that never started have nothing to stop.
        let stop = match running_since {
            Some(since) => {
                self.useful += cpu as f64 * (now - since) as f64;
                self.trace.workloads[wl].stop
            }
            None => 0,
        };
        self.evictions.push(Eviction {
            worker,
            victim: wl,
            preemptor,
            round,
            at: now,
            gone: None,
        });
        self.stats[preemptor].preempted_on |= 1 << worker;
        self.queue.at(
            now + stop,
            Event::VictimGone {
                worker,
                key: victim.clone(),
            },
        );
        if let Some(round) = victim_round {
            let seen = Observed {
                evicted: true,
                admitted: Some(at),
                ..Observed::default()
            };
            self.notify(wl, round, worker, seen);
        }
    }

    /// An evicted workload's pods are gone: its quota is free. A local workload queues
    /// again; a replica is deleted (the manager dispatches the workload again).
    fn victim_gone(&mut self, worker: usize, key: &WorkloadKey) {
        let w = &mut self.workers[worker];
        let Some(mut e) = w.remove(key) else {
            return self.touch(worker);
        };
        if let Some(i) = e.eviction.take() {
            let now = self.queue.now();
            self.evictions[i].gone = Some(now);
            w.last_victim_gone = Some((now, self.evictions[i].preemptor));
        }
        if e.round.is_none() {
            e.state = State::Pending;
            e.pending.victims_in_flight.clear();
            e.pending.held = None;
            e.signal_since = None;
            e.cost = None;
            e.expecting_since = None;
            w.entries.insert(key.clone(), e);
        }
        self.touch(worker);
    }

    fn remove_replica(&mut self, wl: usize, round: u32, worker: usize) {
        let k = key(&self.trace.workloads[wl].name, Some(round));
        let w = &mut self.workers[worker];
        let evicting = w
            .entries
            .get(&k)
            .is_some_and(|e| matches!(e.state, State::Admitted { evicting: true, .. }));
        // An evicting replica holds its quota until its pods are gone (`victim_gone`).
        if !evicting && w.remove(&k).is_some() {
            self.touch(worker);
        }
    }

    fn start_run(&mut self, wl: usize, round: u32, worker: usize) {
        let now = self.now();
        let k = key(&self.trace.workloads[wl].name, Some(round));
        let Some(e) = self.workers[worker].entries.get_mut(&k) else {
            return;
        };
        if let State::Admitted {
            evicting: false,
            running_since: running @ None,
            ..
        } = &mut e.state
        {
            *running = Some(now);
            let epoch = e.epoch;
            let run = self.trace.workloads[wl].run;
            self.queue.at(
                now + run,
                Event::Finish {
                    worker,
                    key: k,
                    epoch,
                },
            );
        }
    }

    fn finish(&mut self, worker: usize, key: &WorkloadKey, epoch: u32) {
        let now = self.now();
        let w = &mut self.workers[worker];
        let Some(e) = w.entries.get(key) else { return };
        let State::Admitted {
            evicting: false,
            running_since: Some(since),
            ..
        } = e.state
        else {
            return;
        };
        if e.epoch != epoch {
            return;
        }
        self.useful += e.cpu_milli as f64 * (now - since) as f64;
        let wl = e.wl;
        w.remove(key);
        self.stats[wl].finished = Some(now);
        self.managed[wl].done = true;
        self.touch(worker);
    }

    fn manager_sees(&mut self, wl: usize, round: u32, worker: usize, seen: Observed) {
        let m = &mut self.managed[wl];
        if m.done || m.round != round || !m.observe(worker, &seen) {
            return;
        }
        self.manage(wl);
    }

    /// The manager's lifecycle decision for `wl` (`baton_core::lifecycle::decide`), carried
    /// out: replicas created and removed, a gate opened, the winner's run started, a
    /// re-dispatch, the next look.
    fn manage(&mut self, wl: usize) {
        let now = self.now();
        let decision = self.managed[wl].decide(&self.fleet, instant(now));
        let round = self.managed[wl].round;
        for removal in &decision.remove {
            let Some(worker) = self.fleet.index(&removal.cluster) else {
                continue;
            };
            self.managed[wl].removed(worker);
            // An evicted winner's replica is deleted by its worker once its pods are gone.
            if !matches!(removal.cause, RemovalCause::WinnerLost(_)) {
                let at = self.write_at(worker);
                self.queue
                    .at(at, Event::RemoveReplica { wl, round, worker });
            }
        }
        for cluster in &decision.create {
            let Some(worker) = self.fleet.index(cluster) else {
                continue;
            };
            self.managed[wl].created(&self.fleet, worker);
            let at = self.write_at(worker);
            self.queue
                .at(at, Event::CreateReplica { wl, round, worker });
        }
        if let Some(opening) = &decision.open_gate
            && let Some(worker) = self.fleet.index(&opening.cluster)
        {
            self.managed[wl].opened(worker, now);
            self.stats[wl].gates.push((round, worker, now));
            let at = self.write_at(worker);
            self.queue.at(at, Event::OpenGate { wl, round, worker });
        }
        match &decision.progress {
            Progress::Won { cluster } => {
                let Some(worker) = self.fleet.index(cluster) else {
                    return;
                };
                let m = &mut self.managed[wl];
                m.winner = Some(worker);
                let at = m.admitted_at.get(worker).copied().flatten().unwrap_or(now);
                self.stats[wl].winners.push((round, worker));
                self.stats[wl].admitted_at(at, worker);
                let at = self.write_at(worker);
                self.queue.at(at, Event::StartRun { wl, round, worker });
            }
            Progress::Redispatch(_) => {
                // The manager's own quota is not simulated: the workload is reserved again
                // at once and dispatched afresh.
                self.managed[wl].redispatched();
                return self.manage(wl);
            }
            _ => {}
        }
        if let Some(after) = decision.requeue_after {
            self.tick(wl, now + millis(after).max(1));
        }
    }

    /// Looks at `wl` again at `at`, unless an earlier look is already due.
    fn tick(&mut self, wl: usize, at: Millis) {
        let now = self.now();
        let m = &mut self.managed[wl];
        if m.next_tick.is_some_and(|t| t > now && t <= at) {
            return;
        }
        m.next_tick = Some(at);
        self.queue.at(at, Event::ManagerTick { wl, at });
    }
}

/// What the workers of a run report (see `Sim::baton_workers` and `Sim::releases`).
#[derive(Clone, Copy)]
struct Reports {
    baton_workers: bool,
    releases: bool,
    orchestrated: bool,
}

/// A pending outcome applied to `entry`, as the shim writes it (`admission::writes`): no
/// signal; a replica whose gate is Closed with room coming without eviction reports
/// `RoomExpected` (Baton's workers); the baton holder (gate Open) that cannot make room gives
/// the baton back when asked to (its gate Closed again). Returns that release.
fn pending(
    entry: &mut Entry,
    gives_back: Option<ReleaseReason>,
    room_expected: Option<i64>,
    reports: Reports,
    now: Millis,
) -> Option<(Millis, ReleaseReason)> {
    entry.signal_since = None;
    entry.cost = None;
    let replica = entry.round.is_some();
    match room_expected.filter(|_| reports.baton_workers && replica) {
        Some(within) => {
            entry.expecting_since.get_or_insert(now);
            entry.cost = Some(PreemptionCost {
                victims: 0,
                highest_priority: 0,
                pods: 0,
                stop_seconds: Some(within),
            });
        }
        None => entry.expecting_since = None,
    }
    let holds_baton = reports.orchestrated && replica && !entry.pending.gate_closed;
    let why = gives_back.filter(|_| reports.releases && holds_baton)?;
    entry.pending.gate_closed = true;
    Some((now, why))
}
