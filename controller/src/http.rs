//! The operations endpoint: `/metrics`, `/livez`, `/readyz`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics::Metrics;

/// Readiness: set once the controller's caches have synced.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set_ready(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn set_not_ready(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct Ops {
    metrics: Arc<Metrics>,
    ready: Readiness,
}

/// Serves the endpoints on the metrics address and, when it differs, on the health-probe
/// address too (what the kubelet probes); returns the bound addresses.
pub async fn serve_operations(
    metrics_address: &str,
    health_address: &str,
    metrics: Arc<Metrics>,
    ready: Readiness,
) -> anyhow::Result<Vec<SocketAddr>> {
    let mut bound = Vec::new();
    let mut seen = Vec::new();
    for (field, text) in [
        ("metricsBindAddress", metrics_address),
        ("healthProbeBindAddress", health_address),
    ] {
        if seen.contains(&text) && !text.ends_with(":0") {
            continue;
        }
        seen.push(text);
        let addr =
            crate::config::parse_bind_address(text).map_err(|e| anyhow::anyhow!("{field}: {e}"))?;
        let local = serve(addr, metrics.clone(), ready.clone())
            .await
            .map_err(|e| anyhow::anyhow!("{field}: cannot listen on {addr}: {e}"))?;
        tracing::info!(%local, "serving /metrics, /livez and /readyz");
        bound.push(local);
    }
    Ok(bound)
}

/// Serves the endpoints on `addr` until the process ends; returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    ready: Readiness,
) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/livez", get(|| async { "ok" }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready_handler))
        .with_state(Ops { metrics, ready });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "operations endpoint stopped");
        }
    });
    Ok(bound)
}

async fn metrics_handler(State(ops): State<Ops>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        ops.metrics.encode(),
    )
}

async fn ready_handler(State(ops): State<Ops>) -> impl IntoResponse {
    if ops.ready.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}
