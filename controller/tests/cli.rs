//! The `baton` binary as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .output()
        .expect("baton runs")
}

fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/yaml")
}

fn sorted_yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// The committed CRDs must be exactly what the code generates.
#[test]
fn committed_crds_match_generated_ones() {
    let out = tempfile::tempdir().expect("tempdir");
    let result = baton(&["crds", "--out", out.path().to_str().expect("utf-8 path")]);
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );

    let generated = sorted_yaml_files(out.path());
    let committed = sorted_yaml_files(&committed_dir());
    let names = |files: &[PathBuf]| -> Vec<String> {
        files
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    };
    assert_eq!(
        names(&generated),
        names(&committed),
        "CRD files differ; run hack/gen-crds.sh and commit crds/yaml/"
    );
    assert_eq!(generated.len(), 8);
    for (g, c) in generated.iter().zip(&committed) {
        let g_text = std::fs::read_to_string(g).expect("read generated");
        let c_text = std::fs::read_to_string(c).expect("read committed");
        assert!(
            g_text == c_text,
            "{} is out of date with the Rust API types; run hack/gen-crds.sh and commit crds/yaml/",
            c.display()
        );
    }
}

/// `baton crds` prints the same CRDs as one stream.
#[test]
fn crds_stream_is_the_files_concatenated() {
    let result = baton(&["crds"]);
    assert!(result.status.success());
    let stream = String::from_utf8(result.stdout).expect("utf-8");
    let files: String = sorted_yaml_files(&committed_dir())
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("read"))
        .collect();
    assert_eq!(stream, files);
    assert_eq!(stream.matches("\n---\n").count() + 1, 8, "eight documents");
}

#[test]
fn version_and_help() {
    let v = baton(&["--version"]);
    assert!(v.status.success());
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("baton "));
    let h = baton(&["manager", "--help"]);
    let help = String::from_utf8_lossy(&h.stdout);
    for flag in ["--kubeconfig", "--config", "--namespace", "--log-format"] {
        assert!(help.contains(flag), "manager --help lacks {flag}:\n{help}");
    }
}

#[test]
fn worker_with_an_unreadable_kubeconfig_fails_clearly() {
    let out = baton(&[
        "worker",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--log-format",
        "json",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read kubeconfig /nonexistent/kubeconfig"),
        "{err}"
    );
}

#[test]
fn manager_with_an_unreadable_kubeconfig_fails_clearly() {
    let out = baton(&["manager", "--kubeconfig", "/nonexistent/kubeconfig"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read kubeconfig /nonexistent/kubeconfig"),
        "{err}"
    );
}

#[test]
fn invalid_config_fails_fast_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, "singleClusterPreemptionTimeout: 0s\n").expect("write");
    let out = baton(&["manager", "--config", path.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("singleClusterPreemptionTimeout: must be greater than zero"),
        "{err}"
    );
    assert!(
        !err.contains("not implemented"),
        "config errors come first: {err}"
    );

    let out = baton(&["worker", "--config", "/nonexistent/baton.yaml"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/baton.yaml"));
}

#[test]
fn bad_log_format_is_rejected_by_the_parser() {
    let out = baton(&["crds", "--log-format", "xml"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'xml'"));
}
