//! The victim-side policy of a priority class (DESIGN.md §2): preemption toleration (the
//! scheduler-plugins annotations) and the KEP-4664 budget guarantee, read from annotations.

use std::collections::BTreeMap;
use std::num::IntErrorKind;

use chrono::{DateTime, TimeDelta, Utc};

// The annotation names are the API's (`baton_crds::constants::toleration`), re-exported here
// so the module reads on its own.
pub use baton_crds::constants::toleration::{
    ALLOW_DISRUPTION_BY_PRIORITY, MINIMUM_PREEMPTABLE_PRIORITY, PREFIX as ANNOTATION_PREFIX,
    TOLERATION_SECONDS,
};
/// KEP-4664 caps the guarantee at the `system-cluster-critical` value so that system
/// components can always break a budget to get scheduled.
pub const MAX_ALLOW_DISRUPTION_BY_PRIORITY: i32 = 2_000_000_000;

/// The victim-side policy read from the candidate's priority class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VictimPolicy {
    /// Preemptors with a priority below this are tolerated (while the period lasts).
    pub minimum_preemptable_priority: i32,
    /// How long the toleration lasts from admission; negative = forever, 0 = not at all.
    pub toleration_seconds: i64,
    /// KEP-4664: preemptors below this may never break a budget to evict this victim.
    pub allow_disruption_by_priority_at_least: Option<i32>,
}

impl VictimPolicy {
    /// The policy of a class with no annotations.
    pub fn default_for(class_value: i32) -> Self {
        Self {
            minimum_preemptable_priority: class_value.saturating_add(1),
            toleration_seconds: 0,
            allow_disruption_by_priority_at_least: None,
        }
    }

    /// Whether a victim admitted at `admitted_at` tolerates a preemptor of this priority at
    /// `now`. The period is half-open (`now < admitted_at + seconds`), so the default of 0
    /// seconds never tolerates; the scheduler-plugins original is closed at the end, which
    /// only differs at the exact instant and would make the default tolerate at admission.
    pub fn tolerates(
        &self,
        preemptor_priority: i32,
        admitted_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> bool {
        if preemptor_priority >= self.minimum_preemptable_priority {
            return false;
        }
        if self.toleration_seconds < 0 {
            return true;
        }
        // A period too long to represent ends after any `now` we can be given.
        match TimeDelta::try_seconds(self.toleration_seconds)
            .and_then(|period| admitted_at.checked_add_signed(period))
        {
            Some(end) => now < end,
            None => true,
        }
    }

    /// Whether this preemptor is below the class's KEP-4664 threshold, so that it may evict
    /// the victim only without breaking one of the victim's budgets.
    pub fn guards_budgets_against(&self, preemptor_priority: i32) -> bool {
        self.allow_disruption_by_priority_at_least
            .is_some_and(|threshold| preemptor_priority < threshold)
    }
}

/// A malformed policy annotation: ignored, reported by the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnnotationProblem {
    pub annotation: String,
    pub message: String,
}

/// Reads the victim-side policy from a class's value and annotations. Malformed annotations
/// fall back to their defaults and are returned as problems, as are unknown keys under
/// [`ANNOTATION_PREFIX`] (most likely typos that would otherwise be silently ignored).
pub fn policy_from_annotations(
    class_value: i32,
    annotations: &BTreeMap<String, String>,
) -> (VictimPolicy, Vec<AnnotationProblem>) {
    let mut policy = VictimPolicy::default_for(class_value);
    let mut problems = Vec::new();
    for (key, value) in annotations.range(ANNOTATION_PREFIX.to_string()..) {
        if !key.starts_with(ANNOTATION_PREFIX) {
            // Keys are sorted, so nothing after the prefix range can match it.
            break;
        }
        let parsed = match key.as_str() {
            MINIMUM_PREEMPTABLE_PRIORITY => parse_integer::<i32>(value, "a 32-bit priority")
                .map(|v| policy.minimum_preemptable_priority = v)
                .map_err(|why| {
                    format!(
                        "{why}; using the default {}",
                        policy.minimum_preemptable_priority
                    )
                }),
            TOLERATION_SECONDS => parse_integer::<i64>(value, "a 64-bit number of seconds")
                .map(|v| policy.toleration_seconds = v)
                .map_err(|why| format!("{why}; using the default 0 (no toleration)")),
            ALLOW_DISRUPTION_BY_PRIORITY => parse_integer::<i32>(value, "a 32-bit priority")
                .and_then(|v| {
                    if v > MAX_ALLOW_DISRUPTION_BY_PRIORITY {
                        Err(format!(
                            "{v} exceeds the maximum {MAX_ALLOW_DISRUPTION_BY_PRIORITY} \
                             (system-cluster-critical)"
                        ))
                    } else {
                        Ok(v)
                    }
                })
                .map(|v| policy.allow_disruption_by_priority_at_least = Some(v))
                .map_err(|why| format!("{why}; no budget guarantee")),
            _ => Err("unknown preemption-toleration annotation; ignored".to_string()),
        };
        if let Err(message) = parsed {
            problems.push(AnnotationProblem {
                annotation: key.clone(),
                message: format!("{key}={value:?}: {message}"),
            });
        }
    }
    (policy, problems)
}

/// Parses a decimal integer, explaining a failure in words an administrator can act on.
fn parse_integer<T>(value: &str, what: &str) -> Result<T, String>
where
    T: std::str::FromStr<Err = std::num::ParseIntError>,
{
    value.parse::<T>().map_err(|err| match err.kind() {
        IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => {
            format!("out of range for {what}")
        }
        _ => "not an integer".to_string(),
    })
}
