//! Kubernetes events (`events.k8s.io/v1`), published in the background through a bounded
//! queue, so that no decision waits for one and no burst of them grows the process.
//!
//! kube's `Recorder` keeps every event it published for six minutes and walks that whole
//! cache, under one lock, on every publish. At 10,000 workloads dispatched in a minute the
//! manager held 40,000 cached events and as many tasks queued on that lock — about 80 MB of
//! its 378 MB, and the lock made every event wait for all the others. [`Events`] keeps the
//! same event objects and the same aggregation with fixed bounds:
//!
//! - at most [`QUEUE`] events wait; when the queue is full an event is dropped and counted
//!   (`baton_events_dropped_total`), as client-go's broadcaster drops past 1,000 queued;
//! - at most [`IN_FLIGHT`] are written at once;
//! - an event that repeats one published less than [`SERIES_TTL`] ago (same type, action,
//!   reason, regarding object and related object; the note is not compared, and the first
//!   note stays) patches the first one's `series` instead of creating another object. That
//!   memory holds at most [`SERIES_MEMORY`] series (client-go's correlator keeps 4,096); the
//!   oldest is forgotten first, and a forgotten series starts a new event object.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
pub use kube::runtime::events::{Event, EventType, Reporter};
use prometheus_client::metrics::counter::Counter;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Events waiting to be written; past this, new ones are dropped (and counted).
pub const QUEUE: usize = 1_000;
/// Events written at once.
pub const IN_FLIGHT: usize = 4;
/// How long a published event gathers its repeats into its series.
pub const SERIES_TTL: chrono::Duration = chrono::Duration::minutes(6);
/// Series remembered at most.
pub const SERIES_MEMORY: usize = 4_096;

/// A handle to publish events; clones share one queue and one writer task, which ends when
/// the last handle is dropped.
#[derive(Clone)]
pub struct Events {
    queue: mpsc::Sender<(Event, ObjectReference)>,
    dropped: Counter,
}

impl Events {
    /// Starts the writer task (inside a Tokio runtime). `dropped` counts events the full
    /// queue turned away.
    pub fn start(client: Client, reporter: Reporter, dropped: Counter) -> Self {
        let (queue, received) = mpsc::channel(QUEUE);
        tokio::spawn(write_all(client, reporter, received));
        Events { queue, dropped }
    }

    /// Queues an event on `regarding`; never waits. A full queue drops it (counted).
    pub fn publish(&self, event: Event, regarding: ObjectReference) {
        match self.queue.try_send((event, regarding)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full((event, regarding))) => {
                self.dropped.inc();
                tracing::debug!(reason = %event.reason, object = ?regarding.name, "event queue full; event dropped");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

async fn write_all(
    client: Client,
    reporter: Reporter,
    received: mpsc::Receiver<(Event, ObjectReference)>,
) {
    let series = Arc::new(Mutex::new(SeriesMemory::default()));
    ReceiverStream::new(received)
        .for_each_concurrent(IN_FLIGHT, |(event, regarding)| {
            let (client, reporter, series) = (client.clone(), &reporter, series.clone());
            async move {
                if let Err(e) = write_one(&client, reporter, &series, &event, &regarding).await {
                    tracing::debug!(error = %e, reason = %event.reason, "cannot publish event");
                }
            }
        })
        .await;
}

async fn write_one(
    client: &Client,
    reporter: &Reporter,
    series: &Mutex<SeriesMemory>,
    event: &Event,
    regarding: &ObjectReference,
) -> Result<(), kube::Error> {
    let now = Utc::now();
    let key = series_key(event, regarding);
    let namespace = regarding.namespace.as_deref().unwrap_or("default");
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), namespace);
    let repeat = lock(series).repeat(key, now);
    match repeat {
        Some(Repeat { name, count }) => {
            let patch = serde_json::json!({"series": EventSeries {
                count,
                last_observed_time: micro_time(now),
            }});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        None => {
            let created = new_event(reporter, event, regarding, now);
            let name = created.metadata.name.clone().unwrap_or_default();
            api.create(&PostParams::default(), &created).await?;
            lock(series).created(key, name, now);
        }
    }
    Ok(())
}

fn lock(series: &Mutex<SeriesMemory>) -> std::sync::MutexGuard<'_, SeriesMemory> {
    series.lock().unwrap_or_else(|p| p.into_inner())
}

fn micro_time(at: DateTime<Utc>) -> MicroTime {
    let nanos = at.timestamp_nanos_opt().unwrap_or(0);
    MicroTime(k8s_openapi::jiff::Timestamp::from_nanosecond(i128::from(nanos)).unwrap_or_default())
}

/// The event object for a first occurrence, as kube's recorder builds it: named after the
/// regarding object and the time in nanoseconds (hex), in the regarding object's namespace
/// (`default` for cluster-scoped objects, where the request goes).
pub fn new_event(
    reporter: &Reporter,
    event: &Event,
    regarding: &ObjectReference,
    now: DateTime<Utc>,
) -> K8sEvent {
    let prefix = regarding.name.as_deref().unwrap_or(&reporter.controller);
    let nanos = now.timestamp_nanos_opt().unwrap_or(0);
    K8sEvent {
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        event_time: Some(micro_time(now)),
        regarding: Some(regarding.clone()),
        related: event.secondary.clone(),
        note: event.note.clone(),
        metadata: ObjectMeta {
            namespace: regarding.namespace.clone(),
            name: Some(format!("{prefix}.{nanos:x}")),
            ..Default::default()
        },
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(
            reporter
                .instance
                .clone()
                .unwrap_or_else(|| reporter.controller.clone()),
        ),
        type_: Some(
            match event.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .into(),
        ),
        ..Default::default()
    }
}

/// What makes two events one series: type, action, reason, the regarding object and the
/// related one (not the note). Hashed: the memory holds 8 bytes per series, not the objects.
pub fn series_key(event: &Event, regarding: &ObjectReference) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    matches!(event.type_, EventType::Warning).hash(&mut h);
    event.action.hash(&mut h);
    event.reason.hash(&mut h);
    hash_reference(regarding, &mut h);
    if let Some(related) = &event.secondary {
        hash_reference(related, &mut h);
    }
    h.finish()
}

fn hash_reference(r: &ObjectReference, h: &mut impl Hasher) {
    for part in [&r.api_version, &r.kind, &r.namespace, &r.name, &r.uid] {
        part.hash(h);
    }
}

/// A repeat of a remembered event: patch `name`'s series to `count`.
#[derive(Debug, PartialEq, Eq)]
pub struct Repeat {
    pub name: String,
    pub count: i32,
}

struct Series {
    name: String,
    count: i32,
    last: DateTime<Utc>,
}

/// The series published lately, bounded by age ([`SERIES_TTL`]) and number
/// ([`SERIES_MEMORY`], oldest first out).
#[derive(Default)]
pub struct SeriesMemory {
    series: HashMap<u64, Series>,
    /// Keys by first publication, oldest first (a key may be listed after its series was
    /// dropped; such entries are skipped).
    order: VecDeque<(u64, DateTime<Utc>)>,
}

impl SeriesMemory {
    /// Whether `key` repeats a live series; if so the series counts this occurrence.
    pub fn repeat(&mut self, key: u64, now: DateTime<Utc>) -> Option<Repeat> {
        self.expire(now);
        let series = self.series.get_mut(&key)?;
        if series.last + SERIES_TTL <= now {
            // Over but not yet swept (it waits behind a younger entry of the order).
            self.series.remove(&key);
            return None;
        }
        // A first event counts as 1; its first repeat makes the series count 2.
        series.count = series.count.saturating_add(1).max(2);
        series.last = now;
        Some(Repeat {
            name: series.name.clone(),
            count: series.count,
        })
    }

    /// Remembers a newly created event as the start of its series.
    pub fn created(&mut self, key: u64, name: String, now: DateTime<Utc>) {
        self.series.insert(
            key,
            Series {
                name,
                count: 1,
                last: now,
            },
        );
        self.order.push_back((key, now));
        while self.series.len() > SERIES_MEMORY {
            let Some((oldest, _)) = self.order.pop_front() else {
                break;
            };
            self.series.remove(&oldest);
        }
    }

    pub fn len(&self) -> usize {
        self.series.len()
    }

    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// Drops series whose last occurrence is [`SERIES_TTL`] old (kube's rule), walking the
    /// order from the oldest start until one is younger than the TTL.
    fn expire(&mut self, now: DateTime<Utc>) {
        while let Some(&(key, started)) = self.order.front() {
            if started + SERIES_TTL > now {
                break;
            }
            self.order.pop_front();
            match self.series.get(&key) {
                // Still repeating: it moves to the back, counted from its last occurrence.
                Some(s) if s.last + SERIES_TTL > now => self.order.push_back((key, s.last)),
                Some(_) => {
                    self.series.remove(&key);
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(second: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + second, 0)
            .single()
            .unwrap()
    }

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: reason.into(),
            secondary: None,
        }
    }

    fn object(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("kueue.x-k8s.io/v1beta2".into()),
            kind: Some("Workload".into()),
            namespace: Some("default".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        }
    }

    #[test]
    fn the_key_ignores_the_note_and_tells_objects_reasons_and_related_apart() {
        let base = series_key(&event("Dispatched", "one"), &object("a"));
        assert_eq!(base, series_key(&event("Dispatched", "two"), &object("a")));
        assert_ne!(base, series_key(&event("Dispatched", "one"), &object("b")));
        assert_ne!(base, series_key(&event("Admitted", "one"), &object("a")));
        let mut related = event("Dispatched", "one");
        related.secondary = Some(object("cluster"));
        assert_ne!(base, series_key(&related, &object("a")));
        let mut warning = event("Dispatched", "one");
        warning.type_ = EventType::Warning;
        assert_ne!(base, series_key(&warning, &object("a")));
    }

    #[test]
    fn a_repeat_patches_the_first_event_and_counts_from_two() {
        let mut memory = SeriesMemory::default();
        assert_eq!(memory.repeat(7, at(0)), None);
        memory.created(7, "a.1".into(), at(0));
        assert_eq!(
            memory.repeat(7, at(10)),
            Some(Repeat {
                name: "a.1".into(),
                count: 2
            })
        );
        assert_eq!(memory.repeat(7, at(20)).map(|r| r.count), Some(3));
    }

    #[test]
    fn a_series_ends_six_minutes_after_its_last_occurrence() {
        let mut memory = SeriesMemory::default();
        memory.created(1, "quiet".into(), at(0));
        memory.created(2, "busy".into(), at(0));
        // "busy" repeats at 5 min; "quiet" never does.
        assert!(memory.repeat(2, at(300)).is_some());
        assert_eq!(memory.repeat(1, at(360)), None, "6 min after its start");
        assert!(
            memory.repeat(2, at(600)).is_some(),
            "5 min after its last repeat"
        );
        assert_eq!(memory.repeat(2, at(960)), None, "6 min after the last");
        assert!(memory.is_empty());
    }

    #[test]
    fn the_memory_is_bounded_and_forgets_the_oldest_first() {
        let mut memory = SeriesMemory::default();
        for key in 0..(SERIES_MEMORY as u64 + 10) {
            memory.created(key, format!("e{key}"), at(1));
        }
        assert_eq!(memory.len(), SERIES_MEMORY);
        assert_eq!(memory.repeat(0, at(2)), None, "the oldest is forgotten");
        assert!(memory.repeat(SERIES_MEMORY as u64 + 9, at(2)).is_some());
    }

    #[test]
    fn a_first_event_is_the_object_kubes_recorder_would_create() {
        let reporter = Reporter {
            controller: "baton-manager".into(),
            instance: None,
        };
        let mut e = event("Dispatched", "to w1");
        e.type_ = EventType::Warning;
        let created = new_event(&reporter, &e, &object("a"), at(0));
        assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
        assert!(
            created
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("a."))
        );
        assert_eq!(created.type_.as_deref(), Some("Warning"));
        assert_eq!(created.note.as_deref(), Some("to w1"));
        assert_eq!(created.reporting_instance.as_deref(), Some("baton-manager"));
        assert_eq!(created.regarding, Some(object("a")));
        assert!(created.series.is_none());
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_instead_of_waiting() {
        // A handle whose writer never runs: the queue fills and the rest are dropped.
        let (queue, _held) = mpsc::channel(2);
        let events = Events {
            queue,
            dropped: Counter::default(),
        };
        for n in 0..5 {
            events.publish(event("R", "n"), object(&format!("o{n}")));
        }
        assert_eq!(events.dropped.get(), 3);
    }
}
