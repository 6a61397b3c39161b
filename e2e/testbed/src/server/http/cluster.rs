//! The shared state of one testbed cluster.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::server::api::user::UserInfo;
use crate::server::http::cost::Cost;
use crate::server::http::faults::Faults;
use crate::server::http::rbac::PolicyCache;
use crate::server::http::rbac::{self, Attributes, Decision};
use crate::server::http::request_counts::{OpenWatches, RequestCounts};
use crate::server::storage::store::Store;

/// Tunables of one cluster.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Name used in the kubeconfig (cluster, context and user names).
    pub name: String,
    /// Port to listen on; 0 picks a free one.
    pub port: u16,
    /// How many changes watches can replay before a resourceVersion is "too old" (410).
    pub history_limit: usize,
    /// How often watches that asked for bookmarks get one.
    pub bookmark_interval: Duration,
    /// Watch duration when the client gives no `timeoutSeconds`.
    pub default_watch_timeout: Duration,
    /// The kubelet model removes a deleted pod after its grace period, at most this long
    /// (zero: at once). Changeable later: `TestCluster::set_termination_grace_cap`.
    pub termination_grace_cap: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            name: "testbed".into(),
            port: 0,
            history_limit: 50_000,
            bookmark_interval: Duration::from_secs(1),
            default_watch_timeout: Duration::from_secs(1800),
            termination_grace_cap: crate::server::controllers::jobs::DEFAULT_TERMINATION_GRACE_CAP,
        }
    }
}

/// Everything request handlers share.
pub struct ClusterState {
    pub options: ClusterOptions,
    store: Mutex<Store>,
    pub faults: Faults,
    /// The API server cost model (off unless a benchmark turns it on).
    pub cost: Cost,
    /// Requests served, by client, verb and resource.
    pub requests: RequestCounts,
    /// Watch streams open now, by client and resource.
    pub watches: OpenWatches,
    /// Bumped to end every open watch (as an API server restart does).
    pub watch_epoch: tokio::sync::watch::Sender<u64>,
    /// The compiled RBAC policy (only service-account and impersonated requests use it).
    pub rbac: PolicyCache,
    /// Settings of the job controller and kubelet model.
    pub jobs: crate::server::controllers::jobs::JobsSettings,
}

impl ClusterState {
    pub fn new(options: ClusterOptions) -> Self {
        let mut store = Store::new(options.history_limit);
        store.hooks = crate::server::controllers::HOOKS;
        let (watch_epoch, _) = tokio::sync::watch::channel(0);
        let jobs =
            crate::server::controllers::jobs::JobsSettings::new(options.termination_grace_cap);
        Self {
            store: Mutex::new(store),
            options,
            faults: Faults::default(),
            cost: Cost::default(),
            requests: RequestCounts::default(),
            watches: OpenWatches::default(),
            watch_epoch,
            rbac: PolicyCache::default(),
            jobs,
        }
    }

    /// The store, locked. Never held across an await.
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Decides a request of `user`: the superuser group, then the default policy, then RBAC.
    pub fn authorize(&self, user: &UserInfo, a: &Attributes) -> Decision {
        if user.is_superuser() {
            return Decision::allow("");
        }
        if let Some(d) = rbac::defaults::authorize(user, a) {
            return d;
        }
        let policy = self.rbac.get(&self.store());
        policy.authorize(user, a)
    }

    pub fn end_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }
}

impl crate::server::controllers::jobs::controller::Host for ClusterState {
    fn store(&self) -> MutexGuard<'_, Store> {
        ClusterState::store(self)
    }

    fn jobs(&self) -> &crate::server::controllers::jobs::JobsSettings {
        &self.jobs
    }
}
