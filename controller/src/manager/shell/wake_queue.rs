//! Wake-ups for manager Workloads that hold each workload at most once until the reconciler
//! takes it. Every replica event of every worker wakes its workload; during a dispatch
//! burst (10,000 workloads × 10 workers) the reconciler falls behind, and a plain channel
//! held one reference per event — tens of thousands of them, each with its own copies of the
//! name, namespace, uid and resourceVersion (issue 23). A workload woken again while its
//! first wake-up waits needs no second one: the reconcile it gets reads the cache after both.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use baton_crds::WorkloadKey;
use baton_crds::workload::Workload;
use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;

/// The workloads woken and not taken yet.
type Queued = Arc<Mutex<HashSet<WorkloadKey>>>;

/// The sending end: cheap to clone, shared by every worker's watch.
#[derive(Clone)]
pub struct WakeSender {
    queued: Queued,
    tx: mpsc::UnboundedSender<WorkloadKey>,
}

/// The receiving end, a stream of the workloads to reconcile, each once per wake-up taken.
pub struct WakeReceiver {
    queued: Queued,
    rx: mpsc::UnboundedReceiver<WorkloadKey>,
}

/// A new wake-up queue.
pub fn channel() -> (WakeSender, WakeReceiver) {
    let queued = Queued::default();
    let (tx, rx) = mpsc::unbounded_channel();
    (
        WakeSender {
            queued: queued.clone(),
            tx,
        },
        WakeReceiver { queued, rx },
    )
}

impl WakeSender {
    /// Wakes `key`'s workload, unless a wake-up for it waits already.
    pub fn wake(&self, key: WorkloadKey) {
        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        if queued.insert(key.clone()) && self.tx.send(key.clone()).is_err() {
            // The reconciler is gone (shutdown): nothing will take it.
            queued.remove(&key);
        }
    }
}

impl Stream for WakeReceiver {
    type Item = ObjectRef<Workload>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.rx.poll_recv(cx).map(|key| {
            key.map(|key| {
                // Taken: a wake-up from now on is a new one.
                this.queued
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&key);
                ObjectRef::new(key.name()).within(key.namespace())
            })
        })
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
        let (tx, mut rx) = channel();
        tx.wake(key("a"));
        tx.wake(key("b"));
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a", "team-a/b"]);
    }

    #[test]
    fn a_workload_woken_after_it_was_taken_comes_again() {
        let (tx, mut rx) = channel();
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a"]);
        tx.wake(key("a"));
        assert_eq!(ready(&mut rx), ["team-a/a"]);
    }

    #[test]
    fn the_stream_ends_when_every_sender_is_gone() {
        let (tx, mut rx) = channel();
        tx.wake(key("a"));
        drop(tx);
        assert_eq!(ready(&mut rx), ["team-a/a"]);
        assert_eq!(rx.next().now_or_never(), Some(None));
    }

    #[test]
    fn a_wake_up_after_the_receiver_is_gone_is_not_kept() {
        let (tx, rx) = channel();
        drop(rx);
        tx.wake(key("a"));
        assert!(tx.queued.lock().map(|q| q.is_empty()).unwrap_or(false));
    }
}
