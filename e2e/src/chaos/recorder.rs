//! The thin recorder: subscribes to every testbed cluster's change feed in-process (so API
//! faults and outages never blind it), turns each Workload change in the soak's namespace
//! into a [`Snapshot`], and appends it to the shared log. It also keeps the latest version
//! of every Workload, which the stream reads to decide what to finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use baton_crds::MultiKueueCluster;
use baton_crds::conditions::{find_condition, is_condition_true};
use baton_crds::constants::{MULTIKUEUE_GATE, MULTIKUEUE_ORIGIN_LABEL, condition};
use baton_crds::gates::gate_state;
use baton_crds::workload::{GateState, Workload};
use baton_testbed::server::TestCluster;
use baton_testbed::server::{Change, ChangeKind};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::log::{Event, Fault, Millis, ObjectEvent, Snapshot};

const WORKLOADS_TABLE: &str = "kueue.x-k8s.io/workloads";
const CLUSTERS_TABLE: &str = "kueue.x-k8s.io/multikueueclusters";

/// The log and the live view, shared by the recorder, the stream and the fault driver.
pub struct Shared {
    start: Instant,
    log: Mutex<Vec<Event>>,
    /// (cluster, name) → latest live version and since when its replica holds quota.
    live: Mutex<HashMap<(usize, String), Live>>,
    /// Woken whenever a replica's gate opens.
    pub gate_opened: tokio::sync::Notify,
    /// Each MultiKueueCluster's last recorded `Active` status, by worker.
    connected: Mutex<HashMap<usize, bool>>,
}

#[derive(Clone, Debug)]
pub struct Live {
    pub snapshot: Snapshot,
    /// When this version's uid started holding quota (None: it does not).
    pub holding_since: Option<Millis>,
}

impl Shared {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            log: Mutex::new(Vec::new()),
            live: Mutex::new(HashMap::new()),
            gate_opened: tokio::sync::Notify::new(),
            connected: Mutex::new(HashMap::new()),
        })
    }

    pub fn now(&self) -> Millis {
        self.start.elapsed().as_millis() as Millis
    }

    pub fn push(&self, event: Event) {
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }

    pub fn fault(&self, fault: Fault) {
        self.push(Event::Fault {
            at: self.now(),
            fault,
        });
    }

    /// A copy of the log so far.
    pub fn events(&self) -> Vec<Event> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The latest live version of `name` on `cluster`.
    pub fn live(&self, cluster: usize, name: &str) -> Option<Live> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(cluster, name.to_string()))
            .cloned()
    }

    fn record(&self, cluster: usize, name: String, deleted: bool, snapshot: Snapshot) {
        let at = self.now();
        let mut gate_opened = false;
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            let key = (cluster, name.clone());
            let before = live.get(&key).cloned();
            if deleted {
                live.remove(&key);
            } else {
                let same = before.as_ref().filter(|b| b.snapshot.uid == snapshot.uid);
                gate_opened = cluster > 0
                    && snapshot.gate == Some(GateState::Open)
                    && same.is_none_or(|b| b.snapshot.gate != Some(GateState::Open));
                let holding_since = snapshot
                    .holds_quota
                    .then(|| same.and_then(|b| b.holding_since).unwrap_or(at));
                live.insert(
                    key,
                    Live {
                        snapshot: snapshot.clone(),
                        holding_since,
                    },
                );
            }
            // Appended under the live lock, so the log's order is the order of the feeds.
            self.push(Event::Object(ObjectEvent {
                at,
                cluster,
                name,
                deleted,
                snapshot,
            }));
        }
        if gate_opened {
            self.gate_opened.notify_waiters();
        }
    }
}

/// The compact view of one stored Workload.
pub fn snapshot_of(wl: &Workload, rv: u64) -> Snapshot {
    let status = wl.status.clone().unwrap_or_default();
    let finished = is_condition_true(&status.conditions, condition::FINISHED);
    let cpus: i64 = wl
        .spec
        .pod_sets
        .iter()
        .map(|ps| {
            // Whole CPUs per pod (a fraction counts as one); unreadable requests as none.
            let milli = ps
                .template
                .per_pod_requests()
                .map(|r| r.get("cpu"))
                .unwrap_or(0);
            let per_pod = i64::try_from((milli + 999) / 1000).unwrap_or(i64::MAX);
            per_pod * i64::from(ps.count)
        })
        .sum();
    Snapshot {
        uid: wl.metadata.uid.clone().unwrap_or_default(),
        rv,
        replica: wl
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(MULTIKUEUE_ORIGIN_LABEL)),
        holds_quota: status.admission.is_some()
            && is_condition_true(&status.conditions, condition::QUOTA_RESERVED)
            && !finished,
        admitted: is_condition_true(&status.conditions, condition::ADMITTED),
        finished,
        evicted: find_condition(&status.conditions, condition::EVICTED)
            .filter(|c| c.status == "True")
            .map(|c| c.message.clone()),
        gate: gate_state(wl, MULTIKUEUE_GATE),
        cluster_name: status.cluster_name.clone(),
        deleting: wl.metadata.deletion_timestamp.is_some(),
        cpus: u32::try_from(cpus.max(0)).unwrap_or(u32::MAX),
        priority: wl.spec.priority.unwrap_or(0),
    }
}

/// What a recorder watches on its cluster.
#[derive(Clone)]
pub struct Scope {
    pub namespace: String,
    /// `cluster_names[i - 1]`: worker `i`'s MultiKueueCluster (read on the manager).
    pub cluster_names: Vec<String>,
}

/// Records every Workload change in the scope's namespace on `cluster` (0 = the manager,
/// where the MultiKueueClusters' `Active` changes are recorded too) until the task is
/// aborted.
pub fn spawn(
    shared: Arc<Shared>,
    cluster: usize,
    testbed: &TestCluster,
    scope: Scope,
) -> JoinHandle<()> {
    let mut feed = testbed.subscribe();
    tokio::spawn(async move {
        loop {
            match feed.recv().await {
                Ok(change) => observe(&shared, cluster, &scope, &change),
                Err(RecvError::Lagged(missed)) => shared.push(Event::Gap {
                    at: shared.now(),
                    cluster,
                    missed,
                }),
                Err(RecvError::Closed) => return,
            }
        }
    })
}

fn observe(shared: &Shared, cluster: usize, scope: &Scope, change: &Change) {
    if cluster == 0 && &*change.table == CLUSTERS_TABLE {
        observe_connection(shared, scope, change);
        return;
    }
    if &*change.table != WORKLOADS_TABLE || change.obj.namespace != scope.namespace {
        return;
    }
    let Ok(wl) = serde_json::from_slice::<Workload>(&change.obj.bytes) else {
        return;
    };
    let snapshot = snapshot_of(&wl, change.rv);
    shared.record(
        cluster,
        change.obj.name.clone(),
        change.kind == ChangeKind::Deleted,
        snapshot,
    );
}

/// Records a MultiKueueCluster's `Active` status when it changes.
fn observe_connection(shared: &Shared, scope: &Scope, change: &Change) {
    let Some(worker) = scope
        .cluster_names
        .iter()
        .position(|n| *n == change.obj.name)
        .map(|i| i + 1)
    else {
        return;
    };
    let Ok(mkc) = serde_json::from_slice::<MultiKueueCluster>(&change.obj.bytes) else {
        return;
    };
    let conditions = mkc.status.map(|s| s.conditions).unwrap_or_default();
    let active =
        change.kind != ChangeKind::Deleted && is_condition_true(&conditions, condition::ACTIVE);
    let changed = {
        let mut connected = shared.connected.lock().unwrap_or_else(|e| e.into_inner());
        connected.insert(worker, active) != Some(active)
    };
    if changed {
        shared.push(Event::Connection {
            at: shared.now(),
            worker,
            active,
        });
    }
}
