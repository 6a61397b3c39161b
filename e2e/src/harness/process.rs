//! The `baton` binary as a child process: where it is, whether it is current, and the one
//! wrapper every suite, the chart tests and the sandbox run it through.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::Context;

/// The `baton` binary built in the same target directory and profile as the running
/// executable (a test in `target/<profile>/deps/`, or a binary in `target/<profile>/`);
/// `BATON_BIN` overrides it.
pub fn baton_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("BATON_BIN") {
        return PathBuf::from(path);
    }
    beside_executable()
}

/// `baton` in the running executable's profile directory: beside a binary, or one level up
/// from a test in `deps/`.
pub fn beside_executable() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let Some(dir) = exe.parent() else {
        return PathBuf::from("baton");
    };
    let dir = if dir.file_name() == Some(OsStr::new("deps")) {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    dir.join("baton")
}

/// The workspace this crate was built from.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The command that builds `baton` with the same features as this crate's binaries and
/// tests, so that it reuses their compiled dependencies (`cargo build -p baton` alone resolves
/// features for `baton` only and compiles much of the tree again).
pub const BUILD_HINT: &str = "cargo build -p baton-e2e -p baton --bin baton";

/// Fails when the binary is missing or older than the sources it is built from: `cargo test
/// -p baton-e2e` alone does not rebuild it (`cargo test --workspace`, the README's command,
/// does).
pub fn ensure_fresh(binary: &Path) -> anyhow::Result<()> {
    std::fs::metadata(binary)
        .with_context(|| format!("{} not found: run `{BUILD_HINT}`", binary.display()))?;
    // The sandbox only warns about a stale binary; a test must not run one.
    if let Some(stale) = staleness_warning(binary) {
        anyhow::bail!("{stale} (or run `cargo test --workspace`)");
    }
    Ok(())
}

/// A warning when `binary` is older than the controller sources of this checkout. Nothing
/// when the sources are not around (an installed sandbox).
pub fn staleness_warning(binary: &Path) -> Option<String> {
    let built = std::fs::metadata(binary).and_then(|m| m.modified()).ok()?;
    let root = workspace_root();
    let newest = [root.join("controller/src"), root.join("crds/src")]
        .iter()
        .filter_map(|dir| newest_in(dir))
        .max()?;
    (newest > built).then(|| {
        format!(
            "warning: {} is older than the controller sources; run `{BUILD_HINT}` to use the current code",
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

/// How to start a [`BatonProcess`].
pub struct Launch<'a> {
    /// The binary ([`baton_binary`] for the suites).
    pub binary: &'a Path,
    /// What the process is called in messages: `manager`, `worker-1`, ...
    pub name: &'a str,
    /// Where its stderr goes.
    pub log: PathBuf,
    /// `RUST_LOG` for it.
    pub rust_log: String,
    /// Its own process group, so that a Ctrl-C in the terminal reaches the parent only.
    pub own_process_group: bool,
}

/// A running `baton manager` or `baton worker`; killed (and reaped) on drop.
pub struct BatonProcess {
    child: Child,
    /// `manager`, `worker-<i>`, ...
    pub name: String,
    pub log: PathBuf,
}

impl BatonProcess {
    /// Runs `launch.binary` with `args`.
    pub fn spawn<I, S>(launch: Launch<'_>, args: I) -> anyhow::Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::os::unix::process::CommandExt;
        let out = std::fs::File::create(&launch.log)
            .with_context(|| format!("cannot create {}", launch.log.display()))?;
        let mut command = Command::new(launch.binary);
        command
            .args(args)
            .env("RUST_LOG", &launch.rust_log)
            // As the image runs them (Dockerfile): freed pages go back at once.
            .env("MIMALLOC_PURGE_DELAY", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out);
        if launch.own_process_group {
            command.process_group(0);
        }
        let child = command.spawn().with_context(|| {
            format!(
                "cannot start {} (build it with `{BUILD_HINT}`)",
                launch.binary.display()
            )
        })?;
        Ok(Self {
            child,
            name: launch.name.to_string(),
            log: launch.log,
        })
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Stops the process at once (as a crash or a pod deletion would).
    pub fn kill(mut self) {
        self.stop();
    }

    /// SIGKILL, then reap it (it cannot ignore SIGKILL, so the wait is short).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks the process to stop (SIGTERM, as the kubelet does) and waits up to `deadline`
    /// for it to exit; returns its exit status.
    pub fn terminate(mut self, deadline: Duration) -> Option<ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = std::time::Instant::now() + deadline;
        while std::time::Instant::now() < end {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What the process logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The process's `/metrics` text (its address is read from its log), or an empty string.
    pub fn metrics(&self) -> String {
        use std::io::{Read, Write};
        let log = self.log_text();
        let Some(addr) = log
            .lines()
            .find(|l| l.contains("serving /metrics"))
            .and_then(|l| l.split("local=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
        else {
            return String::new();
        };
        let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let request = format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        let mut response = String::new();
        if stream.write_all(request.as_bytes()).is_err()
            || stream.read_to_string(&mut response).is_err()
        {
            return String::new();
        }
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_string())
            .unwrap_or_default()
    }

    /// The value of one sample in [`Self::metrics`] (`series` is the name with its labels as
    /// exported, e.g. `baton_worker_cluster_connected{cluster="worker-1"}`); `None` when the
    /// process does not answer or does not export it.
    pub fn metric(&self, series: &str) -> Option<f64> {
        metric_value(&self.metrics(), series)
    }
}

/// The value of `series` in an OpenMetrics text.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| l.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .find_map(|v| v.split_whitespace().next()?.parse().ok())
}

impl Drop for BatonProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `baton <mode> --log-format plain --kubeconfig <kubeconfig> --config <config>
/// <extra>` as `name`, its stderr to `log`, with `RUST_LOG` from `BATON_TEST_LOG` or else
/// `default_log`. `BATON_BIN` overrides the binary (then its freshness is not checked).
pub fn start_baton(
    name: &str,
    mode: &str,
    kubeconfig: &Path,
    config: &Path,
    extra: &[&str],
    log: PathBuf,
    default_log: &str,
) -> anyhow::Result<BatonProcess> {
    let binary = baton_binary();
    if std::env::var_os("BATON_BIN").is_none() {
        ensure_fresh(&binary)?;
    }
    let mut args: Vec<&OsStr> = vec![
        mode.as_ref(),
        "--log-format".as_ref(),
        "plain".as_ref(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    BatonProcess::spawn(
        Launch {
            binary: &binary,
            name,
            log,
            rust_log: std::env::var("BATON_TEST_LOG").unwrap_or_else(|_| default_log.into()),
            own_process_group: false,
        },
        args,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_read_by_its_exact_series() {
        let text = "# TYPE x counter\nbaton_x_total 3\nbaton_x_total_other 9\n\
                    baton_c{cluster=\"worker-1\"} 1\nbaton_c{cluster=\"worker-10\"} 0\n";
        assert_eq!(metric_value(text, "baton_x_total"), Some(3.0));
        assert_eq!(
            metric_value(text, "baton_c{cluster=\"worker-10\"}"),
            Some(0.0)
        );
        assert_eq!(
            metric_value(text, "baton_c{cluster=\"worker-1\"}"),
            Some(1.0)
        );
        assert_eq!(metric_value(text, "baton_y"), None);
    }

    #[test]
    fn the_binary_sits_in_the_profile_directory() {
        let beside = beside_executable();
        assert_eq!(beside.file_name(), Some(OsStr::new("baton")));
        assert_ne!(
            beside.parent().and_then(Path::file_name),
            Some(OsStr::new("deps"))
        );
    }

    #[test]
    fn a_fresh_binary_gets_no_warning() {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("baton");
        std::fs::write(&binary, "").unwrap();
        let future = SystemTime::now() + Duration::from_secs(3600);
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
        assert!(warning.contains(BUILD_HINT), "{warning}");
    }
}
