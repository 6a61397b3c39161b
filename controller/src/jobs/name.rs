//! The name of a Job's Workload: `job-<job name>-<hash>`, as Kueue names them.
//!
//! The hash covers the Job's name and uid, so a Job deleted and created again under the same
//! name gets a new Workload rather than the old one's status. Names are kept to 63
//! characters, not the 253 a Workload name may have: the name travels as the value of the
//! `prebuilt-workload-name` label on MultiKueue copies, and label values stop at 63.

use k8s_openapi::api::batch::v1::Job;

/// Longest name returned (a label value's limit).
pub const MAX_WORKLOAD_NAME: usize = 63;
/// Hex digits of hash at the end of the name.
const HASH_LENGTH: usize = 5;

/// The Workload name for `job`. Deterministic: the same name and uid give the same result.
pub fn workload_name(job: &Job) -> String {
    let name = job.metadata.name.as_deref().unwrap_or("");
    let uid = job.metadata.uid.as_deref().unwrap_or("");
    name_for("job", name, uid, "batch/v1, Kind=Job")
}

pub(crate) fn name_for(prefix: &str, owner: &str, uid: &str, gvk: &str) -> String {
    let hash = format!("{:016x}", fnv1a(&[owner, uid, gvk]));
    let mut head = format!("{prefix}-{owner}");
    let room = MAX_WORKLOAD_NAME - 1 - HASH_LENGTH;
    if head.len() > room {
        // Names are ASCII (DNS subdomains), so any byte index is a char boundary; still,
        // step back to one rather than panic on a malformed name.
        let mut cut = room;
        while !head.is_char_boundary(cut) {
            cut -= 1;
        }
        head.truncate(cut);
    }
    // A DNS segment must end alphanumeric: "job-a.-hash" would be rejected.
    let head = head.trim_end_matches(['-', '.']);
    format!("{head}-{}", &hash[..HASH_LENGTH])
}

/// FNV-1a (64 bits) over the parts, each followed by a separator byte, so ("ab","c") and
/// ("a","bc") differ. Stable across platforms and releases, unlike std's hasher.
fn fnv1a(parts: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0u8)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    hash
}
