//! The loop of the worker's integrations for dynamic kinds: its own task, woken by changes
//! of their objects, Workloads and ResourceFlavors. Each pass plans every object of every
//! kind and sends the writes, each guarded by the resourceVersion it was computed from; a
//! conflict is planned again on a later pass.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use baton_crds::{ResourceFlavor, Workload};
use chrono::Utc;
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use tokio::sync::mpsc;

use super::plan::{ObjectPlan, ObjectWrite, plan};
use super::view::{busy_owners, views};
use crate::events::{Event, Events, Reporter};
use crate::integrations::Kind;
use crate::jobs::template::FlavorPlacement;
use crate::metrics::{ErrorLabel, Metrics};
use crate::shutdown::Shutdown;
use crate::worker::jobs::plan::JobEvent;

const BATCH_WINDOW: Duration = Duration::from_millis(5);
const RESYNC: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_millis(500);

/// The caches the loop reads.
pub struct ObjectCaches {
    pub objects: Vec<(Kind, Store<DynamicObject>)>,
    /// batch/v1 Jobs (a JobSet's children): their pods hold the JobSet's quota.
    pub jobs: Store<k8s_openapi::api::batch::v1::Job>,
    pub workloads: Store<Workload>,
    pub flavors: Store<ResourceFlavor>,
}

/// A cache of `kind`'s objects; its changes tick `wake`. A kind the worker may not read is
/// retried with the watcher's backoff (the rest run on).
pub fn cache(
    client: &Client,
    kind: &Kind,
    wake: mpsc::UnboundedSender<()>,
) -> Store<DynamicObject> {
    use kube::runtime::WatchStreamExt;
    let resource = kind.api_resource();
    let writer = kube::runtime::reflector::store::Writer::<DynamicObject>::new(resource.clone());
    let reader = writer.as_reader();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|o: &mut DynamicObject| o.metadata.managed_fields = None)
        .reflect(writer);
    let kind = kind.clone();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => {
                    let _ = wake.send(());
                }
                Err(e) => tracing::debug!(%kind, error = %e, "watch failed"),
            }
        }
    });
    reader
}

/// Runs the loop until `shutdown`.
pub async fn run(
    client: Client,
    caches: ObjectCaches,
    wake: mpsc::UnboundedSender<()>,
    mut woken: mpsc::UnboundedReceiver<()>,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) {
    if caches.objects.is_empty() {
        return;
    }
    for (_, store) in &caches.objects {
        let _ = store.wait_until_ready().await;
    }
    let recorder = Events::start(
        client.clone(),
        Reporter {
            controller: "baton-worker".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
        metrics.events_dropped.clone(),
    );
    let stop = shutdown.requested();
    tokio::pin!(stop);
    let mut reported = HashSet::new();
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            woke = woken.recv() => if woke.is_none() { break },
            _ = resync.tick() => {}
            _ = &mut stop => break,
        }
        tokio::time::sleep(BATCH_WINDOW).await;
        while woken.try_recv().is_ok() {}
        pass(&client, &caches, &recorder, &metrics, &wake, &mut reported).await;
    }
}

/// A problem reported once: object uid, reason, message.
type Reported = HashSet<(String, &'static str, String)>;

async fn pass(
    client: &Client,
    caches: &ObjectCaches,
    recorder: &Events,
    metrics: &Metrics,
    wake: &mpsc::UnboundedSender<()>,
    reported: &mut Reported,
) {
    let now = Utc::now();
    let workloads = caches.workloads.state();
    let flavors: HashMap<String, FlavorPlacement> = caches
        .flavors
        .state()
        .iter()
        .map(|f| (f.name_any(), FlavorPlacement::from(f.as_ref())))
        .collect();
    let mut busy = busy_owners(&caches.jobs.state());
    // One level up: a TrainJob's JobSet is busy while its Jobs are.
    for (_, store) in &caches.objects {
        for obj in store.state() {
            if obj.metadata.uid.as_ref().is_some_and(|u| busy.contains(u)) {
                let owners = obj
                    .owner_references()
                    .iter()
                    .filter(|o| o.controller == Some(true));
                busy.extend(owners.map(|o| o.uid.clone()).collect::<Vec<_>>());
            }
        }
    }
    let mut steps = Vec::new();
    for (kind, store) in &caches.objects {
        let objects = store.state();
        for view in views(kind, &objects, &workloads, &flavors, &busy) {
            let ObjectPlan { write, event } = plan(&view, now);
            match (write, event) {
                (Some(w), ev) => steps.push((kind.clone(), view.object.clone(), w, ev)),
                (None, Some(ev)) => {
                    let id = (
                        view.object.metadata.uid.clone().unwrap_or_default(),
                        ev.reason,
                        ev.message.clone(),
                    );
                    if reported.insert(id) {
                        tracing::warn!(%kind, object = %view.object.name_any(), reason = ev.reason, "{}", ev.message);
                        publish(recorder, kind, view.object, ev);
                    }
                }
                (None, None) => {}
            }
        }
    }
    let results = futures::stream::iter(steps.into_iter().map(|(kind, obj, w, ev)| async move {
        let result = send(client, &kind, &w).await;
        if result.is_ok()
            && let Some(ev) = ev
        {
            publish(recorder, &kind, &obj, ev);
        }
        (kind, obj, result)
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    for (kind, obj, result) in results {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => wake_after(wake, RETRY),
            Err(e) => {
                tracing::warn!(%kind, object = %obj.name_any(), error = %e, "integration write failed");
                metrics
                    .reconcile_errors
                    .get_or_create(&ErrorLabel {
                        reason: "ObjectWrite".into(),
                    })
                    .inc();
                wake_after(wake, RETRY * 4);
            }
        }
    }
}

fn wake_after(wake: &mpsc::UnboundedSender<()>, delay: Duration) {
    let wake = wake.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = wake.send(());
    });
}

async fn send(client: &Client, kind: &Kind, write: &ObjectWrite) -> Result<(), kube::Error> {
    match write {
        ObjectWrite::CreateWorkload(wl) => {
            let api: Api<Workload> =
                Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
            api.create(&PostParams::default(), wl).await.map(drop)
        }
        ObjectWrite::AdoptWorkload(wl) => {
            let api: Api<Workload> =
                Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default());
            let patch = serde_json::json!({"metadata": {
                "resourceVersion": wl.resource_version(),
                "ownerReferences": wl.metadata.owner_references,
            }});
            api.patch(
                &wl.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(drop)
        }
        ObjectWrite::UpdateObject(obj) => {
            let api: Api<DynamicObject> = Api::namespaced_with(
                client.clone(),
                &obj.namespace().unwrap_or_default(),
                &kind.api_resource(),
            );
            api.replace(&obj.name_any(), &PostParams::default(), obj)
                .await
                .map(drop)
        }
        ObjectWrite::WorkloadStatus { workload, status } => {
            crate::admission::scheduler::write_status(client, workload, status)
                .await
                .map(drop)
        }
    }
}

fn publish(recorder: &Events, kind: &Kind, obj: &DynamicObject, ev: JobEvent) {
    let event = Event {
        type_: ev.type_,
        reason: ev.reason.to_string(),
        note: Some(ev.message),
        action: ev.reason.to_string(),
        secondary: None,
    };
    recorder.publish(event, obj.object_ref(&kind.api_resource()));
}
