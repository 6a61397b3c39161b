//! `baton describe workload`: a manager Workload's story across the workers — dispatched,
//! signals per cluster, gate openings, baton passes and why, admission, replicas removed —
//! from the manager's own objects only (the Workload, with `status.baton`, and its Events):
//! no worker credentials. Pure: the object and its events in, the story out; the shell
//! (`describe_cmd`) fetches and prints.
//!
//! Events are sorted into kinds by their reason, for the reader only: nothing is decided
//! on them. An event whose reason is not known here is shown as it is.

use baton_crds::conditions::find_condition;
use baton_crds::constants::condition;
use baton_crds::time::{to_chrono, truncate_to_second};
use baton_crds::workload::{AdmissionCheckState, CheckState, GateState, Workload};
use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::ResourceExt;
use serde::Serialize;

/// What `baton describe workload` prints (and, as JSON, `-o json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Story {
    pub namespace: String,
    pub name: String,
    /// One line: where the workload stands now.
    pub now: String,
    pub replicas: Vec<Replica>,
    pub timeline: Vec<Entry>,
}

/// One replica, from `status.baton`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Replica {
    pub cluster: String,
    pub gate: Option<GateState>,
    pub signalling_since: Option<DateTime<Utc>>,
    pub position: Option<i32>,
    /// `holds the baton`, `waiting`, `admitted`, `removed` or `dispatched`.
    pub state: &'static str,
}

/// One step of the story.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub time: Option<DateTime<Utc>>,
    /// The worker cluster it is about, if any.
    pub cluster: Option<String>,
    pub kind: Kind,
    pub message: String,
    /// How many times an event was recorded (events of a series), when more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
}

/// What kind of step; steps of one second are told in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    Created,
    QuotaReserved,
    Dispatched,
    Signalled,
    BatonPassed,
    GateOpened,
    Admitted,
    ReplicaRemoved,
    Redispatched,
    Evicted,
    Finished,
    /// Any other event, by its reason.
    Event,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Created => "created",
            Kind::QuotaReserved => "quota reserved",
            Kind::Dispatched => "dispatched",
            Kind::Signalled => "signalled",
            Kind::GateOpened => "gate opened",
            Kind::BatonPassed => "baton passed",
            Kind::Admitted => "admitted",
            Kind::ReplicaRemoved => "replica removed",
            Kind::Redispatched => "re-dispatched",
            Kind::Evicted => "evicted",
            Kind::Finished => "finished",
            Kind::Event => "event",
        }
    }
}

/// The kind an event of the manager stands for (by its reason and, for upstream's shared
/// `MultiKueue` reason, its action).
fn event_kind(event: &Event) -> Kind {
    let reason = event.reason.as_deref().unwrap_or_default();
    let action = event.action.as_deref().unwrap_or_default();
    match (reason, action) {
        ("PreemptionGateOpened", _) => Kind::GateOpened,
        ("PreemptionGateTimedOut" | "PreemptionGateReleased", _) => Kind::BatonPassed,
        ("ReplicaRemoved", _) => Kind::ReplicaRemoved,
        ("MultiKueue", "Admitted") => Kind::Admitted,
        ("MultiKueue", "EvictedOnWorker" | "OutOfSync" | "WorkerLost" | "ReplicaLost")
        | ("Redispatched", _) => Kind::Redispatched,
        ("QuotaReserved", _) => Kind::QuotaReserved,
        ("Preempted" | "Evicted", _) => Kind::Evicted,
        _ => Kind::Event,
    }
}

/// The story of manager Workload `wl`, with `events` (those whose object is `wl`).
pub fn story(wl: &Workload, events: &[Event]) -> Story {
    let status = wl.status.clone().unwrap_or_default();
    let mut timeline = Vec::new();
    timeline.push(Entry {
        time: wl.metadata.creation_timestamp.as_ref().map(to_chrono),
        cluster: None,
        kind: Kind::Created,
        message: format!(
            "submitted to LocalQueue {}",
            wl.spec.queue_name.as_deref().unwrap_or("(none)")
        ),
        count: None,
    });
    let event_kinds: Vec<Kind> = events.iter().map(event_kind).collect();
    let has_event = |kind: Kind| event_kinds.contains(&kind);
    // Conditions that events may have aged out of (events live an hour by default).
    if !has_event(Kind::QuotaReserved)
        && let Some(c) = find_condition(&status.conditions, condition::QUOTA_RESERVED)
            .filter(|c| c.status == "True")
    {
        timeline.push(condition_entry(c, Kind::QuotaReserved));
    }
    let baton = status.baton.clone().unwrap_or_default();
    let notes: Vec<&AdmissionCheckState> = status
        .admission_checks
        .iter()
        .filter(|c| c.state == CheckState::Pending && !c.message.is_empty())
        .collect();
    for check in &notes {
        timeline.push(Entry {
            time: Some(to_chrono(&check.last_transition_time)),
            cluster: None,
            kind: Kind::Dispatched,
            message: format!("{}: {}", check.name, check.message),
            count: None,
        });
    }
    if notes.is_empty() && !baton.replicas.is_empty() {
        // The note is gone once a worker admitted: replicas are made right after the
        // reservation, to the clusters the view lists.
        let clusters: Vec<&str> = baton.replicas.iter().map(|r| r.cluster.as_str()).collect();
        timeline.push(Entry {
            time: find_condition(&status.conditions, condition::QUOTA_RESERVED)
                .filter(|c| c.status == "True")
                .map(|c| to_chrono(&c.last_transition_time)),
            cluster: None,
            kind: Kind::Dispatched,
            message: format!("replicas on {}", clusters.join(", ")),
            count: None,
        });
    }
    for r in &baton.replicas {
        if let Some(since) = &r.signalling_since {
            timeline.push(Entry {
                time: Some(to_chrono(since)),
                cluster: Some(r.cluster.clone()),
                kind: Kind::Signalled,
                message: "could reserve quota by preempting; waits for the baton".into(),
                count: None,
            });
        }
    }
    if !has_event(Kind::GateOpened)
        && let (Some(holder), Some(since)) = (&baton.holder, &baton.holder_since)
    {
        timeline.push(Entry {
            time: Some(to_chrono(since)),
            cluster: Some(holder.clone()),
            kind: Kind::GateOpened,
            message: "holds the baton".into(),
            count: None,
        });
    }
    for (event, kind) in events.iter().zip(&event_kinds) {
        timeline.push(event_entry(event, *kind));
    }
    let admitted_at = find_condition(&status.conditions, condition::ADMITTED)
        .filter(|c| c.status == "True")
        .map(|c| to_chrono(&c.last_transition_time));
    if let Some(winner) = &status.cluster_name
        && !has_event(Kind::Admitted)
    {
        timeline.push(Entry {
            time: admitted_at,
            cluster: Some(winner.clone()),
            kind: Kind::Admitted,
            message: format!("admitted on {winner}"),
            count: None,
        });
    }
    for r in baton.replicas.iter().filter(|r| r.removed) {
        timeline.push(Entry {
            time: admitted_at,
            cluster: Some(r.cluster.clone()),
            kind: Kind::ReplicaRemoved,
            message: format!(
                "removed: admitted on {} first",
                status.cluster_name.as_deref().unwrap_or("another cluster")
            ),
            count: None,
        });
    }
    if let Some(c) =
        find_condition(&status.conditions, condition::FINISHED).filter(|c| c.status == "True")
    {
        timeline.push(condition_entry(c, Kind::Finished));
    }
    // Stored times have whole seconds: within one, the order things happen in.
    timeline.sort_by_key(|e| (e.time, e.kind));
    let replicas = baton
        .replicas
        .iter()
        .map(|r| Replica {
            cluster: r.cluster.clone(),
            gate: r.gate,
            signalling_since: r.signalling_since.as_ref().map(to_chrono),
            position: r.position,
            state: if r.admitted {
                "admitted"
            } else if r.removed {
                "removed"
            } else if baton.holder.as_deref() == Some(r.cluster.as_str())
                && r.gate == Some(GateState::Open)
            {
                "holds the baton"
            } else if r.position.is_some() {
                "waiting"
            } else {
                "dispatched"
            },
        })
        .collect();
    Story {
        namespace: wl.namespace().unwrap_or_default(),
        name: wl.name_any(),
        now: summary(wl, &baton),
        replicas,
        timeline,
    }
}

/// Where the workload stands, in one line.
fn summary(wl: &Workload, baton: &baton_crds::workload::BatonStatus) -> String {
    let status = wl.status.clone().unwrap_or_default();
    let is_true =
        |t: &str| find_condition(&status.conditions, t).is_some_and(|c| c.status == "True");
    if is_true(condition::FINISHED) {
        return format!(
            "finished{}",
            status
                .cluster_name
                .as_ref()
                .map(|c| format!(" on {c}"))
                .unwrap_or_default()
        );
    }
    if let Some(winner) = &status.cluster_name {
        return format!("admitted on {winner}");
    }
    if !is_true(condition::QUOTA_RESERVED) {
        return "pending on the manager: no quota reserved, no replica".into();
    }
    match (&baton.holder, &baton.passes_after) {
        (Some(holder), Some(after)) => format!(
            "{holder} holds the baton; {} waiting; it may pass after {}",
            baton.waiting,
            stamp(Some(to_chrono(after)))
        ),
        _ if baton.waiting > 0 => format!("{} waiting for the baton", baton.waiting),
        _ if status.nominated_cluster_names.is_empty() => "dispatched".into(),
        _ => format!(
            "dispatched to {}",
            status.nominated_cluster_names.join(", ")
        ),
    }
}

fn condition_entry(
    c: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
    kind: Kind,
) -> Entry {
    Entry {
        time: Some(to_chrono(&c.last_transition_time)),
        cluster: None,
        kind,
        message: c.message.clone(),
        count: None,
    }
}

fn event_entry(event: &Event, kind: Kind) -> Entry {
    let time = event
        .event_time
        .as_ref()
        .map(micro)
        .or_else(|| event.first_timestamp.as_ref().map(to_chrono))
        .or_else(|| event.last_timestamp.as_ref().map(to_chrono))
        // Whole seconds, as every other time of the story: the order within one second is
        // the kinds' (an event recorded at .7 s is not after a step stored as that second).
        .map(truncate_to_second);
    let count = event
        .series
        .as_ref()
        .and_then(|s| s.count)
        .or(event.count)
        .filter(|n| *n > 1);
    let reason = event.reason.clone().unwrap_or_default();
    let message = event.message.clone().unwrap_or_default();
    Entry {
        time,
        cluster: event.related.as_ref().and_then(|r| r.name.clone()),
        kind,
        message: if kind == Kind::Event {
            format!("{reason}: {message}")
        } else {
            message
        },
        count,
    }
}

fn micro(t: &MicroTime) -> DateTime<Utc> {
    let ns = t.0.as_nanosecond();
    DateTime::from_timestamp_nanos(i64::try_from(ns).unwrap_or(i64::MAX))
}

fn stamp(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(
        || "-".to_string(),
        |t| t.to_rfc3339_opts(SecondsFormat::Secs, true),
    )
}

/// The story as plain text, for people.
pub fn render_text(story: &Story) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "Workload:  {}/{}", story.namespace, story.name);
    let _ = writeln!(out, "Now:       {}", story.now);
    if !story.replicas.is_empty() {
        let _ = writeln!(out, "\nReplicas:");
        let rows: Vec<[String; 5]> = story
            .replicas
            .iter()
            .map(|r| {
                [
                    r.cluster.clone(),
                    r.gate.map_or("-".into(), |g| g.to_string()),
                    stamp(r.signalling_since),
                    r.position.map_or("-".into(), |p| p.to_string()),
                    r.state.to_string(),
                ]
            })
            .collect();
        table(
            &mut out,
            ["CLUSTER", "GATE", "SIGNALLING SINCE", "POSITION", "STATE"],
            &rows,
        );
    }
    let _ = writeln!(out, "\nTimeline:");
    let rows: Vec<[String; 4]> = story
        .timeline
        .iter()
        .map(|e| {
            let mut message = e.message.clone();
            if let Some(n) = e.count {
                let _ = write!(message, " (x{n})");
            }
            [
                stamp(e.time),
                e.cluster.clone().unwrap_or_else(|| "-".into()),
                e.kind.label().to_string(),
                message,
            ]
        })
        .collect();
    table(&mut out, ["TIME", "CLUSTER", "WHAT", "DETAIL"], &rows);
    out
}

/// Left-aligned columns, two spaces apart, indented by two.
fn table<const N: usize>(out: &mut String, header: [&str; N], rows: &[[String; N]]) {
    use std::fmt::Write as _;
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |out: &mut String, cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                let _ = write!(text, "  {cell}");
            } else {
                let _ = write!(text, "  {cell:<width$}", width = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(out, header.to_vec());
    for row in rows {
        line(out, row.iter().map(String::as_str).collect());
    }
}

#[cfg(test)]
mod tests;
