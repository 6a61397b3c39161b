//! The short chaos soak (issue 14): one manager and three workers running the real `baton`
//! binaries, a fixed-seed stream of workloads and every fault kind of the long soak, scaled
//! down (manager SIGKILLs, one right after a gate opened; worker API outages, one past
//! workerLostTimeout; 1% API errors 409/429/500/503; latency spikes; a shim restart). The
//! invariant checker must find nothing. The long soak: `baton-chaos` (see e2e/README.md).

use baton_e2e::chaos::plan::Scale;
use baton_e2e::chaos::soak::{Options, WORKERS, run};

const SEED: u64 = 14;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_soak_keeps_every_invariant() {
    let keep = std::env::var_os("BATON_CHAOS_KEEP").map(std::path::PathBuf::from);
    let report = run(Options {
        seed: SEED,
        workers: WORKERS,
        scale: Scale::short(),
        keep,
        keep_always: false,
    })
    .await
    .expect("the soak runs");
    println!("{report}");
    let f = &report.figures;
    // Every fault kind happened, and the stream did real work.
    for kind in [
        "manager SIGKILL",
        "worker API offline",
        "worker API offline past workerLostTimeout",
        "worker shim restart",
        "latency spike",
        "error-code changes (1% of requests)",
    ] {
        assert!(
            f.faults.get(kind).is_some_and(|n| *n > 0),
            "no {kind}:\n{report}"
        );
    }
    assert!(f.submitted >= Scale::short().workloads * 9 / 10, "{report}");
    assert!(f.finished > 0 && f.deleted > 0, "{report}");
    assert!(report.outcome.measures.gate_openings > 0, "{report}");
    assert!(report.injected.values().sum::<u64>() > 0, "{report}");
    assert!(report.passed(), "violations:\n{report}");
}
