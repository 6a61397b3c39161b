//! Bytes per object in the manager's caches: `cargo bench -p baton --bench cache_memory`.
//!
//! Builds 20,000 copies of a Workload as a worker lists it (a pending replica) and as the
//! manager lists its own (fixtures captured from the sandbox, managed fields included), each
//! parsed anew as a watch would, and prints the process's resident memory growth per object:
//! as listed, and as the manager's caches keep it. Resident memory is what the chart's limit
//! counts (allocator overhead included); the machine's load is printed with the figures.

use std::time::Instant;

use baton::manager::plan::replica::CachedReplica;
use baton::manager::shell::stores::stripped_manager_workload;
use baton_crds::workload::Workload;

const COPIES: usize = 20_000;

fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resident bytes per object that `make` builds, over `COPIES` objects kept alive.
fn per_object<T>(make: impl Fn() -> T) -> u64 {
    let mut kept: Vec<T> = Vec::with_capacity(COPIES);
    let before = resident_bytes();
    for _ in 0..COPIES {
        kept.push(make());
    }
    let after = resident_bytes();
    drop(kept);
    after.saturating_sub(before) / COPIES as u64
}

fn parse(json: &str) -> Workload {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("fixture: {e}"))
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cores} cores, load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let replica = include_str!("fixtures/replica-pending.json");
    let manager = include_str!("fixtures/manager-workload.json");
    let started = Instant::now();
    // Each kind is measured twice; the second run is printed (the first warms the allocator).
    let rows: [(&str, &dyn Fn() -> u64); 4] = [
        ("replica, as listed", &|| per_object(|| parse(replica))),
        ("replica, as cached", &|| {
            per_object(|| CachedReplica::compact(parse(replica)))
        }),
        ("manager Workload, as listed", &|| {
            per_object(|| parse(manager))
        }),
        ("manager Workload, as cached", &|| {
            per_object(|| stripped_manager_workload(parse(manager)))
        }),
    ];
    println!("{:<30} {:>14}", "object", "bytes resident");
    for (name, measure) in rows {
        measure();
        println!("{name:<30} {:>14}", measure());
    }
    println!(
        "({COPIES} copies each, {:.1} s)",
        started.elapsed().as_secs_f64()
    );
}
