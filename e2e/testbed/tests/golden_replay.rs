//! Replays the recorded kube-apiserver v1.36.2 corpus (`shared/apiserver-golden/`) against
//! fresh testbed clusters, one per case, and compares every answer as the corpus README says.
//!
//! `BATON_SHARED_DIR` overrides the location of `shared/`; `BATON_GOLDEN=text` replays only
//! the cases whose name contains `text` (for working on one area). Prints
//! `golden: N matched, M expected differences, K failed` and the differences of every case
//! that did not match.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use baton_testbed::golden::{Case, CaseOutcome, Replayer, load_case, load_index};
use futures::StreamExt;

/// Why a case may differ from the recording (also listed in `e2e/README.md`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // No case needs either kind today.
enum Difference {
    /// The outcome depends on wall-clock timing on any server: either answer is accepted.
    Timing,
    /// The testbed deliberately answers otherwise: the case must differ (so this table
    /// stays honest when the testbed changes).
    Deliberate,
}

/// Cases the testbed may answer differently, and why. Empty: every case matches. (The order
/// of `managedFields` entries of one operation depends on the second their writes fell in,
/// on any server; the comparison puts them in one order, see `golden::compare`.)
const EXPECTED_DIFFERENCES: &[(&str, Difference, &str)] = &[];

/// Cases replayed at once (each on its own cluster; some wait for watch timeouts).
const PARALLEL: usize = 8;

/// A case that takes longer than this is reported as failed (a watch ends by its own
/// `timeoutSeconds`, a poll gives up after 15 s).
const CASE_LIMIT: Duration = Duration::from_secs(240);

/// Replays a case on a thread and runtime of its own, so a server that hangs (a deadlock
/// blocks its thread) fails that case instead of stalling the whole replay.
async fn run_isolated(replayer: Replayer, case: Case) -> CaseOutcome {
    let name = case.name.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build();
        if let Ok(runtime) = runtime {
            let _ = tx.send(runtime.block_on(replayer.run(&case)));
        }
    });
    match tokio::time::timeout(CASE_LIMIT, rx).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => CaseOutcome {
            name,
            differences: vec!["the replay thread ended without an outcome (a panic?)".into()],
            elapsed: CASE_LIMIT,
        },
        Err(_) => CaseOutcome {
            name,
            differences: vec![format!(
                "no outcome within {} s (the server hangs?)",
                CASE_LIMIT.as_secs()
            )],
            elapsed: CASE_LIMIT,
        },
    }
}

fn corpus_dir() -> PathBuf {
    let shared = std::env::var_os("BATON_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("apiserver-golden")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_testbed_answers_as_kube_apiserver_does() {
    let dir = corpus_dir();
    let index = load_index(&dir).unwrap_or_else(|e| {
        panic!("the golden corpus is missing ({e}); set BATON_SHARED_DIR to the shared/ directory")
    });
    let filter = std::env::var("BATON_GOLDEN").unwrap_or_default();
    let entries: Vec<_> = index
        .cases
        .iter()
        .filter(|e| e.name.contains(&filter))
        .cloned()
        .collect();
    assert!(
        !entries.is_empty(),
        "no case matches BATON_GOLDEN={filter:?}"
    );
    for (name, _, _) in EXPECTED_DIFFERENCES {
        assert!(
            index.cases.iter().any(|c| c.name == *name),
            "expected difference {name} names no case"
        );
    }

    let replayer = Replayer::default();
    let outcomes: Vec<(String, CaseOutcome)> = futures::stream::iter(entries)
        .map(|entry| {
            let replayer = replayer.clone();
            let dir = dir.clone();
            async move {
                let case = load_case(&dir, &entry)
                    .unwrap_or_else(|e| panic!("cannot read case {}: {e}", entry.name));
                let outcome = run_isolated(replayer, case).await;
                (entry.group().to_string(), outcome)
            }
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;

    let expected: BTreeMap<&str, Difference> = EXPECTED_DIFFERENCES
        .iter()
        .map(|(name, kind, _)| (*name, *kind))
        .collect();
    // group -> (matched, expected differences, failed)
    let mut groups: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut now_matching = Vec::new();
    for (group, outcome) in &outcomes {
        let counts = groups.entry(group.clone()).or_default();
        match (outcome.matched(), expected.get(outcome.name.as_str())) {
            (true, None | Some(Difference::Timing)) => counts.0 += 1,
            (true, Some(Difference::Deliberate)) => {
                counts.0 += 1;
                now_matching.push(outcome.name.clone());
            }
            (false, Some(_)) => counts.1 += 1,
            (false, None) => {
                counts.2 += 1;
                failures.push(outcome);
            }
        }
    }
    failures.sort_by(|a, b| a.name.cmp(&b.name));
    for failure in &failures {
        println!("FAILED {}", failure.name);
        for d in &failure.differences {
            println!("    {d}");
        }
    }
    let mut slowest: Vec<&CaseOutcome> = outcomes.iter().map(|(_, o)| o).collect();
    slowest.sort_by_key(|o| std::cmp::Reverse(o.elapsed));
    let slowest: Vec<String> = slowest
        .iter()
        .take(5)
        .map(|o| format!("{} {:.1} s", o.name, o.elapsed.as_secs_f64()))
        .collect();
    let mut summary = format!("slowest cases: {}\n", slowest.join(", "));
    summary += &format!(
        "{:<14} {:>8} {:>9} {:>7}\n",
        "group", "matched", "expected", "failed"
    );
    for (group, (m, e, f)) in &groups {
        summary += &format!("{group:<14} {m:>8} {e:>9} {f:>7}\n");
    }
    let (m, e, f) = groups
        .values()
        .fold((0, 0, 0), |acc, c| (acc.0 + c.0, acc.1 + c.1, acc.2 + c.2));
    summary += &format!("golden: {m} matched, {e} expected differences, {f} failed\n");
    // Written past the test harness's capture, so CI logs show the figures on success too.
    let _ = std::io::stderr().write_all(summary.as_bytes());
    assert!(
        now_matching.is_empty(),
        "these cases now match: remove them from EXPECTED_DIFFERENCES and e2e/README.md: {now_matching:?}"
    );
    assert!(
        failures.is_empty(),
        "{f} golden cases differ from kube-apiserver: {:?}",
        failures.iter().map(|f| f.name.as_str()).collect::<Vec<_>>()
    );
}
