//! Exact resource quantities.
//!
//! Amounts are integers in thousandths of the base unit (milli-units), held in `i128` so that
//! sums over many workloads of exabyte-scale quotas cannot overflow. Parsing follows the
//! Kubernetes quantity grammar exactly; fractions finer than a milli-unit round up, as the
//! API server does (a request is never under-counted).
//!
//! The published quantity crates were considered: `kube_quantity` 0.9 truncates the fraction
//! before applying a suffix (`1.5Gi` becomes `1Gi`) and cannot express milli-units as
//! integers, which a quota scheduler cannot accept.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A quantity that does not follow the Kubernetes grammar, or is too large.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {value:?}: {reason}")]
pub struct QuantityError {
    pub value: String,
    pub reason: &'static str,
}

/// Parses a quantity into milli-units (`"1.5"` → 1500, `"100m"` → 100, `"1Ki"` → 1_024_000).
pub fn parse_milli(quantity: &Quantity) -> Result<i128, QuantityError> {
    parse_milli_str(&quantity.0)
}

/// Parses quantity text into milli-units.
pub fn parse_milli_str(text: &str) -> Result<i128, QuantityError> {
    let err = |reason| QuantityError {
        value: text.to_string(),
        reason,
    };
    let s = text.trim();
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(number_end);
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(err("no digits"));
    }
    if frac_part.contains('.') {
        return Err(err("more than one decimal point"));
    }
    // value = digits × 10^-(frac digits) × multiplier × 1000 (milli)
    let digits_text = format!("{int_part}{frac_part}");
    let digits: i128 = digits_text
        .trim_start_matches('0')
        .chars()
        .try_fold(0i128, |acc, c| {
            acc.checked_mul(10)?
                .checked_add(i128::from(c.to_digit(10)? as u8))
        })
        .ok_or_else(|| err("number too large"))?;
    let (numerator, decimal_exponent) = match suffix {
        "" => (1i128, 0i32),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().map_err(|_| err("bad exponent"))?;
            if !(-30..=30).contains(&e) {
                return Err(err("exponent out of range"));
            }
            (1, e)
        }
        _ => return Err(err("unknown suffix")),
    };
    // Scale to milli-units: exponent + 3 (milli) - fraction digits.
    let exponent = decimal_exponent + 3 - frac_part.len() as i32;
    let scaled = digits
        .checked_mul(numerator)
        .ok_or_else(|| err("number too large"))?;
    let milli = if exponent >= 0 {
        10i128
            .checked_pow(exponent as u32)
            .and_then(|p| scaled.checked_mul(p))
            .ok_or_else(|| err("number too large"))?
    } else {
        let divisor = 10i128
            .checked_pow((-exponent) as u32)
            .ok_or_else(|| err("too many fraction digits"))?;
        // Round up: a request is never under-counted.
        (scaled + divisor - 1) / divisor
    };
    Ok(if negative { -milli } else { milli })
}

/// Formats milli-units as a canonical quantity: whole numbers plain or with a binary suffix
/// when exactly divisible (memory-like), fractions in `m`.
pub fn format_milli(milli: i128) -> Quantity {
    Quantity(format_milli_string(milli))
}

fn format_milli_string(milli: i128) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let units = milli / 1000;
    const SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if units != 0 {
        for (power, suffix) in SUFFIXES.iter().enumerate().rev() {
            let base = 1i128 << (10 * (power + 1));
            if units % base == 0 {
                return format!("{}{suffix}", units / base);
            }
        }
    }
    units.to_string()
}

/// Amounts per resource name, in milli-units, sorted by name. A small sorted list: a pod
/// asks for one to a few resources, where a `BTreeMap` allocates a node for eleven, and the
/// admission loop builds two of these per pod set of every workload in each cycle (issue 23:
/// about 0.9 KB per workload of the manager's peak at 10,000 workloads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources(pub crate::workload::SmallMap<String, i128>);

impl Resources {
    pub fn new() -> Self {
        Self::default()
    }

    /// The amount of one resource (zero when absent).
    pub fn get(&self, resource: &str) -> i128 {
        self.0.get(resource).copied().unwrap_or(0)
    }

    /// Adds `amount` of `resource`.
    pub fn add(&mut self, resource: &str, amount: i128) {
        let entry = self.0.entry(resource.to_string()).or_insert(0);
        *entry = entry.saturating_add(amount);
    }

    /// Adds every amount of `other`.
    pub fn add_all(&mut self, other: &Resources) {
        for (resource, amount) in &other.0 {
            self.add(resource, *amount);
        }
    }

    /// Raises each amount to at least the one in `other` (the per-resource maximum).
    pub fn max_with(&mut self, other: &Resources) {
        for (resource, amount) in &other.0 {
            let entry = self.0.entry(resource.clone()).or_insert(0);
            *entry = (*entry).max(*amount);
        }
    }

    /// Every amount multiplied by `factor`.
    pub fn scaled(&self, factor: i128) -> Resources {
        // A clone is sized exactly (collecting into the map would give it room for four
        // entries where most have one or two); the keys stay as they are.
        let mut out = self.clone();
        for (_, amount) in out.0.iter_mut() {
            *amount = amount.saturating_mul(factor);
        }
        out
    }

    /// Parses a Kubernetes resource list, naming the offending resource on error.
    pub fn from_quantities(
        list: &BTreeMap<String, Quantity>,
    ) -> Result<Resources, (String, QuantityError)> {
        let mut out = Resources::new();
        for (name, quantity) in list {
            let milli = parse_milli(quantity).map_err(|e| (name.clone(), e))?;
            out.add(name, milli);
        }
        Ok(out)
    }

    /// As a Kubernetes resource list.
    pub fn to_quantities(&self) -> BTreeMap<String, Quantity> {
        self.0
            .iter()
            .map(|(k, v)| (k.clone(), format_milli(*v)))
            .collect()
    }
}

impl fmt::Display for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}={}", format_milli_string(*v)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_the_kubernetes_grammar() {
        let cases: &[(&str, i128)] = &[
            ("0", 0),
            ("1", 1000),
            ("9", 9000),
            ("1.5", 1500),
            ("+2", 2000),
            ("-3", -3000),
            (".5", 500),
            ("5.", 5000),
            ("100m", 100),
            ("1k", 1_000_000),
            ("2M", 2_000_000_000),
            ("1Ki", 1_024_000),
            ("1.5Gi", 1_610_612_736_000),
            ("36Gi", 36 * (1i128 << 30) * 1000),
            ("1Ei", (1i128 << 60) * 1000),
            ("1e3", 1_000_000),
            ("1E-3", 1),
            ("500u", 1), // rounds up
            ("1n", 1),   // rounds up
            ("0.0001", 1),
            ("12e0", 12_000),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_milli_str(text), Ok(*expected), "{text}");
        }
    }

    #[test]
    fn rejects_malformed_quantities_with_the_value_in_the_message() {
        for bad in ["", "abc", "1x", "1..2", "Gi", "1.2.3", "1e", "1e999", "--1"] {
            let err = parse_milli_str(bad).expect_err(bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn formats_canonically() {
        assert_eq!(format_milli(1500).0, "1500m");
        assert_eq!(format_milli(9000).0, "9");
        assert_eq!(format_milli(0).0, "0");
        assert_eq!(format_milli(36 * (1i128 << 30) * 1000).0, "36Gi");
        assert_eq!(format_milli(1_024_000).0, "1Ki");
        assert_eq!(format_milli(-2000).0, "-2");
    }

    #[test]
    fn resources_arithmetic() {
        let mut a = Resources::new();
        a.add("cpu", 1000);
        let mut b = Resources::new();
        b.add("cpu", 500);
        b.add("memory", 7);
        a.add_all(&b);
        assert_eq!(a.get("cpu"), 1500);
        assert_eq!(a.get("memory"), 7);
        assert_eq!(a.get("gpu"), 0);
        a.max_with(&Resources(
            [("cpu".to_string(), 4000)].into_iter().collect(),
        ));
        assert_eq!(a.get("cpu"), 4000);
        assert_eq!(a.scaled(3).get("memory"), 21);
        assert_eq!(a.to_string(), "cpu=4,memory=7m");
    }

    #[test]
    fn from_quantities_names_the_bad_resource() {
        let list = BTreeMap::from([
            ("cpu".to_string(), Quantity("2".into())),
            ("memory".to_string(), Quantity("lots".into())),
        ]);
        let (name, _) = Resources::from_quantities(&list).expect_err("bad memory");
        assert_eq!(name, "memory");
    }

    proptest! {
        #[test]
        fn format_then_parse_is_identity(milli in -1_000_000_000_000_000i128..1_000_000_000_000_000i128) {
            prop_assert_eq!(parse_milli(&format_milli(milli)), Ok(milli));
        }

        #[test]
        fn whole_numbers_parse_exactly(n in 0u64..u64::MAX / 2) {
            prop_assert_eq!(parse_milli_str(&n.to_string()), Ok(i128::from(n) * 1000));
        }
    }
}
