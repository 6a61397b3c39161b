//! The e2e harness: clusters for a suite, either started on the testbed or taken from real
//! kubeconfigs, ServiceAccount kubeconfigs for RBAC tests, plus helpers to wait on
//! conditions.

pub mod env;
pub mod sandbox;
pub mod service_account;

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

/// Runs kubectl against a kubeconfig, with its own cache directory. Returns None when
/// kubectl is not installed (the kubectl suites then say so and pass).
pub fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> Option<std::process::Output> {
    let bin = std::env::var("KUBECTL").unwrap_or_else(|_| "/usr/bin/kubectl".into());
    if !std::path::Path::new(&bin).exists() {
        return None;
    }
    let cache = kubeconfig.with_extension("kubectl-cache");
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args);
    cmd.output().ok()
}

/// Waits until `check` holds, polling every 20 ms, or panics with `what` after `deadline`.
pub async fn wait_until<F, Fut>(deadline: std::time::Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = tokio::time::Instant::now();
    loop {
        if check().await {
            return;
        }
        assert!(
            start.elapsed() < deadline,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
