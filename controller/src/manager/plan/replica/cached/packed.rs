//! Identifiers and times as numbers, for the replica record: the API server writes a uid as
//! a lower-case UUID, a resourceVersion as a decimal number and times as RFC 3339 text, and
//! the record keeps each in a machine word or two. What does not have the usual form is
//! kept as text beside the record ([`Form::Text`]).

use std::borrow::Cow;

use chrono::{DateTime, Utc};

/// How a uid or a resourceVersion is kept. Both are opaque strings to a client; kept as
/// numbers when they have the API server's form, and written back exactly. The form and
/// the number are separate fields of the record, so that its small fields share one word.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Form {
    #[default]
    Absent,
    /// A lower-case UUID, in two words.
    Uuid,
    /// A decimal number without leading zeros, in the low word.
    Number,
    /// Any other text: the caller keeps it.
    Text,
}

/// A uid as its record keeps it: the form, the words, and the text when it has no other.
pub(super) fn pack_uid(text: Option<&str>) -> (Form, [u64; 2], Option<Box<str>>) {
    let Some(text) = text else {
        return (Form::Absent, [0; 2], None);
    };
    if let Some(words) = parse_uuid(text) {
        return (Form::Uuid, words, None);
    }
    let (form, number, kept) = pack_version(Some(text));
    (form, [0, number], kept)
}

/// A resourceVersion as its record keeps it (a number, or the text).
pub(super) fn pack_version(text: Option<&str>) -> (Form, u64, Option<Box<str>>) {
    match text {
        None => (Form::Absent, 0, None),
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n.to_string() == text => (Form::Number, n, None),
            _ => (Form::Text, 0, Some(Box::from(text))),
        },
    }
}

/// The identifier as written; `kept` is the text the packing gave back for it.
pub(super) fn unpack(form: Form, words: [u64; 2], kept: Option<&str>) -> Option<Cow<'_, str>> {
    let [high, low] = words;
    match form {
        Form::Absent => None,
        Form::Uuid => Some(Cow::Owned(format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xffff,
            high & 0xffff,
            low >> 48,
            low & 0xffff_ffff_ffff
        ))),
        Form::Number => Some(Cow::Owned(low.to_string())),
        Form::Text => kept.map(Cow::Borrowed),
    }
}

/// A UUID in its canonical lower-case form (8-4-4-4-12 hex digits), as two numbers.
fn parse_uuid(text: &str) -> Option<[u64; 2]> {
    let bytes = text.as_bytes();
    if bytes.len() != 36 {
        return None;
    }
    let mut digits = 0u128;
    for (i, &b) in bytes.iter().enumerate() {
        let digit = match b {
            b'-' if matches!(i, 8 | 13 | 18 | 23) => continue,
            b'0'..=b'9' if !matches!(i, 8 | 13 | 18 | 23) => b - b'0',
            b'a'..=b'f' if !matches!(i, 8 | 13 | 18 | 23) => b - b'a' + 10,
            _ => return None,
        };
        digits = (digits << 4) | u128::from(digit);
    }
    Some([(digits >> 64) as u64, digits as u64])
}

/// An optional instant as whole seconds since 2020 (half a word where `Option<DateTime>`
/// takes two). The API server stores times floored to the second (`metav1.Time`), so a time
/// read off a replica loses nothing; one the manager sets itself
/// ([`super::CachedReplica::with_open_time`]) is floored the same way, and the ungating rule
/// counts from the latest instant a stored second may stand for
/// (`baton_core::ungate::STORED_TIME_PRECISION`). Instants before 1952 or after 2088 are
/// kept as the nearest one in range: only an order between times of the same cluster, and
/// a timeout from now, are read off them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp(i32);

/// 2020-01-01T00:00:00Z, in seconds since the Unix epoch.
const STAMP_EPOCH: i64 = 1_577_836_800;

impl Stamp {
    pub(super) const NONE: Self = Self(i32::MIN);

    pub(super) fn new(at: Option<DateTime<Utc>>) -> Self {
        match at {
            None => Self::NONE,
            Some(at) => {
                let offset = at.timestamp().saturating_sub(STAMP_EPOCH);
                let clamped = offset.clamp(i64::from(i32::MIN) + 1, i64::from(i32::MAX));
                Self(i32::try_from(clamped).unwrap_or(i32::MAX))
            }
        }
    }

    pub(super) fn get(self) -> Option<DateTime<Utc>> {
        if self == Self::NONE {
            return None;
        }
        DateTime::from_timestamp(STAMP_EPOCH + i64::from(self.0), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_come_back_exactly_as_written() {
        for text in [
            "348f8e46-0c5c-4b77-8aff-aeab87be8b60",
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "6138",
            "0",
            "18446744073709551615",
            "18446744073709551616",
            "007",
            "+7",
            "348F8E46-0C5C-4B77-8AFF-AEAB87BE8B60",
            "348f8e46-0c5c-4b77-8aff-aeab87be8b6",
            "348f8e46x0c5c-4b77-8aff-aeab87be8b60",
            "348f8e460c5c-4b77-8aff-aeab87be8b60-",
            "u-1",
            "",
        ] {
            let (form, words, kept) = pack_uid(Some(text));
            assert_eq!(unpack(form, words, kept.as_deref()).as_deref(), Some(text));
            let (form, number, kept) = pack_version(Some(text));
            let back = unpack(form, [0, number], kept.as_deref());
            assert_eq!(back.as_deref(), Some(text));
        }
        let uuid = "348f8e46-0c5c-4b77-8aff-aeab87be8b60";
        assert!(matches!(pack_uid(Some(uuid)), (Form::Uuid, _, None)));
        assert!(matches!(pack_version(Some(uuid)), (Form::Text, 0, Some(_))));
        assert_eq!(pack_version(Some("6138")), (Form::Number, 6138, None));
        assert_eq!(pack_uid(Some("6138")), (Form::Number, [0, 6138], None));
        assert_eq!(
            pack_uid(Some("007")),
            (Form::Text, [0; 2], Some("007".into()))
        );
        assert_eq!(pack_uid(None), (Form::Absent, [0; 2], None));
        assert_eq!(unpack(Form::Absent, [0; 2], None), None);
    }

    #[test]
    fn stamps_keep_instants_in_range_and_clamp_the_rest() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).expect("time");
        assert_eq!(Stamp::new(Some(at)).get(), Some(at));
        let within = DateTime::from_timestamp(1_700_000_000, 999_999_999).expect("time");
        assert_eq!(
            Stamp::new(Some(within)).get(),
            Some(at),
            "floored, as stored"
        );
        let before = DateTime::from_timestamp(1_000_000_000, 500_000_000).expect("2001");
        let floored = DateTime::from_timestamp(1_000_000_000, 0).expect("2001");
        assert_eq!(Stamp::new(Some(before)).get(), Some(floored));
        assert_eq!(Stamp::new(None).get(), None);
        let epoch = DateTime::from_timestamp(0, 0).expect("time");
        assert_eq!(Stamp::new(Some(epoch)).get(), Some(epoch));
        let far = DateTime::from_timestamp(20_000_000_000, 0).expect("year 2603");
        let kept = Stamp::new(Some(far)).get().expect("some");
        assert!(kept > at && kept < far, "the latest instant in range");
        let early = DateTime::from_timestamp(-20_000_000_000, 0).expect("year 1336");
        let kept = Stamp::new(Some(early)).get().expect("some, not none");
        assert!(
            kept < epoch && kept > early,
            "the earliest instant in range"
        );
    }
}
