//! Replays the recorded kube-apiserver v1.36.2 corpus (`shared/apiserver-golden/`) against
//! fresh testbed clusters, one per case, and compares every answer as the corpus README says.
//!
//! `BATON_SHARED_DIR` overrides the location of `shared/`; `BATON_GOLDEN=text` replays only
//! the cases whose name contains `text` (for working on one area). Prints
//! `golden: N matched, M expected differences, K failed` and the differences of every case
//! that did not match.

use std::collections::BTreeMap;
use std::path::PathBuf;

use baton_testbed::golden::{CaseOutcome, Replayer, load_case, load_index};
use futures::StreamExt;

/// Cases the testbed deliberately answers differently, and why (also in `e2e/README.md`).
const EXPECTED_DIFFERENCES: &[(&str, &str)] = &[];

/// Cases replayed at once (each on its own cluster; some wait for watch timeouts).
const PARALLEL: usize = 8;

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
    assert!(!entries.is_empty(), "no case matches BATON_GOLDEN={filter:?}");
    for (name, _) in EXPECTED_DIFFERENCES {
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
                let outcome = replayer.run(&case).await;
                (entry.group().to_string(), outcome)
            }
        })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;

    let expected: BTreeMap<&str, &str> = EXPECTED_DIFFERENCES.iter().copied().collect();
    // group -> (matched, expected differences, failed)
    let mut groups: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut now_matching = Vec::new();
    for (group, outcome) in &outcomes {
        let counts = groups.entry(group.clone()).or_default();
        match (outcome.matched(), expected.contains_key(outcome.name.as_str())) {
            (true, false) => counts.0 += 1,
            (true, true) => {
                counts.0 += 1;
                now_matching.push(outcome.name.clone());
            }
            (false, true) => counts.1 += 1,
            (false, false) => {
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
    println!("{:<14} {:>8} {:>9} {:>7}", "group", "matched", "expected", "failed");
    for (group, (m, e, f)) in &groups {
        println!("{group:<14} {m:>8} {e:>9} {f:>7}");
    }
    let (m, e, f) = groups
        .values()
        .fold((0, 0, 0), |acc, c| (acc.0 + c.0, acc.1 + c.1, acc.2 + c.2));
    println!("golden: {m} matched, {e} expected differences, {f} failed");
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
