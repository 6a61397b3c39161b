//! The `baton` binary the sandbox runs: `BATON_BIN`, or the one next to the sandbox (same
//! target directory and profile), built with cargo first when it is missing or older than
//! the controller sources of this checkout — so the demo is one command on a fresh clone.
//! Without the sources (an installed sandbox) nothing is built: a missing binary is an
//! error that says how to get one.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::Context;

use crate::harness::process::{BUILD_HINT, beside_executable, staleness_warning, workspace_root};

/// How the sandbox gets its `baton`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Run this binary as it is; say `warning` first when there is one.
    Use {
        path: PathBuf,
        warning: Option<String>,
    },
    /// Build it with cargo first; `why` tells the user.
    Build { path: PathBuf, why: String },
    /// No binary, and no way to build one here.
    Missing { path: PathBuf },
}

/// What [`plan`] decides from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// `BATON_BIN`, when set.
    pub from_env: Option<PathBuf>,
    /// The binary beside the sandbox's executable.
    pub beside: PathBuf,
    /// Whether the chosen path is a file.
    pub exists: bool,
    /// The staleness warning for the chosen path, when it is older than the sources.
    pub stale: Option<String>,
    /// Whether this checkout's sources (and so cargo's workspace) are around.
    pub sources: bool,
}

/// Decides how to get the binary. `BATON_BIN` always wins and is never built.
pub fn plan(found: Found) -> Plan {
    if let Some(path) = found.from_env {
        return if found.exists {
            Plan::Use {
                path,
                warning: found.stale,
            }
        } else {
            Plan::Missing { path }
        };
    }
    let path = found.beside;
    match (found.exists, found.stale, found.sources) {
        (true, None, _) => Plan::Use {
            path,
            warning: None,
        },
        (false, _, true) => Plan::Build {
            why: format!("{} is missing", path.display()),
            path,
        },
        (true, Some(_), true) => Plan::Build {
            why: format!("{} is older than the controller sources", path.display()),
            path,
        },
        (true, warning @ Some(_), false) => Plan::Use { path, warning },
        (false, _, false) => Plan::Missing { path },
    }
}

/// The `cargo build` arguments that put `baton` at `path`: the profile and the target
/// directory are those of `path`'s directory (`target/release/baton`: `--release`). The
/// sandbox's own package is selected too: features are then resolved as for the sandbox's
/// build, whose compiled dependencies are reused, and only `baton` itself is compiled
/// (`-p baton` alone resolves other features and compiles much of the tree again).
pub fn build_args(path: &Path) -> Vec<String> {
    let mut args: Vec<String> = ["build", "-p", "baton-e2e", "-p", "baton", "--bin", "baton"]
        .map(String::from)
        .into();
    let profile_dir = path.parent();
    match profile_dir
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
    {
        Some("debug") | None => {}
        Some("release") => args.push("--release".into()),
        Some(other) => args.extend(["--profile".to_string(), other.to_string()]),
    }
    if let Some(target) = profile_dir.and_then(Path::parent) {
        args.extend(["--target-dir".to_string(), target.display().to_string()]);
    }
    args
}

/// The cargo to build with: `CARGO` (set by `cargo run`), else `cargo` on the PATH.
fn cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("cargo"))
}

/// The `baton` binary, built first when needed; or an error that says how to get one.
pub async fn ensure() -> anyhow::Result<PathBuf> {
    let from_env = std::env::var_os("BATON_BIN").map(PathBuf::from);
    let beside = beside_executable();
    let chosen = from_env.clone().unwrap_or_else(|| beside.clone());
    let exists = chosen.is_file();
    let found = Found {
        stale: if exists {
            staleness_warning(&chosen)
        } else {
            None
        },
        from_env,
        beside,
        exists,
        sources: workspace_root().join("controller/Cargo.toml").is_file(),
    };
    match plan(found) {
        Plan::Use { path, warning } => {
            if let Some(warning) = warning {
                eprintln!("baton-sandbox: {warning}");
            }
            Ok(path)
        }
        Plan::Missing { path } => present(path),
        Plan::Build { path, why } => build(path, &why).await,
    }
}

/// Runs [`build_args`] with cargo in this checkout, its progress on the terminal.
async fn build(path: PathBuf, why: &str) -> anyhow::Result<PathBuf> {
    let cargo = cargo();
    let args = build_args(&path);
    eprintln!(
        "baton-sandbox: {why}; building it: {} {}",
        cargo.display(),
        args.join(" ")
    );
    let mut command = tokio::process::Command::new(&cargo);
    command
        .args(&args)
        .current_dir(workspace_root())
        .stdin(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            command.env_remove(name);
        }
    }
    let status = command.status().await;
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            eprintln!("baton-sandbox: cannot run {}: {e}", cargo.display());
            return present(path);
        }
    };
    anyhow::ensure!(
        status.success(),
        "`cargo {}` failed ({status}); fix the build, or set BATON_BIN to a baton binary",
        args.join(" ")
    );
    present(path).context("cargo built baton somewhere else; set BATON_BIN to it")
}

/// Whether `cargo run` sets the environment variable `name` for the program it runs (the
/// sandbox) rather than the user. The nested cargo must not see these: build scripts that
/// watch them (ring's watches `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME`, ...) would run again,
/// and everything above them (rustls, kube, ...) would be compiled a second time.
pub fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "OUT_DIR"
        )
}

fn present(path: PathBuf) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        path.is_file(),
        "the baton binary is missing at {}: build it first with `{BUILD_HINT}` \
         (with --release too if the sandbox runs from a release build), or set BATON_BIN",
        path.display()
    );
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(exists: bool, stale: bool, sources: bool) -> Found {
        Found {
            from_env: None,
            beside: PathBuf::from("/w/target/release/baton"),
            exists,
            stale: stale.then(|| "warning: old".to_string()),
            sources,
        }
    }

    #[test]
    fn a_fresh_binary_is_used_as_it_is() {
        for sources in [true, false] {
            assert_eq!(
                plan(found(true, false, sources)),
                Plan::Use {
                    path: "/w/target/release/baton".into(),
                    warning: None
                }
            );
        }
    }

    #[test]
    fn a_missing_or_stale_binary_is_built_when_the_sources_are_here() {
        let Plan::Build { why, .. } = plan(found(false, false, true)) else {
            panic!("build a missing binary")
        };
        assert!(why.ends_with("is missing"), "{why}");
        let Plan::Build { why, path } = plan(found(true, true, true)) else {
            panic!("build a stale binary")
        };
        assert!(why.contains("older than the controller sources"), "{why}");
        assert_eq!(path, PathBuf::from("/w/target/release/baton"));
    }

    #[test]
    fn without_the_sources_a_stale_binary_is_used_with_a_warning_and_a_missing_one_is_an_error() {
        assert_eq!(
            plan(found(true, true, false)),
            Plan::Use {
                path: "/w/target/release/baton".into(),
                warning: Some("warning: old".into())
            }
        );
        assert_eq!(
            plan(found(false, false, false)),
            Plan::Missing {
                path: "/w/target/release/baton".into()
            }
        );
    }

    #[test]
    fn baton_bin_wins_and_is_never_built() {
        let from_env = |exists, stale| Found {
            from_env: Some("/opt/baton".into()),
            ..found(exists, stale, true)
        };
        assert_eq!(
            plan(from_env(true, true)),
            Plan::Use {
                path: "/opt/baton".into(),
                warning: Some("warning: old".into())
            }
        );
        assert_eq!(
            plan(from_env(false, false)),
            Plan::Missing {
                path: "/opt/baton".into()
            }
        );
    }

    #[test]
    fn the_build_uses_the_sandboxs_profile_and_target_directory() {
        assert_eq!(
            build_args(Path::new("/w/target/release/baton")),
            [
                "build",
                "-p",
                "baton-e2e",
                "-p",
                "baton",
                "--bin",
                "baton",
                "--release",
                "--target-dir",
                "/w/target"
            ]
        );
        assert_eq!(
            build_args(Path::new("/w/target/debug/baton")),
            [
                "build",
                "-p",
                "baton-e2e",
                "-p",
                "baton",
                "--bin",
                "baton",
                "--target-dir",
                "/w/target"
            ]
        );
        assert_eq!(
            build_args(Path::new("/t/image/baton")),
            [
                "build",
                "-p",
                "baton-e2e",
                "-p",
                "baton",
                "--bin",
                "baton",
                "--profile",
                "image",
                "--target-dir",
                "/t"
            ]
        );
    }

    #[test]
    fn what_cargo_run_sets_for_the_sandbox_is_kept_from_the_nested_build() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_NAME",
            "OUT_DIR",
        ] {
            assert!(set_by_cargo_run(name), "{name}");
        }
        // The user's own settings reach it.
        for name in [
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO",
            "PATH",
        ] {
            assert!(!set_by_cargo_run(name), "{name}");
        }
    }

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let message = format!(
            "{:#}",
            present(dir.path().join("baton")).expect_err("no binary there")
        );
        assert!(message.contains(BUILD_HINT), "{message}");
    }
}
