//! A cost model of a real kube-apiserver, off by default: every request books service time
//! on one of a few "server workers" (the CPUs that decode, admit, encode), waits in line when
//! they are all busy, then waits a while longer without holding one (etcd's commit, the
//! network), and watch events arrive a little after the change. The testbed itself answers in
//! microseconds; with the model on, a benchmark sees where a pipeline waits and what every
//! request per workload costs.
//!
//! The core is pure: [`Schedule`] books work on the earliest free worker in exact time (not
//! timer ticks, so capacity does not depend on the timer's resolution), and [`Service::draw`]
//! turns two uniform numbers into a service time. [`Cost`] is the shell a cluster holds: a
//! switch, a random source, and the [`Budget`] it books on, which several clusters may share
//! (as the API servers of one machine share its CPUs).
//!
//! [`CostProfile::kube_apiserver`] is calibrated by `e2e/benches/apiserver_cost.rs` against
//! ConfigMap creates measured on a real kube-apiserver (v1.36, etcd, this 2-core machine).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a request costs, by the kind of work it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CostClass {
    /// create, update, patch, delete: admission, encoding and an etcd commit.
    Write,
    /// get of one object.
    Read,
    /// list of a collection.
    List,
    /// the start of a watch.
    Watch,
    /// discovery, OpenAPI, version, health.
    Other,
}

/// The time one kind of request takes: `held` on a server worker, then `wait` without one.
/// Both are log-normal around their median (`spread` is the log-normal's sigma; 0 = fixed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Service {
    pub held: Duration,
    pub held_spread: f64,
    pub wait: Duration,
    pub wait_spread: f64,
}

impl Service {
    pub const fn fixed(held: Duration, wait: Duration) -> Self {
        Self {
            held,
            held_spread: 0.0,
            wait,
            wait_spread: 0.0,
        }
    }

    /// The held and waiting times of one request, from four uniform numbers in (0, 1).
    pub fn draw(&self, u: [f64; 4]) -> (Duration, Duration) {
        (
            log_normal(self.held, self.held_spread, u[0], u[1]),
            log_normal(self.wait, self.wait_spread, u[2], u[3]),
        )
    }

    /// The mean held time (a log-normal's mean is its median times e^(sigma²/2)).
    pub fn mean_held(&self) -> Duration {
        self.held
            .mul_f64((self.held_spread * self.held_spread / 2.0).exp())
    }
}

/// `median · e^(sigma·z)` with z standard normal from two uniforms (Box–Muller).
fn log_normal(median: Duration, sigma: f64, u1: f64, u2: f64) -> Duration {
    if sigma <= 0.0 || median.is_zero() {
        return median;
    }
    let u1 = u1.clamp(f64::MIN_POSITIVE, 1.0);
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    // Capped at 20 medians: one freak draw should not stall a benchmark.
    median.mul_f64((sigma * z).exp().min(20.0))
}

/// A model of one API server's costs.
#[derive(Debug, Clone, PartialEq)]
pub struct CostProfile {
    /// Server workers of a budget built for this profile alone ([`Budget::for_profile`]).
    pub workers: usize,
    pub write: Service,
    pub read: Service,
    pub list: Service,
    pub watch: Service,
    pub other: Service,
    /// How long after a change its watch events leave the server.
    pub watch_delay: Duration,
}

const fn us(micros: u64) -> Duration {
    Duration::from_micros(micros)
}

impl CostProfile {
    /// A kube-apiserver with etcd on this 2-core machine. Writes are calibrated (see the
    /// module comment); reads, lists and watches are estimates relative to them (a get is
    /// served from etcd, lists and watch starts from the watch cache).
    pub fn kube_apiserver() -> Self {
        Self {
            workers: 2,
            write: Service {
                held: us(1_900),
                held_spread: 0.7,
                wait: us(600),
                wait_spread: 0.6,
            },
            read: Service {
                held: us(600),
                held_spread: 0.4,
                wait: us(300),
                wait_spread: 0.4,
            },
            list: Service {
                held: us(2_000),
                held_spread: 0.4,
                wait: us(0),
                wait_spread: 0.0,
            },
            watch: Service::fixed(us(500), us(0)),
            other: Service::fixed(us(300), us(0)),
            watch_delay: us(1_500),
        }
    }

    pub fn service(&self, class: CostClass) -> &Service {
        match class {
            CostClass::Write => &self.write,
            CostClass::Read => &self.read,
            CostClass::List => &self.list,
            CostClass::Watch => &self.watch,
            CostClass::Other => &self.other,
        }
    }

    /// Requests of `class` per second that `workers` workers can serve at most.
    pub fn capacity(&self, class: CostClass, workers: usize) -> f64 {
        let mean = self.service(class).mean_held().as_secs_f64();
        if mean > 0.0 {
            workers as f64 / mean
        } else {
            f64::INFINITY
        }
    }
}

/// When each server worker is next free; work is booked first come, first served on the
/// worker free first (a FIFO queue in front of `workers` servers).
#[derive(Debug, Clone)]
pub struct Schedule {
    free_at: Vec<Instant>,
}

impl Schedule {
    pub fn new(workers: usize, now: Instant) -> Self {
        Self {
            free_at: vec![now; workers.max(1)],
        }
    }

    pub fn workers(&self) -> usize {
        self.free_at.len()
    }

    /// Books `held` of work arriving at `now`; returns when it is done.
    pub fn book(&mut self, now: Instant, held: Duration) -> Instant {
        let Some(slot) = self.free_at.iter_mut().min() else {
            return now + held;
        };
        let end = (*slot).max(now) + held;
        *slot = end;
        end
    }
}

/// Server workers that one or more clusters book their requests on.
#[derive(Debug)]
pub struct Budget {
    schedule: Mutex<Schedule>,
}

impl Budget {
    pub fn new(workers: usize) -> Arc<Self> {
        Arc::new(Self {
            schedule: Mutex::new(Schedule::new(workers, Instant::now())),
        })
    }

    /// A budget of the profile's own worker count.
    pub fn for_profile(profile: &CostProfile) -> Arc<Self> {
        Self::new(profile.workers)
    }

    pub fn workers(&self) -> usize {
        self.lock().workers()
    }

    fn book(&self, now: Instant, held: Duration) -> Instant {
        self.lock().book(now, held)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Clone)]
struct On {
    profile: Arc<CostProfile>,
    budget: Arc<Budget>,
}

/// One cluster's switch of the model.
pub struct Cost {
    on: Mutex<Option<On>>,
    rng: AtomicU64,
}

impl Default for Cost {
    fn default() -> Self {
        Self {
            on: Mutex::new(None),
            rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
        }
    }
}

impl std::fmt::Debug for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cost")
            .field("on", &self.current().map(|o| o.profile))
            .finish()
    }
}

impl Cost {
    /// Turns the model on, booking on `budget` (shared with other clusters, or not).
    pub fn enable(&self, profile: CostProfile, budget: Arc<Budget>) {
        *self.lock() = Some(On {
            profile: Arc::new(profile),
            budget,
        });
    }

    /// Turns the model on with a budget of its own.
    pub fn enable_alone(&self, profile: CostProfile) {
        let budget = Budget::for_profile(&profile);
        self.enable(profile, budget);
    }

    pub fn disable(&self) {
        *self.lock() = None;
    }

    pub fn profile(&self) -> Option<Arc<CostProfile>> {
        self.current().map(|o| o.profile)
    }

    /// The workers of the budget this cluster books on, when the model is on.
    pub fn workers(&self) -> Option<usize> {
        self.current().map(|o| o.budget.workers())
    }

    /// When a request of `class` arriving at `now` is done, or `None` when the model is off.
    pub fn book(&self, class: CostClass, now: Instant) -> Option<Instant> {
        let on = self.current()?;
        let u = [self.next(), self.next(), self.next(), self.next()];
        let (held, wait) = on.profile.service(class).draw(u);
        Some(on.budget.book(now, held) + wait)
    }

    /// How long watch events wait before they leave, or `None` when the model is off.
    pub fn watch_delay(&self) -> Option<Duration> {
        self.current()
            .map(|o| o.profile.watch_delay)
            .filter(|d| !d.is_zero())
    }

    /// Waits as long as a request of `class` would take on the modelled server.
    pub async fn serve(&self, class: CostClass) {
        if let Some(done) = self.book(class, Instant::now()) {
            tokio::time::sleep_until(done.into()).await;
        }
    }

    fn current(&self) -> Option<On> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<On>> {
        self.on.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A uniform number in (0, 1) (xorshift64*; good enough for service times).
    fn next(&self) -> f64 {
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.store(x, Ordering::Relaxed);
        ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_serves_in_arrival_order() {
        let t0 = Instant::now();
        let mut s = Schedule::new(1, t0);
        let d = Duration::from_millis(2);
        assert_eq!(s.book(t0, d), t0 + d);
        assert_eq!(s.book(t0, d), t0 + 2 * d);
        // Arriving after the worker went idle: no queueing.
        let later = t0 + Duration::from_millis(10);
        assert_eq!(s.book(later, d), later + d);
    }

    #[test]
    fn n_workers_take_n_at_once_and_queue_the_next() {
        let t0 = Instant::now();
        let d = Duration::from_millis(3);
        let mut s = Schedule::new(3, t0);
        for _ in 0..3 {
            assert_eq!(s.book(t0, d), t0 + d);
        }
        assert_eq!(s.book(t0, d), t0 + 2 * d);
        assert_eq!(Schedule::new(0, t0).workers(), 1);
    }

    #[test]
    fn the_earliest_free_worker_takes_the_work() {
        let t0 = Instant::now();
        let mut s = Schedule::new(2, t0);
        s.book(t0, Duration::from_millis(10));
        s.book(t0, Duration::from_millis(4));
        assert_eq!(
            s.book(t0, Duration::from_millis(1)),
            t0 + Duration::from_millis(5)
        );
    }

    #[test]
    fn fixed_services_draw_their_medians() {
        let s = Service::fixed(Duration::from_millis(2), Duration::from_millis(1));
        assert_eq!(
            s.draw([0.3, 0.9, 0.1, 0.5]),
            (Duration::from_millis(2), Duration::from_millis(1))
        );
        assert_eq!(s.mean_held(), Duration::from_millis(2));
    }

    #[test]
    fn log_normal_draws_centre_on_the_median_and_spread() {
        let median = Duration::from_millis(4);
        // z = 0 (u2 = 1/4: cos(pi/2) = 0): the median itself.
        let at_median = log_normal(median, 0.5, 0.5, 0.25);
        assert!((at_median.as_secs_f64() - 0.004).abs() < 1e-9);
        // u1 small, u2 = 0: a large positive z, so far above the median but capped.
        let high = log_normal(median, 0.5, 1e-6, 0.0);
        assert!(high > median * 3 && high <= median * 20);
        let low = log_normal(median, 0.5, 1e-6, 0.5);
        assert!(low < median / 3);
        assert_eq!(log_normal(Duration::ZERO, 0.5, 0.1, 0.1), Duration::ZERO);
    }

    #[test]
    fn capacity_is_workers_over_mean_service() {
        let mut p = CostProfile::kube_apiserver();
        p.write = Service::fixed(Duration::from_millis(4), Duration::ZERO);
        assert!((p.capacity(CostClass::Write, 2) - 500.0).abs() < 1e-6);
        p.other = Service::fixed(Duration::ZERO, Duration::ZERO);
        assert!(p.capacity(CostClass::Other, 2).is_infinite());
    }

    #[test]
    fn off_books_nothing_and_on_books_on_the_shared_budget() {
        let cost = Cost::default();
        let now = Instant::now();
        assert_eq!(cost.book(CostClass::Write, now), None);
        assert_eq!(cost.watch_delay(), None);
        let mut p = CostProfile::kube_apiserver();
        p.write = Service::fixed(Duration::from_millis(5), Duration::from_millis(1));
        let budget = Budget::new(1);
        // After the budget's start: its worker is free from then on.
        let now = Instant::now();
        let (a, b) = (Cost::default(), Cost::default());
        a.enable(p.clone(), budget.clone());
        b.enable(p, budget);
        assert_eq!(a.workers(), Some(1));
        let first = a.book(CostClass::Write, now);
        let second = b.book(CostClass::Write, now);
        assert_eq!(first, Some(now + Duration::from_millis(6)));
        // The other cluster waits for the shared worker.
        assert_eq!(second, Some(now + Duration::from_millis(11)));
        a.disable();
        assert_eq!(a.book(CostClass::Write, now), None);
        assert!(b.watch_delay().is_some());
    }

    #[test]
    fn uniforms_stay_inside_the_open_interval() {
        let cost = Cost::default();
        for _ in 0..10_000 {
            let u = cost.next();
            assert!(u > 0.0 && u < 1.0);
        }
    }
}
