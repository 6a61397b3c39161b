use serde_json::json;

use super::job;
use crate::jobs::name::MAX_WORKLOAD_NAME;
use crate::jobs::workload_name;

fn is_dns_label_value(name: &str) -> bool {
    name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !name.contains(".-")
        && !name.contains("-.")
}

#[test]
fn short_names_are_job_dash_name_dash_hash() {
    let name = workload_name(&job(json!({})));
    let (head, hash) = name.rsplit_once('-').unwrap();
    assert_eq!(head, "job-sample");
    assert_eq!(hash.len(), 5);
    assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
}

#[test]
fn the_name_depends_on_name_and_uid_only() {
    let a = workload_name(&job(json!({})));
    assert_eq!(
        a,
        workload_name(&job(json!({"metadata": {"labels": {"x": "y"}}})))
    );
    assert_ne!(
        a,
        workload_name(&job(json!({"metadata": {"uid": "uid-2"}})))
    );
    assert_ne!(
        a,
        workload_name(&job(json!({"metadata": {"name": "other"}})))
    );
}

#[test]
fn long_names_are_cut_to_a_valid_63_character_name() {
    let long = "a".repeat(70);
    let name = workload_name(&job(json!({"metadata": {"name": long}})));
    assert_eq!(name.len(), MAX_WORKLOAD_NAME);
    assert!(is_dns_label_value(&name), "{name}");
    // Cut right after a dash or a dot: the separator is not doubled into an invalid name.
    for filler in ["-", "."] {
        let cut_at_separator = format!("{}{filler}{}", "b".repeat(52), "c".repeat(20));
        let name = workload_name(&job(json!({"metadata": {"name": cut_at_separator}})));
        assert!(name.len() <= MAX_WORKLOAD_NAME);
        assert!(is_dns_label_value(&name), "{name}");
    }
}
