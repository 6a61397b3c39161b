//! Finding the `baton` binary the sandbox runs: `BATON_BIN`, or the one cargo built next to
//! the sandbox (same target directory and profile).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where `baton` should be: `BATON_BIN`, else beside the running executable.
pub fn expected_path() -> PathBuf {
    if let Some(path) = std::env::var_os("BATON_BIN") {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("baton")))
        .unwrap_or_else(|| PathBuf::from("baton"))
}

/// The `baton` binary, or a message that says how to get one.
pub fn locate() -> anyhow::Result<PathBuf> {
    present(expected_path())
}

fn present(path: PathBuf) -> anyhow::Result<PathBuf> {
    anyhow::ensure!(
        path.is_file(),
        "the baton binary is missing at {}: build it first with `cargo build -p baton` \
         (with --release too if the sandbox runs from a release build), or set BATON_BIN",
        path.display()
    );
    Ok(path)
}

/// A warning when `binary` is older than the controller sources of this checkout: `cargo
/// run -p baton-e2e` does not rebuild it, and an old controller makes a confusing demo.
/// Nothing when the sources are not around (an installed sandbox).
pub fn staleness_warning(binary: &Path) -> Option<String> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let newest = [root.join("controller/src"), root.join("crds/src")]
        .iter()
        .filter_map(|dir| newest_in(dir))
        .max()?;
    (newest > built).then(|| {
        format!(
            "warning: {} is older than the controller sources; run `cargo build -p baton` to use the current code",
            binary.display()
        )
    })
}

fn newest_in(dir: &Path) -> Option<SystemTime> {
    let mut latest = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest_in(&path)
        } else {
            entry.metadata().ok().and_then(|m| m.modified().ok())
        };
        latest = latest.max(time);
    }
    latest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let message = format!(
            "{:#}",
            present(dir.path().join("baton")).expect_err("no binary there")
        );
        assert!(message.contains("cargo build -p baton"), "{message}");
    }

    #[test]
    fn a_fresh_binary_gets_no_warning() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("baton");
        std::fs::write(&binary, "").unwrap();
        let future = SystemTime::now() + std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&binary)
            .unwrap()
            .set_modified(future)
            .unwrap();
        assert_eq!(staleness_warning(&binary), None);
    }

    #[test]
    fn an_old_binary_gets_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("baton");
        std::fs::write(&binary, "").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&binary)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH)
            .unwrap();
        let warning = staleness_warning(&binary).expect("sources are newer than 1970");
        assert!(warning.contains("cargo build -p baton"), "{warning}");
    }
}
