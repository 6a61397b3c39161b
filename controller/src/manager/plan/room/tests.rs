use baton_crds::ClusterQueue;
use baton_crds::time::to_chrono;
use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

use super::*;

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_800_000_000 + secs, 0).single().unwrap()
}

fn cq(name: &str, flavors: serde_json::Value, status: serde_json::Value) -> ClusterQueue {
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {"resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": flavors}]},
        "status": status,
    }))
    .unwrap()
}

fn two_queues() -> Vec<QueueRoom> {
    let a = cq(
        "a",
        json!([{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "16Gi"}]},
               {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "500m"}, {"name": "memory", "nominalQuota": "1Gi"}]}]),
        json!({"pendingWorkloads": 3, "flavorsReservation": [
            {"name": "on-demand", "resources": [{"name": "cpu", "total": "6"}, {"name": "memory", "total": "4Gi"}]}]}),
    );
    let b = cq(
        "b",
        json!([{"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": 4}, {"name": "memory", "nominalQuota": "8Gi"}]}]),
        // A scheduler that reports only usage.
        json!({"pendingWorkloads": 1, "flavorsUsage": [
            {"name": "on-demand", "resources": [{"name": "cpu", "total": "1500m"}]}]}),
    );
    vec![QueueRoom::of(&a), QueueRoom::of(&b)]
}

fn resource<'a>(rooms: &'a [ResourceRoom], name: &str) -> (&'a str, &'a str) {
    let r = rooms.iter().find(|r| r.name == name).unwrap();
    (r.nominal.0.as_str(), r.reserved.0.as_str())
}

#[test]
fn the_summary_sums_per_flavor_and_resource_and_per_resource() {
    let room = summarise(&two_queues());
    assert_eq!((room.cluster_queues, room.pending_workloads), (2, 4));
    assert_eq!(resource(&room.resources, "cpu"), ("12500m", "7500m"));
    assert_eq!(resource(&room.resources, "memory"), ("25Gi", "4Gi"));
    let flavor = |name: &str| room.flavors.iter().find(|f| f.name == name).unwrap();
    assert_eq!(
        resource(&flavor("on-demand").resources, "cpu"),
        ("12", "7500m")
    );
    assert_eq!(resource(&flavor("spot").resources, "cpu"), ("500m", "0"));
    assert!(!room.connected && room.last_contact.is_none());
}

#[test]
fn a_queue_without_status_or_with_bad_numbers_counts_zero() {
    let q = cq(
        "q",
        json!([{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "2"}]}]),
        json!({"flavorsReservation": [{"name": "f", "resources": [{"name": "cpu"}]}], "pendingWorkloads": -1}),
    );
    let room = summarise(&[QueueRoom::of(&q)]);
    assert_eq!(resource(&room.resources, "cpu"), ("2", "0"));
    assert_eq!(room.pending_workloads, 0);
    assert!(QueueRoom::of(&q).approx_bytes() > 0);
}

#[test]
fn no_queues_is_an_empty_summary() {
    let room = summarise(std::iter::empty());
    assert_eq!((room.cluster_queues, room.resources.len()), (0, 0));
}

#[test]
fn a_first_connected_sight_is_written_with_the_contact() {
    let room = summarise(&two_queues());
    let written = decide(None, &Seen::Connected(room.clone()), at(0)).unwrap();
    assert!(written.connected);
    assert_eq!(written.last_contact.as_ref().map(to_chrono), Some(at(0)));
    assert_eq!(written.resources, room.resources);
}

#[test]
fn the_same_numbers_are_not_written_again_until_the_contact_is_stale() {
    let room = summarise(&two_queues());
    let written = decide(None, &Seen::Connected(room.clone()), at(0)).unwrap();
    assert_eq!(
        decide(Some(&written), &Seen::Connected(room.clone()), at(60)),
        None
    );
    let refreshed = decide(Some(&written), &Seen::Connected(room), at(300)).unwrap();
    assert_eq!(
        refreshed.last_contact.as_ref().map(to_chrono),
        Some(at(300))
    );
}

#[test]
fn changed_numbers_are_written() {
    let queues = two_queues();
    let written = decide(None, &Seen::Connected(summarise(&queues)), at(0)).unwrap();
    let fewer = summarise(&queues[..1]);
    let next = decide(Some(&written), &Seen::Connected(fewer), at(2)).unwrap();
    assert_eq!(next.cluster_queues, 1);
}

#[test]
fn a_lost_worker_keeps_its_numbers_and_the_moment_of_the_loss_once() {
    let room = summarise(&two_queues());
    let written = decide(None, &Seen::Connected(room), at(0)).unwrap();
    let lost = decide(Some(&written), &Seen::Lost(at(30)), at(40)).unwrap();
    assert!(!lost.connected);
    assert_eq!(lost.last_contact.as_ref().map(to_chrono), Some(at(30)));
    assert_eq!(lost.resources, written.resources);
    assert_eq!(decide(Some(&lost), &Seen::Lost(at(30)), at(1000)), None);
}

#[test]
fn a_worker_never_seen_is_written_as_lost_without_numbers() {
    let lost = decide(None, &Seen::Lost(at(5)), at(6)).unwrap();
    assert!(!lost.connected && lost.resources.is_empty());
}

#[test]
fn a_reconnected_worker_is_written_at_once() {
    let room = summarise(&two_queues());
    let written = decide(None, &Seen::Connected(room.clone()), at(0)).unwrap();
    let lost = decide(Some(&written), &Seen::Lost(at(10)), at(11)).unwrap();
    let back = decide(Some(&lost), &Seen::Connected(room), at(20)).unwrap();
    assert!(back.connected);
    assert_eq!(back.last_contact.as_ref().map(to_chrono), Some(at(20)));
}

#[test]
fn nothing_is_written_while_the_queues_are_being_listed() {
    assert_eq!(decide(None, &Seen::Listing, at(0)), None);
}

#[test]
fn what_a_queue_costs_in_memory() {
    // One flavor of two resources, the common shape; printed for the operator guide.
    let q = cq(
        "team-a-cluster-queue",
        json!([{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"}]}]),
        json!({"pendingWorkloads": 12, "flavorsReservation": [
            {"name": "default-flavor", "resources": [{"name": "cpu", "total": "60"}, {"name": "memory", "total": "200Gi"}]}]}),
    );
    let kept = QueueRoom::of(&q).approx_bytes() + "team-a-cluster-queue".len();
    let decoded = serde_json::to_vec(&q).unwrap().len();
    println!("one ClusterQueue: {kept} bytes kept, {decoded} bytes of JSON decoded per event");
    assert!(kept < 1024, "{kept}");
}
