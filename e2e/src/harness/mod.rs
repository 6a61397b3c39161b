//! The e2e harness: clusters for a suite, either started on the testbed or taken from real
//! kubeconfigs, ServiceAccount kubeconfigs for RBAC tests, plus helpers to wait on
//! conditions.

pub mod env;
pub mod integrations;
pub mod process;
pub mod sandbox;
pub mod service_account;

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;

/// The API `Status` inside a kube-rs error, if the server answered with one.
pub fn status_of(e: &kube::Error) -> Option<&kube::core::Status> {
    match e {
        kube::Error::Api(s) => Some(s),
        _ => None,
    }
}

/// The HTTP code of an API error (None for transport errors).
pub fn code_of(e: &kube::Error) -> Option<u16> {
    status_of(e).map(|s| s.code)
}

/// Logging for the binaries: `RUST_LOG` filter, plain or JSON lines.
pub fn init_logging(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal, as the `baton` binary does.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = if format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Waits for SIGINT or SIGTERM.
pub async fn wait_for_shutdown_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
    }
}

/// The kubectl the suites run: `KUBECTL`, else `kubectl` on the PATH. Panics with a clear
/// message when there is none: the kubectl suites must fail, not pass unseen, on a machine
/// without it (the README lists kubectl as a requirement).
pub fn kubectl_path() -> PathBuf {
    if let Some(path) = std::env::var_os("KUBECTL").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "KUBECTL={} is not a file: the kubectl suites need kubectl",
            path.display()
        );
        return path;
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => path,
        None => panic!(
            "kubectl is not on the PATH (nor named by KUBECTL): the kubectl suites need it; \
             install kubectl (1.32 in CI) or set KUBECTL to its path"
        ),
    }
}

/// Runs kubectl ([`kubectl_path`]) against a kubeconfig, with its own cache directory.
/// Panics when kubectl is missing or cannot be started; never returns `None` (the `Option`
/// is kept for the suites written when a missing kubectl was skipped).
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Option<std::process::Output> {
    Some(kubectl_output(kubeconfig, args))
}

/// Runs kubectl ([`kubectl_path`]) against a kubeconfig, with its own cache directory;
/// panics when kubectl is missing or cannot be started.
pub fn kubectl_output(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    let bin = kubectl_path();
    let cache = kubeconfig.with_extension("kubectl-cache");
    std::process::Command::new(&bin)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
}

/// What a poll's check returns: `bool` (done or not), or `Option<T>` (the value once done).
pub trait Ready {
    type Value;
    fn ready(self) -> Option<Self::Value>;
}

impl Ready for bool {
    type Value = ();
    fn ready(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Ready for Option<T> {
    type Value = T;
    fn ready(self) -> Option<T> {
        self
    }
}

/// The interval between two checks of [`eventually`].
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The one poll helper of the suites: runs `check` every [`POLL_INTERVAL`] until it is
/// ready (`true`, or `Some(value)`, which is returned), or panics naming `what` after
/// `deadline`.
pub async fn eventually<R, F, Fut>(deadline: Duration, what: &str, check: F) -> R::Value
where
    R: Ready,
    F: FnMut() -> Fut,
    Fut: Future<Output = R>,
{
    match poll(deadline, check).await {
        Ok(value) => value,
        Err(TimedOut(after)) => panic!("timed out after {after:?} waiting for: {what}"),
    }
}

/// [`eventually`] under its former name (the testbed suites use it).
pub use eventually as wait_until;

/// A [`poll`] that ran out of time, after this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedOut(pub Duration);

/// [`eventually`] for code that reports errors instead of panicking: `Err` after `deadline`.
pub async fn poll<R, F, Fut>(deadline: Duration, check: F) -> Result<R::Value, TimedOut>
where
    R: Ready,
    F: FnMut() -> Fut,
    Fut: Future<Output = R>,
{
    poll_every(POLL_INTERVAL, deadline, check).await
}

/// [`poll`] with another interval between checks (for checks too costly to repeat every
/// [`POLL_INTERVAL`] against a real API server).
pub async fn poll_every<R, F, Fut>(
    interval: Duration,
    deadline: Duration,
    mut check: F,
) -> Result<R::Value, TimedOut>
where
    R: Ready,
    F: FnMut() -> Fut,
    Fut: Future<Output = R>,
{
    let start = tokio::time::Instant::now();
    loop {
        if let Some(value) = check().await.ready() {
            return Ok(value);
        }
        if start.elapsed() >= deadline {
            return Err(TimedOut(deadline));
        }
        tokio::time::sleep(interval).await;
    }
}

/// Creates or updates an object from its JSON (server-side apply, forced); returns its
/// resource. Takes any kind the server serves, core ones (`apiVersion: v1`) included.
pub async fn apply(client: &kube::Client, doc: &serde_json::Value) -> anyhow::Result<ApiResource> {
    use anyhow::Context;
    let api_version = doc["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = doc["kind"].as_str().unwrap_or_default();
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("discover {api_version} {kind}"))?;
    let name = doc["metadata"]["name"].as_str().unwrap_or_default();
    let api: Api<DynamicObject> = match doc["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply("baton-e2e").force(),
        &Patch::Apply(doc),
    )
    .await
    .with_context(|| format!("apply {kind} {name}"))?;
    Ok(resource)
}

/// The value of `column` in the row starting with `row` of a kubectl table (columns are
/// aligned under their headers; a value may be empty). Panics naming what is missing.
pub fn table_cell(table: &str, row: &str, column: &str) -> String {
    let mut lines = table.lines();
    let header = lines.next().unwrap_or_default();
    let start = header
        .find(column)
        .unwrap_or_else(|| panic!("{column} in {table}"));
    // The column ends where the next header begins (headers may hold spaces).
    let after = start + column.len();
    let end = header[after..]
        .find(|c: char| !c.is_whitespace())
        .map_or(usize::MAX, |next| after + next);
    let line = lines
        .find(|l| l.starts_with(row))
        .unwrap_or_else(|| panic!("{row} in {table}"));
    line.get(start..end.min(line.len()))
        .unwrap_or_default()
        .trim()
        .to_string()
}
