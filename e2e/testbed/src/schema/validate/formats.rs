//! The OpenAPI `format`s kube-apiserver checks in custom resources (the others are ignored).

use std::sync::LazyLock;

use regex::Regex;

/// Whether `text` is valid for the string format `format`; formats kube-apiserver does not
/// check count as valid.
pub(crate) fn string_ok(format: &str, text: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time_ok(text),
        "date" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok(),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => uuid::Uuid::parse_str(text).is_ok_and(|u| {
            let version = u.get_version_num();
            match format {
                "uuid3" => version == 3,
                "uuid4" => version == 4,
                "uuid5" => version == 5,
                _ => true,
            }
        }),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .is_ok()
        }
        "duration" => go_duration(text).is_some(),
        _ => true,
    }
}

/// RFC 3339 date-times as strfmt accepts them (also without the `T`, with a lower-case `t`
/// or `z`).
fn date_time_ok(text: &str) -> bool {
    static DATE_TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$").ok()
    });
    DATE_TIME.as_ref().is_some_and(|r| r.is_match(text))
        && chrono::DateTime::parse_from_rfc3339(&text.replacen(' ', "T", 1)).is_ok()
}

/// A Go duration (`1h30m`, `-1.5s`, `0`) in seconds.
pub(crate) fn go_duration(text: &str) -> Option<f64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    Some(if negative { -total } else { total })
}

/// Whether a number fits the numeric format (`int32`, `int64`, `float`, `double`).
pub(crate) fn number_ok(format: &str, value: f64) -> bool {
    match format {
        "int32" => value >= f64::from(i32::MIN) && value <= f64::from(i32::MAX),
        "uint32" => value >= 0.0 && value <= f64::from(u32::MAX),
        "int64" => value >= i64::MIN as f64 && value <= i64::MAX as f64,
        "float" => value.abs() <= f64::from(f32::MAX),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_times_need_a_time_and_a_zone() {
        assert!(string_ok("date-time", "2026-01-01T10:00:00+02:00"));
        assert!(string_ok("date-time", "2026-01-01T10:00:00.5Z"));
        assert!(!string_ok("date-time", "2026-01-01"));
        assert!(!string_ok("date-time", "yesterday"));
    }

    #[test]
    fn int32_bounds() {
        assert!(number_ok("int32", 2_147_483_647.0));
        assert!(!number_ok("int32", 3_000_000_000.0));
        assert!(number_ok("int64", 3_000_000_000.0));
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h30m"), Some(5400.0));
        assert_eq!(go_duration("-1.5s"), Some(-1.5));
        assert_eq!(go_duration("5"), None);
    }
}
