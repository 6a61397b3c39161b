//! Conditions with Kubernetes semantics: `lastTransitionTime` changes only when the status
//! changes, so it records when the current status began (the KEP-8303 FCFS timestamp relies
//! on this).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use crate::time::{to_chrono, to_kube};

/// The longest message the Condition schema accepts.
pub const MAX_MESSAGE_BYTES: usize = 32768;

/// True, False or Unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }

    pub fn from_bool(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

/// A condition to set: everything but the transition time, which `set_condition` manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewCondition {
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
    pub observed_generation: Option<i64>,
}

impl NewCondition {
    pub fn new(
        type_: impl Into<String>,
        status: ConditionStatus,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_: type_.into(),
            status,
            reason: reason.into(),
            message: message.into(),
            observed_generation: None,
        }
    }

    pub fn observed_generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }
}

/// The condition of this type, if any.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of this type is present with status True.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

/// When the condition of this type last changed status.
pub fn condition_transition_time(conditions: &[Condition], type_: &str) -> Option<DateTime<Utc>> {
    find_condition(conditions, type_).map(|c| to_chrono(&c.last_transition_time))
}

/// Sets a condition. The transition time becomes `now` only when the condition is new or its
/// status changes; reason, message and observed generation are always updated. Returns whether
/// anything changed (so callers can skip a no-op write).
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    new: NewCondition,
    now: DateTime<Utc>,
) -> bool {
    let message = truncate_message(new.message);
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            let mut changed = false;
            if existing.status != new.status.as_str() {
                existing.status = new.status.as_str().to_string();
                existing.last_transition_time = to_kube(now);
                changed = true;
            }
            if existing.reason != new.reason {
                existing.reason = new.reason;
                changed = true;
            }
            if existing.message != message {
                existing.message = message;
                changed = true;
            }
            if existing.observed_generation != new.observed_generation {
                existing.observed_generation = new.observed_generation;
                changed = true;
            }
            changed
        }
        None => {
            conditions.push(Condition {
                type_: new.type_,
                status: new.status.as_str().to_string(),
                reason: new.reason,
                message,
                observed_generation: new.observed_generation,
                last_transition_time: to_kube(now),
            });
            true
        }
    }
}

/// Removes the condition of this type. Returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

fn truncate_message(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .expect("valid date")
    }

    fn blocked(status: ConditionStatus, message: &str) -> NewCondition {
        NewCondition::new(
            "QuotaReservationBlocked",
            status,
            "PreemptionGated",
            message,
        )
    }

    #[test]
    fn new_condition_gets_now_as_transition_time() {
        let mut conds = Vec::new();
        assert!(set_condition(
            &mut conds,
            blocked(ConditionStatus::True, "m"),
            t0()
        ));
        assert_eq!(conds.len(), 1);
        assert_eq!(
            condition_transition_time(&conds, "QuotaReservationBlocked"),
            Some(t0())
        );
        assert!(is_condition_true(&conds, "QuotaReservationBlocked"));
    }

    #[test]
    fn same_status_keeps_transition_time_but_updates_message() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            blocked(ConditionStatus::True, "needs 2 victims"),
            t0(),
        );
        let later = t0() + Duration::seconds(90);
        assert!(set_condition(
            &mut conds,
            blocked(ConditionStatus::True, "needs 3 victims"),
            later
        ));
        assert_eq!(
            condition_transition_time(&conds, "QuotaReservationBlocked"),
            Some(t0())
        );
        assert_eq!(conds[0].message, "needs 3 victims");
    }

    #[test]
    fn identical_condition_is_a_no_op() {
        let mut conds = Vec::new();
        set_condition(&mut conds, blocked(ConditionStatus::True, "m"), t0());
        let before = conds.clone();
        assert!(!set_condition(
            &mut conds,
            blocked(ConditionStatus::True, "m"),
            t0() + Duration::hours(1)
        ));
        assert_eq!(conds, before);
    }

    #[test]
    fn status_change_moves_transition_time() {
        let mut conds = Vec::new();
        set_condition(&mut conds, blocked(ConditionStatus::True, "m"), t0());
        let later = t0() + Duration::seconds(5);
        assert!(set_condition(
            &mut conds,
            blocked(ConditionStatus::False, "m"),
            later
        ));
        assert_eq!(
            condition_transition_time(&conds, "QuotaReservationBlocked"),
            Some(later)
        );
        assert!(!is_condition_true(&conds, "QuotaReservationBlocked"));
    }

    #[test]
    fn observed_generation_change_is_a_change() {
        let mut conds = Vec::new();
        set_condition(&mut conds, blocked(ConditionStatus::True, "m"), t0());
        assert!(set_condition(
            &mut conds,
            blocked(ConditionStatus::True, "m").observed_generation(Some(2)),
            t0()
        ));
        assert_eq!(conds[0].observed_generation, Some(2));
    }

    #[test]
    fn other_types_are_untouched_and_remove_works() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            NewCondition::new("Admitted", ConditionStatus::False, "Pending", ""),
            t0(),
        );
        set_condition(&mut conds, blocked(ConditionStatus::True, "m"), t0());
        assert_eq!(conds.len(), 2);
        assert!(remove_condition(&mut conds, "QuotaReservationBlocked"));
        assert!(!remove_condition(&mut conds, "QuotaReservationBlocked"));
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].type_, "Admitted");
        assert!(find_condition(&conds, "QuotaReservationBlocked").is_none());
    }

    #[test]
    fn overlong_message_is_truncated_on_a_char_boundary() {
        let mut conds = Vec::new();
        let long = "é".repeat(MAX_MESSAGE_BYTES); // 2 bytes each
        set_condition(&mut conds, blocked(ConditionStatus::True, &long), t0());
        assert!(conds[0].message.len() <= MAX_MESSAGE_BYTES);
        assert!(conds[0].message.chars().all(|c| c == 'é'));
    }
}
