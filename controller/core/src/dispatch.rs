//! Dispatchers: which of a workload's clusters get a replica now.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// How a workload's clusters are chosen (the manager's `dispatcher` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dispatcher {
    /// Every eligible cluster at once (the default).
    #[default]
    AllAtOnce,
    /// `clusters_per_round` more clusters every `round_timeout`.
    Incremental {
        clusters_per_round: u32,
        round_timeout: Duration,
    },
}

/// The clusters to dispatch to and, for the incremental dispatcher, when to add more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub clusters: Vec<String>,
    pub next_round_in: Option<Duration>,
}

/// `eligible`: the route's clusters that exist and are connected, in config order.
/// `since`: when the current dispatch began (rounds are counted from it).
pub fn dispatch(
    config: &Dispatcher,
    eligible: &[String],
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Dispatch {
    match *config {
        Dispatcher::AllAtOnce => Dispatch {
            clusters: eligible.to_vec(),
            next_round_in: None,
        },
        Dispatcher::Incremental {
            clusters_per_round,
            round_timeout,
        } => {
            let step = clusters_per_round.max(1) as usize;
            let round_len = round_timeout.max(Duration::from_secs(1));
            let elapsed = now
                .signed_duration_since(since)
                .to_std()
                .unwrap_or(Duration::ZERO);
            let rounds_done = (elapsed.as_secs_f64() / round_len.as_secs_f64()).floor() as usize;
            let count = step.saturating_mul(rounds_done + 1).min(eligible.len());
            let next_round_in = (count < eligible.len()).then(|| {
                let next_at = round_len.mul_f64((rounds_done + 1) as f64);
                next_at.saturating_sub(elapsed)
            });
            Dispatch {
                clusters: eligible[..count].to_vec(),
                next_round_in,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + s, 0)
            .single()
            .expect("valid")
    }

    fn clusters(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("w{i}")).collect()
    }

    #[test]
    fn all_at_once_takes_every_eligible_cluster() {
        let d = dispatch(&Dispatcher::default(), &clusters(5), t(0), t(0));
        assert_eq!(
            d,
            Dispatch {
                clusters: clusters(5),
                next_round_in: None
            }
        );
    }

    #[test]
    fn incremental_adds_a_step_per_round() {
        let config = Dispatcher::Incremental {
            clusters_per_round: 2,
            round_timeout: Duration::from_secs(60),
        };
        let d = dispatch(&config, &clusters(5), t(0), t(10));
        assert_eq!(d.clusters, clusters(2));
        assert_eq!(d.next_round_in, Some(Duration::from_secs(50)));
        let d = dispatch(&config, &clusters(5), t(0), t(60));
        assert_eq!(d.clusters, clusters(4));
        let d = dispatch(&config, &clusters(5), t(0), t(125));
        assert_eq!(
            d,
            Dispatch {
                clusters: clusters(5),
                next_round_in: None
            }
        );
        // A clock behind `since` stays in the first round.
        assert_eq!(
            dispatch(&config, &clusters(5), t(100), t(0)).clusters,
            clusters(2)
        );
    }
}
