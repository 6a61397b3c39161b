//! Wake-ups for manager Workloads, held in a [`Backlog`] until the reconciler can take them.
//! Every wake-up of a manager Workload comes here: its own watch event, every replica event
//! of every worker, a resync of all of them. During a burst (50,000 new workloads × 20
//! workers) the reconciler falls far behind. Handed everything at once, its queue grew to
//! one entry per workload, with its own copies of the name and namespace, in tables that
//! never shrink (issue 23); here a waiting workload costs a shared key, and the reconciler
//! is handed a bounded number at a time, each once until it takes it.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use baton_crds::WorkloadKey;
use baton_crds::workload::Workload;
use futures::Stream;
use futures::task::AtomicWaker;
use kube::runtime::reflector::ObjectRef;
use prometheus_client::metrics::gauge::Gauge;

use crate::manager::plan::backlog::Backlog;

/// Reconciles handed on and not ended at most, per [`Backlog`]: four times the reconciles
/// run at once keeps the reconciler busy between two hand-ons.
pub const HANDED_PER_RECONCILE: usize = 4;

/// How long a workload handed on counts when its end is not reported: far above any
/// reconcile (each write has its own timeout).
pub const STALE_AFTER: Duration = Duration::from_secs(120);

struct Shared {
    backlog: Mutex<Backlog>,
    /// The receiver, when it waits for a wake-up or for room.
    waker: AtomicWaker,
    senders: AtomicUsize,
    /// How many wait (`baton_reconcile_backlog`).
    waiting: Gauge,
}

impl Shared {
    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, backlog: &Backlog) {
        self.waiting
            .set(i64::try_from(backlog.waiting()).unwrap_or(i64::MAX));
    }
}

/// The sending end: cheap to clone, shared by every watch.
pub struct WakeSender {
    shared: Arc<Shared>,
}

/// The receiving end, a stream of the workloads to reconcile.
pub struct WakeReceiver {
    shared: Arc<Shared>,
}

/// Where the reconciler reports that a reconcile ended.
#[derive(Clone)]
pub struct Done {
    shared: Arc<Shared>,
}

/// A new wake-up queue handing on at most `limit` workloads at a time, counting those
/// that wait in `waiting`.
pub fn channel(limit: usize, waiting: Gauge) -> (WakeSender, WakeReceiver, Done) {
    let shared = Arc::new(Shared {
        backlog: Mutex::new(Backlog::new(limit, STALE_AFTER)),
        waker: AtomicWaker::new(),
        senders: AtomicUsize::new(1),
        waiting,
    });
    (
        WakeSender {
            shared: shared.clone(),
        },
        WakeReceiver {
            shared: shared.clone(),
        },
        Done { shared },
    )
}

impl WakeSender {
    /// Wakes `key`'s workload, unless a wake-up for it waits already.
    pub fn wake(&self, key: WorkloadKey) {
        let mut backlog = self.shared.backlog();
        if backlog.wake(key) {
            self.shared.count(&backlog);
            drop(backlog);
            self.shared.waker.wake();
        }
    }

    /// Wakes every workload of `keys`.
    pub fn wake_all(&self, keys: impl IntoIterator<Item = WorkloadKey>) {
        let mut woke = false;
        {
            let mut backlog = self.shared.backlog();
            for key in keys {
                woke |= backlog.wake(key);
            }
            self.shared.count(&backlog);
        }
        if woke {
            self.shared.waker.wake();
        }
    }

    /// (waiting, handed on): for the tests.
    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let backlog = self.shared.backlog();
        (backlog.waiting(), backlog.handed())
    }
}

impl Clone for WakeSender {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::AcqRel);
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for WakeSender {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last one: the receiver ends once the backlog is drained.
            self.shared.waker.wake();
        }
    }
}

impl Done {
    /// The reconcile of the workload `name` in `namespace` ended, however it ended.
    pub fn done(&self, namespace: &str, name: &str) {
        self.shared
            .backlog()
            .done(&WorkloadKey::new(namespace, name));
        self.shared.waker.wake();
    }
}

impl WakeReceiver {
    /// One more sending end.
    pub fn sender(&self) -> WakeSender {
        self.shared.senders.fetch_add(1, Ordering::AcqRel);
        WakeSender {
            shared: self.shared.clone(),
        }
    }
}

impl Stream for WakeReceiver {
    type Item = ObjectRef<Workload>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Registered before looking, so that a wake-up between the look and the return is
        // not lost.
        self.shared.waker.register(cx.waker());
        let mut backlog = self.shared.backlog();
        if let Some(key) = backlog.take(Instant::now()) {
            self.shared.count(&backlog);
            return Poll::Ready(Some(ObjectRef::new(key.name()).within(key.namespace())));
        }
        if backlog.waiting() == 0 && self.shared.senders.load(Ordering::Acquire) == 0 {
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{FutureExt, StreamExt};

    fn key(name: &str) -> WorkloadKey {
        WorkloadKey::new("team-a", name)
    }

    /// Everything ready now, without waiting for more.
    fn ready(rx: &mut WakeReceiver) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(Some(r)) = rx.next().now_or_never() {
            out.push(format!("{}/{}", r.namespace.unwrap_or_default(), r.name));
        }
        out
    }

    #[test]
    fn a_workload_woken_twice_before_it_is_taken_comes_once() {
        let (tx, mut rx, _) = channel(10, Gauge::default());
        tx.wake(key("a"));
        tx.wake(key("b"));
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a", "team-a/b"]);
    }

    #[test]
    fn a_workload_woken_after_it_was_taken_comes_again() {
        let (tx, mut rx, _) = channel(10, Gauge::default());
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a"]);
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a"]);
    }

    #[test]
    fn past_the_limit_workloads_wait_until_a_reconcile_ends() {
        let waiting = Gauge::default();
        let (tx, mut rx, done) = channel(2, waiting.clone());
        tx.wake_all(["a", "b", "c"].map(key));
        assert_eq!(waiting.get(), 3);
        assert_eq!(ready(&mut rx), ["team-a/a", "team-a/b"]);
        assert_eq!(tx.counts(), (1, 2));
        assert_eq!(waiting.get(), 1);
        done.done("team-a", "a");
        assert_eq!(ready(&mut rx), ["team-a/c"]);
        assert_eq!(tx.counts(), (0, 2));
        assert_eq!(waiting.get(), 0);
        tx.wake(key("d"));
        assert_eq!(waiting.get(), 1);
    }

    #[tokio::test]
    async fn a_receiver_waiting_for_room_is_woken_when_a_reconcile_ends() {
        let (tx, mut rx, done) = channel(1, Gauge::default());
        tx.wake_all(["a", "b"].map(key));
        assert_eq!(ready(&mut rx), ["team-a/a"]);
        let next = tokio::spawn(async move { rx.next().await.map(|r| r.name) });
        tokio::task::yield_now().await;
        done.done("team-a", "a");
        let next = tokio::time::timeout(Duration::from_secs(10), next).await;
        assert_eq!(
            next.ok().and_then(Result::ok).flatten().as_deref(),
            Some("b")
        );
    }

    #[test]
    fn the_stream_ends_when_every_sender_is_gone_and_nothing_waits() {
        let (tx, mut rx, _) = channel(10, Gauge::default());
        let other = tx.clone();
        tx.wake(key("a"));
        drop(tx);
        assert_eq!(ready(&mut rx), ["team-a/a"]);
        assert_eq!(rx.next().now_or_never(), None, "a sender is left");
        drop(other);
        assert_eq!(rx.next().now_or_never(), Some(None));
    }
}
