//! The one place where Kubernetes timestamps (`jiff`, via k8s-openapi) meet the `chrono`
//! timestamps Baton's decision code uses.
//!
//! Kubernetes stores `metav1.Time` with whole-second precision; converting into a `Time`
//! truncates to the second, so a value we compute equals the value the API server returns.

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Converts a Kubernetes timestamp into a chrono one.
pub fn to_chrono(time: &Time) -> DateTime<Utc> {
    let ts = time.0;
    DateTime::from_timestamp(ts.as_second(), ts.subsec_nanosecond().max(0) as u32)
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Converts a chrono timestamp into a Kubernetes one, truncated to the second. Instants outside
/// the range Kubernetes can represent are clamped to its ends.
pub fn to_kube(time: DateTime<Utc>) -> Time {
    let ts = jiff::Timestamp::from_second(time.timestamp()).unwrap_or(if time.timestamp() < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    Time(ts)
}

/// Truncates to whole seconds, as the API server will.
pub fn truncate_to_second(time: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(time.timestamp(), 0).unwrap_or(time)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn round_trip_keeps_whole_seconds() {
        let t = Utc
            .with_ymd_and_hms(2026, 11, 22, 7, 30, 15)
            .single()
            .expect("valid date");
        assert_eq!(to_chrono(&to_kube(t)), t);
    }

    #[test]
    fn sub_second_precision_is_dropped_like_the_api_server_does() {
        let t = Utc
            .timestamp_opt(1_700_000_000, 999_000_000)
            .single()
            .expect("valid");
        assert_eq!(to_chrono(&to_kube(t)).timestamp_subsec_nanos(), 0);
        assert_eq!(to_chrono(&to_kube(t)).timestamp(), 1_700_000_000);
        assert_eq!(truncate_to_second(t), to_chrono(&to_kube(t)));
    }

    #[test]
    fn out_of_range_instants_are_clamped_not_panicking() {
        assert_eq!(to_kube(DateTime::<Utc>::MAX_UTC).0, jiff::Timestamp::MAX);
        assert_eq!(to_kube(DateTime::<Utc>::MIN_UTC).0, jiff::Timestamp::MIN);
    }
}
