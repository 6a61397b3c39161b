//! Writes each worker's room summary (rule in [`crate::manager::plan::room`], numbers from
//! [`crate::manager::shell::room_watch`]) into its MultiKueueCluster's `status.baton`. The
//! writer looks every [`DEBOUNCE`] and writes a worker's summary only when [`decide`] says
//! so: at most one write per worker per [`DEBOUNCE`], none while nothing changes but the
//! five-minutely `lastContact`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use baton_crds::MultiKueueCluster;
use baton_crds::multikueue::RoomStatus;
use chrono::Utc;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};

use crate::manager::plan::room::{Seen, decide};
use crate::manager::shell::workers::{WorkerPool, WorkerState};
use crate::metrics::Metrics;

/// How often the writer looks at the summaries (and so the longest a change waits).
pub const DEBOUNCE: Duration = Duration::from_secs(2);

/// What the manager knows of `cluster` now.
fn seen(pool: &WorkerPool, cluster: &str) -> Seen {
    match pool.state(cluster) {
        WorkerState::Active(c) => c.room.summary().map_or(Seen::Listing, Seen::Connected),
        WorkerState::Down { since, .. } => Seen::Lost(since),
    }
}

/// Writes each worker's summary into its MultiKueueCluster when [`decide`] says so; runs
/// until the manager stops.
pub async fn write_rooms(manager: Client, pool: WorkerPool, metrics: Arc<Metrics>) {
    let api: Api<MultiKueueCluster> = Api::all(manager);
    // The summary each MultiKueueCluster holds, as last read or written.
    let mut written: HashMap<String, Option<RoomStatus>> = HashMap::new();
    let mut tick = tokio::time::interval(DEBOUNCE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        let clusters = pool.clusters();
        written.retain(|c, _| clusters.contains(c));
        for cluster in clusters {
            let seen = seen(&pool, &cluster);
            if !written.contains_key(&cluster) {
                match api.get_status(&cluster).await {
                    Ok(mkc) => {
                        written.insert(cluster.clone(), mkc.status.and_then(|s| s.baton));
                    }
                    Err(e) => {
                        tracing::debug!(%cluster, error = %e, "cannot read MultiKueueCluster status");
                        continue;
                    }
                }
            }
            let last = written.get(&cluster).and_then(Option::as_ref);
            let Some(next) = decide(last, &seen, Utc::now()) else {
                continue;
            };
            let patch = serde_json::json!({"status": {"baton": next}});
            match api
                .patch_status(&cluster, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    metrics
                        .room_writes
                        .get_or_create(&Metrics::cluster(&cluster))
                        .inc();
                    written.insert(cluster, Some(next));
                }
                Err(e) => {
                    tracing::warn!(%cluster, error = %e, "cannot write the room summary");
                    written.remove(&cluster);
                }
            }
        }
    }
}
