//! Whether a worker whose watch failed is really disconnected.
//!
//! A watch error alone does not say: a single 500 or 429, or a watch the server ended, is
//! retried by the watcher (with its backoff) while the caches stay valid. So after each watch
//! error the shell probes the API server (`GET /version`) and this module decides:
//! - the caches were never complete (the first list failed): the attempt failed, and the
//!   reconnect schedule retries it (no caches to keep, and a bad setup, such as missing RBAC,
//!   is reported at once);
//! - the server cannot be reached (transport error or no answer): disconnected;
//! - it answers (even with an error status) but the watch has failed [`PERSISTENT_ERRORS`]
//!   times in a row over at least [`WATCH_ERROR_GRACE`]: disconnected, as the caches can no
//!   longer be trusted;
//! - otherwise the connection and its caches are kept.
//!
//! The watcher yields nothing when a retried watch succeeds without news, so "in a row" is
//! judged by time: errors more than [`QUIET_GAP`] apart are not in a row. Requiring several
//! errors as well as a span keeps two unrelated blips, a minute apart, from adding up.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// How long watch errors may persist, with the API server answering, before the worker
/// counts as disconnected.
pub const WATCH_ERROR_GRACE: Duration = Duration::from_secs(30);
/// How many errors in a row that takes at least. With the watcher's backoff (0.8 s doubling,
/// each delay up to twice as long by jitter) five errors take 12 to 25 s.
pub const PERSISTENT_ERRORS: u32 = 5;
/// Errors further apart than this are not in a row. Longer than the watcher's largest wait
/// (30 s, client-go's, up to twice that by jitter) plus a probe, so a persistent failure is
/// one run.
pub const QUIET_GAP: Duration = Duration::from_secs(90);

/// What the probe after a watch error found.
#[derive(Clone, Debug, PartialEq)]
pub enum Probe {
    /// The API server answered (with success or an error status).
    Answered,
    /// No answer: connection refused or reset, TLS failure, or a timeout.
    Unreachable(String),
}

impl Probe {
    /// Reads a probe's result: any HTTP answer, even an error status, shows the server is up.
    pub fn from_result<T>(result: &Result<T, kube::Error>) -> Probe {
        match result {
            Ok(_) | Err(kube::Error::Api(_)) | Err(kube::Error::SerdeError(_)) => Probe::Answered,
            Err(e) => Probe::Unreachable(with_causes(e)),
        }
    }
}

/// `error` and its causes, so a message says more than "client error (Connect)".
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let more = e.to_string();
        // Some errors repeat their source in their own message.
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = e.source();
    }
    text
}

/// The decision after one watch error.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Keep the connection and its caches; the watcher retries.
    Keep,
    /// The worker is disconnected, for this reason.
    Disconnect(String),
}

/// The current run of watch errors of one connection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WatchHealth {
    /// Whether the caches were complete once (the worker was reported Active).
    synced: bool,
    run: Option<Run>,
}

/// Watch errors in a row.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Run {
    first: DateTime<Utc>,
    latest: DateTime<Utc>,
    errors: u32,
}

impl WatchHealth {
    /// The caches are complete: from now on, errors are weighed before disconnecting.
    pub fn synced(&mut self) {
        self.synced = true;
    }

    /// The watch yielded `event`: if it came from the server, any run of errors is over.
    /// `Init` does not: the watcher yields it before it sends the list request of a re-list
    /// (after a 410 Gone), so a re-list failing again and again would end every run.
    pub fn delivered<K>(&mut self, event: &kube::runtime::watcher::Event<K>) {
        if !matches!(event, kube::runtime::watcher::Event::Init) {
            self.run = None;
        }
    }

    /// A watch failed with `error` at `now`, and the probe that followed found `probe`.
    pub fn failed(&mut self, now: DateTime<Utc>, error: &str, probe: Probe) -> Verdict {
        let run = match self.run {
            Some(run) if elapsed(run.latest, now) <= QUIET_GAP => Run {
                latest: now,
                errors: run.errors.saturating_add(1),
                ..run
            },
            _ => Run {
                first: now,
                latest: now,
                errors: 1,
            },
        };
        self.run = Some(run);
        let span = elapsed(run.first, now);
        if !self.synced {
            return Verdict::Disconnect(match probe {
                Probe::Unreachable(why) => format!("the API server is unreachable: {why}"),
                Probe::Answered => error.to_string(),
            });
        }
        match probe {
            Probe::Unreachable(why) => {
                Verdict::Disconnect(format!("the API server is unreachable: {why}"))
            }
            Probe::Answered if run.errors >= PERSISTENT_ERRORS && span >= WATCH_ERROR_GRACE => {
                Verdict::Disconnect(format!(
                    "the watch failed {} times in {}s although the API server answers: {error}",
                    run.errors,
                    span.as_secs()
                ))
            }
            Probe::Answered => Verdict::Keep,
        }
    }
}

/// `now - since`, zero when the clock went backwards.
fn elapsed(since: DateTime<Utc>, now: DateTime<Utc>) -> Duration {
    (now - since).to_std().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use kube::runtime::watcher::Event;

    use super::*;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::UNIX_EPOCH + chrono::Duration::seconds(secs)
    }

    /// A connection whose caches are complete.
    fn synced() -> WatchHealth {
        let mut h = WatchHealth::default();
        h.synced();
        h
    }

    fn unreachable() -> Probe {
        Probe::Unreachable("connection refused".into())
    }

    #[test]
    fn a_single_error_with_the_server_answering_keeps_the_connection() {
        let mut h = synced();
        assert_eq!(h.failed(at(0), "500", Probe::Answered), Verdict::Keep);
    }

    #[test]
    fn an_unreachable_server_disconnects_at_once() {
        let mut h = synced();
        let verdict = h.failed(at(0), "watch ended", unreachable());
        assert_eq!(
            verdict,
            Verdict::Disconnect("the API server is unreachable: connection refused".into())
        );
    }

    #[test]
    fn errors_persisting_past_the_grace_disconnect() {
        let mut h = synced();
        // The watcher's backoff without jitter: 0.8, 1.6, 3.2, 6.4, 12.8 s (rounded).
        for t in [0, 1, 3, 6, 13, 26] {
            assert_eq!(
                h.failed(at(t), "429", Probe::Answered),
                Verdict::Keep,
                "{t}"
            );
        }
        let verdict = h.failed(at(52), "429 too many requests", Probe::Answered);
        assert_eq!(
            verdict,
            Verdict::Disconnect(
                "the watch failed 7 times in 52s although the API server answers: 429 too many requests"
                    .into()
            )
        );
    }

    #[test]
    fn many_errors_in_a_short_span_keep_the_connection() {
        let mut h = synced();
        for t in 0..29 {
            assert_eq!(
                h.failed(at(t), "500", Probe::Answered),
                Verdict::Keep,
                "{t}"
            );
        }
        assert!(matches!(
            h.failed(at(30), "500", Probe::Answered),
            Verdict::Disconnect(_)
        ));
    }

    #[test]
    fn a_few_errors_over_a_long_span_keep_the_connection() {
        let mut h = synced();
        for t in [0, 40, 80, 120] {
            assert_eq!(
                h.failed(at(t), "500", Probe::Answered),
                Verdict::Keep,
                "{t}"
            );
        }
    }

    #[test]
    fn an_event_ends_the_run() {
        let mut h = synced();
        for t in [0, 10, 20, 29] {
            h.failed(at(t), "500", Probe::Answered);
        }
        h.delivered(&Event::Apply(()));
        assert_eq!(h.failed(at(31), "500", Probe::Answered), Verdict::Keep);
    }

    #[test]
    fn a_relist_starting_again_and_again_does_not_end_the_run() {
        // After a 410 Gone the watcher yields `Init`, then the list fails; and again.
        let mut h = synced();
        for t in [0, 10, 20, 29] {
            h.failed(at(t), "500", Probe::Answered);
            h.delivered(&Event::<()>::Init);
        }
        assert!(matches!(
            h.failed(at(31), "500", Probe::Answered),
            Verdict::Disconnect(_)
        ));
    }

    #[test]
    fn errors_further_apart_than_the_quiet_gap_are_not_in_a_row() {
        let gap = QUIET_GAP.as_secs() as i64;
        let mut h = synced();
        for t in [0, 10, 20, 29] {
            h.failed(at(t), "500", Probe::Answered);
        }
        assert_eq!(
            h.failed(at(29 + gap + 1), "500", Probe::Answered),
            Verdict::Keep
        );
        // Within the gap, the run goes on.
        let mut h = synced();
        for t in [0, 10, 20, 29] {
            h.failed(at(t), "500", Probe::Answered);
        }
        assert!(matches!(
            h.failed(at(29 + gap), "500", Probe::Answered),
            Verdict::Disconnect(_)
        ));
    }

    #[test]
    fn a_clock_going_backwards_keeps_the_connection() {
        let mut h = synced();
        h.failed(at(100), "500", Probe::Answered);
        assert_eq!(h.failed(at(10), "500", Probe::Answered), Verdict::Keep);
    }

    #[test]
    fn before_the_caches_are_complete_any_error_fails_the_attempt() {
        let mut h = WatchHealth::default();
        assert_eq!(
            h.failed(at(0), "initial list failed: 403", Probe::Answered),
            Verdict::Disconnect("initial list failed: 403".into())
        );
        let mut h = WatchHealth::default();
        assert_eq!(
            h.failed(at(0), "initial list failed", unreachable()),
            Verdict::Disconnect("the API server is unreachable: connection refused".into())
        );
    }

    #[test]
    fn probe_results_are_read_as_answered_or_unreachable() {
        let ok: Result<(), kube::Error> = Ok(());
        assert_eq!(Probe::from_result(&ok), Probe::Answered);
        let status = kube::core::Status::failure("boom", "InternalError").with_code(500);
        let api: Result<(), kube::Error> = Err(kube::Error::Api(Box::new(status)));
        assert_eq!(Probe::from_result(&api), Probe::Answered);
        let bad_body = serde_json::from_str::<u8>("x").unwrap_err();
        let serde: Result<(), kube::Error> = Err(kube::Error::SerdeError(bad_body));
        assert_eq!(Probe::from_result(&serde), Probe::Answered);
        let refused: Result<(), kube::Error> =
            Err(kube::Error::Service("connection refused".into()));
        assert_eq!(
            Probe::from_result(&refused),
            Probe::Unreachable("ServiceError: connection refused".into())
        );
    }

    #[test]
    fn messages_name_the_causes_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let refused = kube::Error::ReadEvents(io);
        assert_eq!(
            with_causes(&refused),
            "Error reading events stream: refused"
        );
        let status = kube::core::Status::failure("boom", "InternalError").with_code(500);
        let api = kube::Error::Api(Box::new(status));
        assert_eq!(with_causes(&api), api.to_string());
    }
}
