//! Reading what a case led to: an object's condition, the Events about it, and whether a
//! `baton` process is still alive.

use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, ListParams};
use serde_json::Value;

use crate::harness::process::BatonProcess;

/// The message of condition `kind` on `object` when its status is `status`.
pub fn condition_message(object: &Value, kind: &str, status: &str) -> Option<String> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == status)
        .map(|c| {
            format!(
                "{}: {}",
                c["reason"].as_str().unwrap_or_default(),
                c["message"].as_str().unwrap_or_default()
            )
        })
}

/// `reason: note` of every Event (any namespace) about the object `kind`/`name`.
pub async fn event_messages(client: &Client, kind: &str, name: &str) -> Vec<String> {
    let api: Api<Event> = Api::all(client.clone());
    let Ok(list) = api.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name))
        })
        .map(|e| {
            format!(
                "{}: {}",
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default()
            )
        })
        .collect()
}

/// Whether the process still serves `/metrics` and never logged a panic; the reason if not.
pub fn alive(process: &BatonProcess) -> Result<(), String> {
    let log = process.log_text();
    if let Some(line) = log.lines().find(|l| l.contains("panicked")) {
        return Err(format!("panicked: {line}"));
    }
    if process.metrics().is_empty() {
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        return Err(format!("no /metrics answer; last log lines: {tail:?}"));
    }
    Ok(())
}
