//! Events on manager Workloads.

use baton_crds::workload::Workload;
use kube::Resource;
use kube::runtime::events::{Event, EventType as KubeEventType};

use crate::manager::plan::lifecycle::EventType;
use crate::manager::shell::context::Context;

/// Publishes an event on the manager Workload. Events about a worker name its
/// MultiKueueCluster as the related object, so each cluster gets its own event series (the
/// recorder aggregates by type, reason, action and related object, keeping the first message
/// only). The action is the reason.
pub async fn publish(
    ctx: &Context,
    wl: &Workload,
    type_: EventType,
    reason: &str,
    cluster: Option<&str>,
    message: String,
) {
    publish_action(ctx, wl, type_, reason, reason, cluster, message).await;
}

/// [`publish`] with an action of its own: events that share upstream's reason (`MultiKueue`)
/// for different decisions stay separate series.
pub async fn publish_action(
    ctx: &Context,
    wl: &Workload,
    type_: EventType,
    reason: &str,
    action: &str,
    cluster: Option<&str>,
    message: String,
) {
    let secondary = cluster.map(|name| k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(format!("{}/{}", baton_crds::GROUP, baton_crds::VERSION)),
        kind: Some("MultiKueueCluster".into()),
        name: Some(name.to_string()),
        ..Default::default()
    });
    let event = Event {
        type_: match type_ {
            EventType::Normal => KubeEventType::Normal,
            EventType::Warning => KubeEventType::Warning,
        },
        reason: reason.to_string(),
        note: Some(message),
        action: action.to_string(),
        secondary,
    };
    // Events never hold up a decision: they are written in the background.
    ctx.recorder.publish(event, wl.object_ref(&()));
}
