//! The core is pure by construction: Cargo must not link an async runtime, a Kubernetes
//! client, a controller runtime or an HTTP stack into it (DESIGN.md §1).

use std::process::Command;

const FORBIDDEN: &[&str] = &[
    "tokio",
    "kube-runtime",
    "kube-client",
    "axum",
    "hyper",
    "tower",
    "reqwest",
];

#[test]
fn the_core_depends_on_no_runtime_client_or_http_stack() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "baton-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--locked",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let crates: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(crates.contains(&"baton-crds"), "unexpected tree: {tree}");
    let found: Vec<&&str> = FORBIDDEN.iter().filter(|f| crates.contains(f)).collect();
    assert!(found.is_empty(), "baton-core depends on {found:?}:\n{tree}");
}
