//! Where there is room on a worker, as the manager writes it into the MultiKueueCluster's
//! `status.baton`.
//!
//! Rule: each ClusterQueue of the worker is reduced to a few numbers as its watch event
//! arrives ([`QueueRoom::of`]: nominal quota and reserved quota per flavor and resource, and
//! its pending workloads; reserved is `status.flavorsReservation`, or `flavorsUsage` when a
//! scheduler reports only that). The summary sums them per flavor and resource and per
//! resource ([`summarise`]). The manager writes it ([`decide`]) only when the numbers or the
//! connection changed, or when a connected worker's `lastContact` is older than
//! [`CONTACT_REFRESH`]; a disconnected worker keeps its last numbers (marked not connected),
//! its `lastContact` the moment its connection was lost. Nothing is written while a connected
//! worker's ClusterQueues are not listed yet.

use std::collections::BTreeMap;

use baton_crds::ClusterQueue;
use baton_crds::multikueue::{FlavorRoom, ResourceRoom, RoomStatus};
use baton_crds::quantity::{format_milli, parse_milli};
use baton_crds::time::{to_chrono, to_kube, truncate_to_second};
use chrono::{DateTime, Duration, Utc};

/// How often a connected worker's `lastContact` is refreshed when nothing else changes.
pub const CONTACT_REFRESH: Duration = Duration::minutes(5);

/// Amounts in milli-units, by (flavor, resource).
type Amounts = BTreeMap<(String, String), i128>;

/// What the manager keeps of one ClusterQueue of a worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueRoom {
    nominal: Amounts,
    reserved: Amounts,
    pending: i32,
}

impl QueueRoom {
    /// The numbers of `cq`; a quantity that does not parse counts as zero.
    pub fn of(cq: &ClusterQueue) -> Self {
        let mut nominal = Amounts::new();
        for flavor in cq.spec.resource_groups.iter().flat_map(|g| &g.flavors) {
            for r in &flavor.resources {
                let amount = parse_milli(&r.nominal_quota).unwrap_or(0);
                *nominal
                    .entry((flavor.name.clone(), r.name.clone()))
                    .or_default() += amount;
            }
        }
        let status = cq.status.clone().unwrap_or_default();
        let usage = if status.flavors_reservation.is_empty() {
            &status.flavors_usage
        } else {
            &status.flavors_reservation
        };
        let mut reserved = Amounts::new();
        for flavor in usage {
            for r in &flavor.resources {
                let amount = r.total.as_ref().and_then(|q| parse_milli(q).ok());
                *reserved
                    .entry((flavor.name.clone(), r.name.clone()))
                    .or_default() += amount.unwrap_or(0);
            }
        }
        Self {
            nominal,
            reserved,
            pending: status.pending_workloads.unwrap_or(0).max(0),
        }
    }

    /// Roughly how many bytes this keeps (the watch cost per ClusterQueue).
    pub fn approx_bytes(&self) -> usize {
        let entry = |((f, r), _): (&(String, String), &i128)| {
            f.len() + r.len() + 2 * std::mem::size_of::<String>() + 16 + 32
        };
        std::mem::size_of::<Self>()
            + self.nominal.iter().map(entry).sum::<usize>()
            + self.reserved.iter().map(entry).sum::<usize>()
    }
}

/// The summary of a worker's ClusterQueues (without `lastContact`).
pub fn summarise<'a>(queues: impl IntoIterator<Item = &'a QueueRoom>) -> RoomStatus {
    let (mut nominal, mut reserved) = (Amounts::new(), Amounts::new());
    let (mut count, mut pending) = (0i32, 0i32);
    for q in queues {
        count = count.saturating_add(1);
        pending = pending.saturating_add(q.pending);
        for (key, amount) in &q.nominal {
            *nominal.entry(key.clone()).or_default() += amount;
        }
        for (key, amount) in &q.reserved {
            *reserved.entry(key.clone()).or_default() += amount;
        }
    }
    let keys: std::collections::BTreeSet<&(String, String)> =
        nominal.keys().chain(reserved.keys()).collect();
    let room = |name: &str, n: i128, r: i128| ResourceRoom {
        name: name.to_string(),
        nominal: format_milli(n),
        reserved: format_milli(r),
    };
    let mut flavors: BTreeMap<&str, Vec<ResourceRoom>> = BTreeMap::new();
    let mut totals: BTreeMap<&str, (i128, i128)> = BTreeMap::new();
    for key @ (flavor, resource) in keys {
        let n = nominal.get(key).copied().unwrap_or(0);
        let r = reserved.get(key).copied().unwrap_or(0);
        flavors
            .entry(flavor)
            .or_default()
            .push(room(resource, n, r));
        let total = totals.entry(resource).or_default();
        *total = (total.0 + n, total.1 + r);
    }
    RoomStatus {
        connected: false,
        last_contact: None,
        cluster_queues: count,
        pending_workloads: pending,
        resources: totals
            .into_iter()
            .map(|(name, (n, r))| room(name, n, r))
            .collect(),
        flavors: flavors
            .into_iter()
            .map(|(name, resources)| FlavorRoom {
                name: name.to_string(),
                resources,
            })
            .collect(),
    }
}

/// What the manager knows of a worker now.
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    /// Connected, its ClusterQueues listed: their summary.
    Connected(RoomStatus),
    /// Connected, but the ClusterQueue list is not in yet (or not allowed): nothing to say
    /// about room, only about contact.
    Listing,
    /// Not connected since the given time.
    Lost(DateTime<Utc>),
}

/// The status to write for a worker last written as `written` (`None`: no summary yet), or
/// `None` when the written one still holds.
pub fn decide(written: Option<&RoomStatus>, seen: &Seen, now: DateTime<Utc>) -> Option<RoomStatus> {
    let contact = written.and_then(|w| w.last_contact.as_ref()).map(to_chrono);
    let was_connected = written.is_some_and(|w| w.connected);
    match seen {
        Seen::Connected(room) => {
            let fresh = contact.is_some_and(|c| now - c < CONTACT_REFRESH);
            let same = written.is_some_and(|w| same_numbers(w, room));
            (!(was_connected && same && fresh)).then(|| RoomStatus {
                connected: true,
                last_contact: Some(to_kube(truncate_to_second(now))),
                ..room.clone()
            })
        }
        Seen::Listing => None,
        Seen::Lost(since) => {
            let first = written.is_none();
            (first || was_connected).then(|| RoomStatus {
                connected: false,
                last_contact: Some(to_kube(truncate_to_second(*since))),
                ..written.cloned().unwrap_or_default()
            })
        }
    }
}

/// The same numbers (everything but the connection and `lastContact`).
fn same_numbers(a: &RoomStatus, b: &RoomStatus) -> bool {
    let numbers = |s: &RoomStatus| RoomStatus {
        connected: false,
        last_contact: None,
        ..s.clone()
    };
    numbers(a) == numbers(b)
}

#[cfg(test)]
mod tests;
