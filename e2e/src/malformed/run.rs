//! Submitting a table of cases and checking each outcome, collecting every failure so that
//! one run reports the whole table.

use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::Value;

use super::signals::{condition_message, event_messages};
use super::{Case, Cluster, Expect};
use crate::multikueue::Env;

/// What submitting one case gave: the API's refusal, or the stored object.
#[derive(Clone, Debug)]
pub enum Outcome {
    Refused(String),
    Stored,
}

/// The object a check looks at.
#[derive(Clone, Debug)]
struct Target {
    cluster: Cluster,
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
}

impl Target {
    fn of(case: &Case) -> Target {
        let meta = &case.object["metadata"];
        Target {
            cluster: case.cluster,
            api_version: case.object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .into(),
            kind: case.kind(),
            namespace: meta["namespace"].as_str().map(str::to_string),
            name: case.name(),
        }
    }
}

/// Submits cases to an environment's clusters and checks what became of them.
pub struct Runner<'a> {
    pub env: &'a Env,
    /// `(case, observed)` for the report table.
    pub observed: Vec<(String, String)>,
    /// Every failed expectation.
    pub failures: Vec<String>,
    /// What the API answered to each case, in table order.
    pub outcomes: Vec<Outcome>,
}

impl<'a> Runner<'a> {
    pub fn new(env: &'a Env) -> Runner<'a> {
        Runner {
            env,
            observed: Vec::new(),
            failures: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    fn client(&self, cluster: Cluster) -> Client {
        if cluster == 0 {
            self.env.manager_client()
        } else {
            self.env.worker_client(cluster)
        }
    }

    async fn api(&self, target: &Target) -> anyhow::Result<Api<DynamicObject>> {
        let client = self.client(target.cluster);
        let (group, version) = target
            .api_version
            .split_once('/')
            .unwrap_or(("", &target.api_version));
        let gvk = GroupVersionKind::gvk(group, version, &target.kind);
        let (resource, _): (ApiResource, _) = kube::discovery::pinned_kind(&client, &gvk).await?;
        Ok(match &target.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        })
    }

    /// Creates the case's object (and writes its status): the API's answer.
    pub async fn submit(&self, case: &Case) -> Outcome {
        let api = match self.api(&Target::of(case)).await {
            Ok(api) => api,
            Err(e) => return Outcome::Refused(format!("discovery: {e}")),
        };
        let object: DynamicObject = match serde_json::from_value(case.object.clone()) {
            Ok(o) => o,
            Err(e) => return Outcome::Refused(format!("not an object: {e}")),
        };
        if let Err(e) = api.create(&PostParams::default(), &object).await {
            return Outcome::Refused(error_text(&e));
        }
        if let Some(status) = &case.status {
            let patch = serde_json::json!({ "status": status });
            if let Err(e) = api
                .patch_status(&case.name(), &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                return Outcome::Refused(error_text(&e));
            }
        }
        Outcome::Stored
    }

    async fn fetch(&self, target: &Target) -> Option<Value> {
        let api = self.api(target).await.ok()?;
        let object = api.get_opt(&target.name).await.ok()??;
        serde_json::to_value(object).ok()
    }

    /// Submits every case, then checks each expectation (waiting up to `deadline` overall
    /// for the asynchronous ones); records what was seen and what failed.
    pub async fn run(&mut self, cases: &[Case], deadline: Duration) {
        let mut outcomes = Vec::new();
        for case in cases {
            outcomes.push(self.submit(case).await);
        }
        self.outcomes = outcomes.clone();
        let end = Instant::now() + deadline;
        for (case, outcome) in cases.iter().zip(outcomes) {
            let label = format!("{} ({} {})", case.id, case.kind(), case.name());
            match self.check(&case.expect, case, &outcome, end).await {
                Ok(observed) => self.observed.push((label, observed)),
                Err(failure) => {
                    self.observed
                        .push((label.clone(), format!("FAILED: {failure}")));
                    self.failures.push(format!("{label}: {failure}"));
                }
            }
        }
    }

    async fn check(
        &self,
        expect: &Expect,
        case: &Case,
        outcome: &Outcome,
        end: Instant,
    ) -> Result<String, String> {
        let refused_with = |needles: &[&str], message: &str| {
            // A validation error (422) names the object as well as the field.
            if message.starts_with("422 ") && !message.contains(&format!("\"{}\"", case.name())) {
                return Err(format!("refused, but without the object's name: {message}"));
            }
            if needles.iter().all(|n| message.contains(n)) {
                Ok(format!("refused: {message}"))
            } else {
                Err(format!(
                    "refused, but the message lacks {needles:?}: {message}"
                ))
            }
        };
        match (expect, outcome) {
            (Expect::Rejected(needles), Outcome::Refused(message))
            | (Expect::RejectedOr(needles, _), Outcome::Refused(message)) => {
                refused_with(needles, message)
            }
            (Expect::Rejected(needles), Outcome::Stored) => Err(format!(
                "stored, but the API should refuse it ({needles:?})"
            )),
            (_, Outcome::Refused(message)) => Err(format!("refused unexpectedly: {message}")),
            (Expect::RejectedOr(_, otherwise), Outcome::Stored) => {
                Box::pin(self.check(otherwise, case, outcome, end))
                    .await
                    .map(|seen| format!("stored (this server validates less), then {seen}"))
            }
            (expect, Outcome::Stored) => {
                // What was there instead at the last look, for the failure.
                let last = std::sync::Mutex::new(String::new());
                let remaining = end.saturating_duration_since(Instant::now());
                crate::harness::poll_every(Duration::from_millis(100), remaining, || async {
                    match self.signal(Target::of(case), expect).await {
                        Ok(seen) => Some(seen),
                        Err(now) => {
                            *last.lock().unwrap_or_else(|e| e.into_inner()) = now;
                            None
                        }
                    }
                })
                .await
                .map_err(|_| {
                    let last = last.into_inner().unwrap_or_else(|e| e.into_inner());
                    format!("timed out; last seen: {last}")
                })
            }
        }
    }

    /// The awaited signal on `target` if it is there, or what is there instead.
    async fn signal(&self, target: Target, expect: &Expect) -> Result<String, String> {
        let holds =
            |text: &str, needles: &[String]| needles.iter().all(|n| text.contains(n.as_str()));
        match expect {
            Expect::On(cluster, inner) => {
                let replica = Target {
                    cluster: *cluster,
                    ..target
                };
                Box::pin(self.signal(replica, inner))
                    .await
                    .map(|seen| format!("on cluster {cluster}: {seen}"))
            }
            Expect::Owned(inner) => {
                let Some(owned) = self.owned_workload(&target).await else {
                    return Err(format!("no Workload owned by {} yet", target.name));
                };
                let workload = Target {
                    api_version: "kueue.x-k8s.io/v1beta2".into(),
                    kind: "Workload".into(),
                    name: owned.clone(),
                    ..target
                };
                Box::pin(self.signal(workload, inner))
                    .await
                    .map(|seen| format!("its Workload {owned}: {seen}"))
            }
            Expect::Event { reason, needles } => {
                let events =
                    event_messages(&self.client(target.cluster), &target.kind, &target.name).await;
                events
                    .iter()
                    .find(|e| e.starts_with(&format!("{reason}: ")) && holds(e, needles))
                    .map(|e| format!("event {e}"))
                    .ok_or_else(|| format!("events: {events:?}"))
            }
            Expect::Condition {
                kind,
                status,
                needles,
            } => {
                let object = self.fetch(&target).await.ok_or("the object is missing")?;
                match condition_message(&object, kind, status) {
                    Some(m) if holds(&m, needles) => Ok(format!("{kind}={status} {m}")),
                    _ => Err(format!("conditions: {}", object["status"]["conditions"])),
                }
            }
            Expect::Admitted => {
                let object = self.fetch(&target).await.ok_or("the object is missing")?;
                match condition_message(&object, "QuotaReserved", "True") {
                    Some(_) => Ok("admitted".into()),
                    None => Err(format!("conditions: {}", object["status"]["conditions"])),
                }
            }
            Expect::Rejected(_) | Expect::RejectedOr(..) => {
                Err("a refusal is checked on submission".into())
            }
        }
    }

    /// The name of the Workload owned by `target` (a Job).
    async fn owned_workload(&self, target: &Target) -> Option<String> {
        let namespace = target.namespace.as_deref()?;
        let api: Api<baton_crds::workload::Workload> =
            Api::namespaced(self.client(target.cluster), namespace);
        let list = api.list(&Default::default()).await.ok()?;
        list.items.into_iter().find_map(|w| {
            let owned = w
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == target.kind && o.name == target.name);
            owned.then(|| w.metadata.name.clone().unwrap_or_default())
        })
    }

    /// Every case the API stored is still there (nothing was lost or dropped).
    pub async fn check_nothing_lost(&mut self, cases: &[Case]) {
        for (case, outcome) in cases.iter().zip(self.outcomes.clone()) {
            if matches!(outcome, Outcome::Refused(_)) {
                continue;
            }
            if self.fetch(&Target::of(case)).await.is_none() {
                self.failures.push(format!(
                    "{} ({} {}): the stored object is gone",
                    case.id,
                    case.kind(),
                    case.name()
                ));
            }
        }
    }

    /// The report table, one case a line.
    pub fn table(&self) -> String {
        self.observed
            .iter()
            .map(|(label, seen)| format!("{label:<60} → {}", shorten(seen)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn shorten(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(240) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// The API's message (with its HTTP code) for a refused request.
fn error_text(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string(),
    }
}
