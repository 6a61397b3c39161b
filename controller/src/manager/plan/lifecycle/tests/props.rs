//! Properties of the lifecycle plan over arbitrary observations (`props/strategy.rs`): no
//! panic and the same plan twice; never more than one admitted replica kept; a finished,
//! deleted, inactive or unrouted workload loses its replicas; creations and deletions are
//! well formed; a gate opens only for a signalling Closed replica, never within the timeout
//! of another opening; applying a plan and planning again converges with no more writes.

mod strategy;

use proptest::prelude::*;

use super::*;
use baton_core::ungate;
use strategy::{World, world};

impl World {
    fn plan(&self) -> Plan {
        self.plan_at(self.now)
    }

    fn plan_at(&self, now: i64) -> Plan {
        let route = route();
        plan(
            &Observation {
                workload: &self.workload,
                route: self.routed.then_some(&route),
                clusters: &self.clusters,
                replicas: &cached(&self.replicas),
                priority: self.workload.spec.priority,
                view: Default::default(),
                now: t(now),
            },
            &self.config,
        )
    }

    fn has_finalizer(&self) -> bool {
        self.workload
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER)
    }

    fn status_after(&self, plan: &Plan) -> WorkloadStatus {
        plan.status
            .clone()
            .or_else(|| self.workload.status.clone())
            .unwrap_or_default()
    }

    /// What the shell's writes leave behind, at `now`.
    fn apply(&self, plan: &Plan, now: i64) -> World {
        let mut next = self.clone();
        next.now = now;
        if let Some(status) = &plan.status {
            next.workload.status = Some(status.clone());
        }
        let finalizers = next
            .workload
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new);
        if plan.finalizer == Some(FinalizerAction::Add) {
            finalizers.push(FINALIZER.to_string());
        }
        if plan.finalizer == Some(FinalizerAction::Remove) {
            finalizers.retain(|f| f != FINALIZER);
        }
        for d in &plan.delete {
            next.replicas.remove(&d.cluster);
        }
        for cluster in &plan.create {
            let mut r = build_replica(
                &self.workload,
                None,
                "multikueue",
                if self.config.orchestrated {
                    baton_core::ungate::ReplicaGating::Gated
                } else {
                    baton_core::ungate::ReplicaGating::Off
                },
            );
            r.metadata.creation_timestamp = Some(to_kube(t(now)));
            next.replicas.insert(cluster.clone(), r);
        }
        if let Some(opening) = &plan.open_gate
            && let Some(r) = next.replicas.get_mut(&opening.cluster)
        {
            let status = r.status.get_or_insert_with(Default::default);
            set_gate_state(status, MULTIKUEUE_GATE, GateState::Open, t(now));
        }
        next
    }

    /// The replicas the plan keeps.
    fn kept<'a>(&'a self, plan: &'a Plan) -> impl Iterator<Item = (&'a String, &'a Workload)> {
        self.replicas
            .iter()
            .filter(|(c, _)| !plan.delete.iter().any(|d| &d.cluster == *c))
    }

    /// Every Open gate the manager knows of, with when it opened: kept replicas, and what
    /// unreachable clusters last showed (or, never seen, may have opened when they went).
    fn open_gates(&self, plan: &Plan) -> Vec<(String, DateTime<Utc>)> {
        let mut open: Vec<(String, DateTime<Utc>)> = self
            .kept(plan)
            .filter_map(|(c, r)| open_since(r).map(|at| (c.clone(), at)))
            .collect();
        for cluster in &self.clusters {
            if let ClusterState::Unreachable { since, last_known } = &cluster.state {
                match last_known {
                    LastKnown::NeverSeen => open.push((cluster.name.clone(), *since)),
                    LastKnown::Seen(Some(view)) => {
                        let open_at = view
                            .gate
                            .as_ref()
                            .filter(|g| g.state == GateState::Open)
                            .map(|g| g.since.unwrap_or(DateTime::<Utc>::MIN_UTC));
                        open.extend(open_at.map(|at| (cluster.name.clone(), at)));
                    }
                    LastKnown::Seen(None) => {}
                }
            }
        }
        open
    }
}

fn open_since(replica: &Workload) -> Option<DateTime<Utc>> {
    baton_crds::gates::gates(replica)
        .into_iter()
        .find(|g| g.name == MULTIKUEUE_GATE && g.state == GateState::Open)
        .map(|g| g.last_transition_time.unwrap_or(DateTime::<Utc>::MIN_UTC))
}

fn admitted_replica(r: &Workload) -> bool {
    is_true(replica_conditions(r), condition::ADMITTED)
}

fn writes(plan: &Plan) -> bool {
    (plan.finalizer == Some(FinalizerAction::Add))
        || (plan.finalizer == Some(FinalizerAction::Remove))
        || !plan.delete.is_empty()
        || !plan.create.is_empty()
        || plan.open_gate.is_some()
        || plan.status.is_some()
}

fn at_least(elapsed: chrono::Duration, timeout: Duration) -> bool {
    chrono::Duration::from_std(timeout).is_ok_and(|timeout| elapsed >= timeout)
}

proptest! {
    /// Total (no panic on any observation) and a pure function of it.
    #[test]
    fn plans_are_total_and_deterministic(w in world()) {
        prop_assert_eq!(w.plan(), w.plan());
    }

    /// The first admitted replica wins: after the plan's deletions at most one admitted
    /// replica is left, and it is on the cluster the workload records as its winner.
    #[test]
    fn at_most_one_admitted_replica_is_kept(w in world()) {
        let ours = w.has_finalizer() || (w.workload.metadata.deletion_timestamp.is_none() && w.routed);
        prop_assume!(ours);
        let plan = w.plan();
        let admitted: Vec<&String> = w.kept(&plan).filter(|(_, r)| admitted_replica(r)).map(|(c, _)| c).collect();
        prop_assert!(admitted.len() <= 1, "admitted replicas kept on {:?}: {:#?}", admitted, plan);
        if let Some(winner) = admitted.first() {
            let status = w.status_after(&plan);
            prop_assert_eq!(status.cluster_name.as_ref(), Some(*winner));
        }
    }

    /// A finished, deleted, inactive or no longer MultiKueue workload creates nothing, opens
    /// nothing and deletes every replica it can reach; the finalizer goes only once none is
    /// left. Without the finalizer, a deleted workload's plan touches nothing.
    #[test]
    fn a_workload_that_ends_removes_its_replicas(w in world()) {
        let plan = w.plan();
        let deleted = w.workload.metadata.deletion_timestamp.is_some();
        let finished = w.workload.status.as_ref().is_some_and(|s| is_true(&s.conditions, condition::FINISHED));
        let ends = deleted || !w.routed || finished || !w.workload.spec.active;
        if ends {
            prop_assert!(plan.create.is_empty() && plan.open_gate.is_none(), "{:#?}", plan);
            if w.has_finalizer() {
                let mut gone: Vec<&str> = plan.delete.iter().map(|d| d.cluster.as_str()).collect();
                gone.sort_unstable();
                let all: Vec<&str> = w.replicas.keys().map(String::as_str).collect();
                prop_assert_eq!(gone, all);
            } else if deleted || !w.routed {
                prop_assert!(!writes(&plan), "{:#?}", plan);
            }
        }
        if plan.finalizer == Some(FinalizerAction::Remove) {
            prop_assert!(w.replicas.is_empty() && (deleted || !w.routed));
        }
    }

    /// Replicas are created only on connected clusters of the route that have none (or whose
    /// stale one goes in the same plan), and each cluster appears at most once either way.
    #[test]
    fn creations_and_deletions_are_well_formed(w in world()) {
        let plan = w.plan();
        let mut deleted: Vec<&str> = plan.delete.iter().map(|d| d.cluster.as_str()).collect();
        deleted.sort_unstable();
        let before = deleted.len();
        deleted.dedup();
        prop_assert_eq!(before, deleted.len(), "a replica deleted twice: {:#?}", plan);
        prop_assert!(deleted.iter().all(|c| w.replicas.contains_key(*c)));
        let mut created = plan.create.clone();
        created.sort_unstable();
        created.dedup();
        prop_assert_eq!(created.len(), plan.create.len());
        for c in &plan.create {
            let connected = w.clusters.iter().any(|v| &v.name == c && v.state == ClusterState::Active);
            prop_assert!(connected && route().clusters.contains(c), "created on {}", c);
            prop_assert!(!w.replicas.contains_key(c) || deleted.contains(&c.as_str()), "a second replica on {}", c);
        }
        if plan.admitted_on.is_some() || plan.open_gate.is_some() {
            prop_assert!(plan.admitted_on.is_none() || plan.open_gate.is_none());
        }
    }

    /// KEP-8303: only with orchestration on, only for a kept replica whose gate is Closed and
    /// that signals `PreemptionGated`, never beside an admitted replica, and never within the
    /// timeout (plus the stored second) of any Open gate the manager knows of. (Found: a
    /// replica deleted as out of sync got its gate opened in the same plan.)
    #[test]
    fn a_gate_opens_only_for_a_signalling_replica_after_the_timeout(w in world()) {
        gate_opens_only_for_a_signalling_replica_after_the_timeout(&w)?;
    }

    /// Once a gate is opened, no plan opens another before the timeout has passed.
    #[test]
    fn no_second_opening_within_the_timeout(w in world(), later in 0..700_i64) {
        no_second_opening(&w, later)?;
    }

    /// Applying a plan's writes and planning again at the same instant settles within three
    /// rounds (a re-dispatch deletes, then re-creates; a deletion removes the replicas, then
    /// the finalizer); after that, planning again asks for no write at all. (Found: with the
    /// re-dispatch stamped after now, by a manager clock ahead of the worker's, every new
    /// replica looked stale: created, deleted, created again.)
    #[test]
    fn applying_the_plan_converges(w in world()) {
        converges(&w)?;
    }
}

fn gate_opens_only_for_a_signalling_replica_after_the_timeout(
    w: &World,
) -> Result<(), TestCaseError> {
    let plan = w.plan();
    let Some(opening) = &plan.open_gate else {
        return Ok(());
    };
    prop_assert!(w.config.orchestrated);
    let kept: BTreeMap<&String, &Workload> = w.kept(&plan).collect();
    let replica = kept.get(&opening.cluster);
    prop_assert!(
        replica.is_some(),
        "opened on {} which keeps no replica",
        opening.cluster
    );
    let view = ungate::view_of(&opening.cluster, replica.copied().unwrap_or(&w.workload));
    prop_assert_eq!(view.gate.map(|g| g.state), Some(GateState::Closed));
    prop_assert!(
        view.signal
            .is_some_and(|s| s.reason == reason::PREEMPTION_GATED)
    );
    prop_assert!(!kept.values().any(|r| admitted_replica(r)));
    prop_assert!(!plan.create.contains(&opening.cluster));
    let margin = chrono::Duration::from_std(ungate::STORED_TIME_PRECISION).unwrap_or_default();
    for (cluster, since) in w.open_gates(&plan) {
        let elapsed = t(w.now).signed_duration_since(since) - margin;
        prop_assert!(
            at_least(elapsed, w.config.preemption_timeout),
            "opened {} {:?} after {} opened at {}",
            opening.cluster,
            elapsed,
            cluster,
            since
        );
    }
    Ok(())
}

fn no_second_opening(w: &World, later: i64) -> Result<(), TestCaseError> {
    let first = w.plan();
    if first.open_gate.is_none() {
        return Ok(());
    }
    let next = w.apply(&first, w.now);
    let within = !at_least(
        chrono::Duration::seconds(later - 1),
        w.config.preemption_timeout,
    );
    if within {
        let again = next.plan_at(w.now + later);
        prop_assert!(again.open_gate.is_none(), "{:#?} then {:#?}", first, again);
    }
    Ok(())
}

fn converges(w: &World) -> Result<(), TestCaseError> {
    let mut current = w.clone();
    let mut history = Vec::new();
    for _ in 0..4 {
        let plan = current.plan();
        if !writes(&plan) {
            return Ok(());
        }
        history.push(plan.clone());
        current = current.apply(&plan, w.now);
    }
    prop_assert!(false, "still writing after 4 rounds: {:#?}", history);
    Ok(())
}
