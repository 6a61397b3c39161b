//! The status the manager keeps besides its Workloads', so that `kubectl get ac,cq,lq` on the
//! manager cluster tells the truth: each MultiKueue AdmissionCheck's `Active` condition (from
//! its MultiKueueConfig and the clusters' own `Active`, with upstream Kueue's reasons), and
//! which ClusterQueues are the manager's (they name a MultiKueue check) and whether they can
//! admit. Pure: objects in, changed statuses out.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_crds::admission_check::AdmissionCheckStatus;
use baton_crds::conditions::{ConditionStatus, NewCondition, is_condition_true, set_condition};
use baton_crds::constants::{MULTIKUEUE_CONTROLLER_NAME, condition};
use baton_crds::{AdmissionCheck, ClusterQueue, MultiKueueCluster, MultiKueueConfig};
use chrono::{DateTime, Utc};
use kube::ResourceExt;

use crate::queue_status::Inactive;

/// What the AdmissionChecks' and ClusterQueues' activity is computed from.
pub struct QueueObjects<'a> {
    pub checks: &'a [Arc<AdmissionCheck>],
    pub configs: &'a [Arc<MultiKueueConfig>],
    pub clusters: &'a [Arc<MultiKueueCluster>],
    pub cluster_queues: &'a [Arc<ClusterQueue>],
}

/// One check's `Active` condition, before it is stamped with a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckActivity {
    pub active: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The `Active` condition of every MultiKueue AdmissionCheck, keyed by name.
pub fn check_activity(objects: &QueueObjects<'_>) -> BTreeMap<String, CheckActivity> {
    objects
        .checks
        .iter()
        .filter(|c| c.spec.controller_name == MULTIKUEUE_CONTROLLER_NAME)
        .map(|check| (check.name_any(), activity_of(check, objects)))
        .collect()
}

fn activity_of(check: &AdmissionCheck, objects: &QueueObjects<'_>) -> CheckActivity {
    let bad = |message: String| CheckActivity {
        active: false,
        reason: "BadConfig",
        message: format!("Cannot load the AdmissionChecks parameters: {message}"),
    };
    let Some(params) = check.spec.parameters.as_ref() else {
        return bad("spec.parameters is not set (it must name a MultiKueueConfig)".into());
    };
    if params.kind != "MultiKueueConfig" || params.api_group != "kueue.x-k8s.io" {
        return bad(format!(
            "spec.parameters names a {}/{}, not a kueue.x-k8s.io/MultiKueueConfig",
            params.api_group, params.kind
        ));
    }
    let Some(config) = objects.configs.iter().find(|c| c.name_any() == params.name) else {
        return bad(format!("MultiKueueConfig {:?} not found", params.name));
    };
    let mut missing = Vec::new();
    let mut inactive = Vec::new();
    for name in &config.spec.clusters {
        match objects.clusters.iter().find(|c| c.name_any() == *name) {
            None => missing.push(name.as_str()),
            Some(cluster) => {
                let conditions = cluster
                    .status
                    .as_ref()
                    .map(|s| s.conditions.as_slice())
                    .unwrap_or(&[]);
                if !is_condition_true(conditions, condition::ACTIVE) {
                    inactive.push(name.as_str());
                }
            }
        }
    }
    let unusable = missing.len() + inactive.len();
    if unusable == 0 {
        return CheckActivity {
            active: true,
            reason: "Active",
            message: "The admission check is active".into(),
        };
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("Missing clusters: [{}]", missing.join(" ")));
    }
    if !inactive.is_empty() {
        parts.push(format!("Inactive clusters: [{}]", inactive.join(" ")));
    }
    // Partly usable still dispatches to the clusters that work, as upstream does.
    let some_usable = unusable < config.spec.clusters.len();
    CheckActivity {
        active: some_usable,
        reason: if some_usable {
            "SomeActiveClusters"
        } else {
            "NoUsableClusters"
        },
        message: parts.join(", "),
    }
}

/// New statuses for the checks whose `Active` condition would change.
pub fn check_statuses(
    checks: &[Arc<AdmissionCheck>],
    activity: &BTreeMap<String, CheckActivity>,
    now: DateTime<Utc>,
) -> Vec<(String, AdmissionCheckStatus)> {
    let mut out = Vec::new();
    for check in checks {
        let name = check.name_any();
        let Some(a) = activity.get(&name) else {
            continue;
        };
        let mut status = check.status.clone().unwrap_or_default();
        let changed = set_condition(
            &mut status.conditions,
            NewCondition::new(
                condition::ACTIVE,
                ConditionStatus::from_bool(a.active),
                a.reason,
                a.message.clone(),
            )
            .observed_generation(check.metadata.generation),
            now,
        );
        if changed {
            out.push((name, status));
        }
    }
    out
}

/// The manager's ClusterQueues (those naming a MultiKueue AdmissionCheck) and, for each, why
/// it can't admit, if it can't: its MultiKueue check is inactive (bad parameters or no usable
/// cluster), so nothing is dispatched. Other checks are not the manager's and don't count,
/// as they don't for dispatch.
pub fn queue_activity(
    cluster_queues: &[Arc<ClusterQueue>],
    activity: &BTreeMap<String, CheckActivity>,
) -> BTreeMap<String, Option<Inactive>> {
    let mut out = BTreeMap::new();
    for cq in cluster_queues {
        let named: Vec<&str> = cq
            .spec
            .admission_checks_strategy
            .iter()
            .flat_map(|s| s.admission_checks.iter().map(|c| c.name.as_str()))
            .collect();
        if !named.iter().any(|n| activity.contains_key(*n)) {
            continue;
        }
        let inactive: Vec<&str> = named
            .iter()
            .copied()
            .filter(|n| activity.get(*n).is_some_and(|a| !a.active))
            .collect();
        let why = if !inactive.is_empty() {
            Some(Inactive {
                reason: "AdmissionCheckInactive".into(),
                message: format!(
                    "Can't admit new workloads: references inactive AdmissionCheck(s): {}",
                    inactive.join(", ")
                ),
            })
        } else {
            None
        };
        out.insert(cq.name_any(), why);
    }
    out
}

#[cfg(test)]
mod tests;
