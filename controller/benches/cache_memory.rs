//! Bytes per object in the manager's caches: `cargo bench -p baton --bench cache_memory`.
//!
//! Builds 20,000 copies of a Workload as a worker lists it (a pending replica) and as the
//! manager lists its own (fixtures captured from the sandbox, managed fields included), each
//! parsed anew as a watch would, and prints the process's resident memory growth per object:
//! as listed, and as the manager's caches keep it. Resident memory is what the chart's limit
//! counts (allocator overhead included); the machine's load is printed with the figures.
//! One object is parsed and dropped before each measurement starts: the first parse grows
//! the heap once, by a constant that would otherwise be counted against every object ("parsed
//! and dropped" shows what is left of it). "A typed Workload, empty" is the floor of any
//! cache of typed Workloads: the struct and its name, nothing else.

use std::time::Instant;

use baton::manager::plan::replica::CachedReplica;
use baton::manager::shell::replica_cache::{ReplicaCache, WorkloadNames};
use baton::manager::shell::stores::stripped_manager_workload;
use baton_crds::workload::Workload;
use kube::runtime::watcher::Event;

mod common;

const COPIES: usize = 20_000;

fn resident_bytes() -> u64 {
    common::status_kb("VmRSS:") * 1024
}

/// Resident bytes per object that `make` builds, over `COPIES` objects kept alive.
fn per_object<T>(make: impl Fn() -> T) -> u64 {
    let mut kept: Vec<T> = Vec::with_capacity(COPIES);
    // The first object's parsing grows the heap once (a constant, not a cost per object).
    drop(make());
    let before = resident_bytes();
    for _ in 0..COPIES {
        kept.push(make());
    }
    let after = resident_bytes();
    drop(kept);
    after.saturating_sub(before) / COPIES as u64
}

/// Resident bytes per replica in the manager's caches of `workers` workers, `COPIES`
/// replicas in all applied as watch events, each workload with a replica on every worker
/// (the record, its key, the maps' share and the workload names the caches share).
fn in_replica_caches(json: &str, workers: usize) -> u64 {
    let names = WorkloadNames::default();
    let caches: Vec<ReplicaCache> = (0..workers)
        .map(|_| ReplicaCache::new(names.clone()))
        .collect();
    drop(parse(json));
    let before = resident_bytes();
    for n in 0..COPIES / workers {
        for cache in &caches {
            let mut replica = parse(json);
            replica.metadata.name = Some(format!("wl-{n:06}"));
            cache.apply(&Event::Apply(replica));
        }
    }
    let after = resident_bytes();
    assert!(caches.iter().all(|c| c.len() == COPIES / workers));
    after.saturating_sub(before) / COPIES as u64
}

fn parse(json: &str) -> Workload {
    serde_json::from_str(json).unwrap_or_else(|e| panic!("fixture: {e}"))
}

/// One measurement, in a process of its own: memory freed by an earlier measurement would
/// be reused by the next without growing the resident set.
fn measure(kind: &str) -> Option<u64> {
    let replica = include_str!("fixtures/replica-pending.json");
    let manager = include_str!("fixtures/manager-workload.json");
    Some(match kind {
        "replica-listed" => per_object(|| parse(replica)),
        "replica-cached" => per_object(|| CachedReplica::compact(&parse(replica))),
        "replica-parsed" => per_object(|| drop(parse(replica))),
        "replica-cache" => in_replica_caches(replica, 1),
        "replica-cache-10" => in_replica_caches(replica, 10),
        "manager-listed" => per_object(|| parse(manager)),
        "manager-cached" => per_object(|| stripped_manager_workload(parse(manager))),
        "manager-empty" => per_object(|| Workload::new("wl-01000", Default::default())),
        _ => return None,
    })
}

const KINDS: [(&str, &str); 8] = [
    ("replica-listed", "replica, as listed"),
    ("replica-parsed", "replica, parsed and dropped"),
    ("replica-cached", "replica, as a record"),
    ("replica-cache", "replica, in the cache (keyed)"),
    ("replica-cache-10", "replica, 10 workers' caches"),
    ("manager-listed", "manager Workload, as listed"),
    ("manager-cached", "manager Workload, as cached"),
    ("manager-empty", "a typed Workload, empty"),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(kind) = args
        .iter()
        .position(|a| a == "--measure")
        .and_then(|i| args.get(i + 1))
    {
        let bytes = measure(kind).ok_or_else(|| anyhow::anyhow!("unknown kind {kind}"))?;
        println!("{bytes}");
        return Ok(());
    }
    println!("{}", common::machine());
    let started = Instant::now();
    println!("{:<30} {:>14}", "object", "bytes resident");
    let me = std::env::current_exe()?;
    for (kind, name) in KINDS {
        let out = std::process::Command::new(&me)
            .args(["--measure", kind])
            .output()?;
        let bytes = String::from_utf8_lossy(&out.stdout).trim().to_string();
        println!("{name:<30} {bytes:>14}");
    }
    println!(
        "({COPIES} copies each, each in a process of its own; {:.1} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
