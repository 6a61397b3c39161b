//! `baton describe workload NAME`: fetches a manager Workload and its Events with the
//! manager's kubeconfig, and prints their story ([`crate::describe`]).

use anyhow::Context;
use baton_crds::workload::Workload;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use crate::cli::DescribeOutput;
use crate::describe::{render_text, story};

/// Prints the story of Workload `namespace/name` to stdout.
pub async fn workload(
    client: Client,
    namespace: &str,
    name: &str,
    output: DescribeOutput,
) -> anyhow::Result<()> {
    let workloads: Api<Workload> = Api::namespaced(client.clone(), namespace);
    let wl = workloads
        .get_opt(name)
        .await
        .with_context(|| format!("cannot read Workload {namespace}/{name}"))?
        .with_context(|| format!("Workload {namespace}/{name} not found"))?;
    let events: Api<Event> = Api::namespaced(client, namespace);
    let selector = format!("involvedObject.kind=Workload,involvedObject.name={name}");
    let uid = wl.uid();
    let events: Vec<Event> = events
        .list(&ListParams::default().fields(&selector))
        .await
        .with_context(|| format!("cannot list the Events of Workload {namespace}/{name}"))?
        .items
        .into_iter()
        .filter(|e| uid.is_none() || e.involved_object.uid == uid)
        .collect();
    let story = story(&wl, &events);
    match output {
        DescribeOutput::Text => print!("{}", render_text(&story)),
        DescribeOutput::Json => println!(
            "{}",
            serde_json::to_string_pretty(&story).context("cannot write the story as JSON")?
        ),
    }
    Ok(())
}
