//! The periodic look at every manager Workload, spread over its period.
//!
//! **The rule.** Every manager Workload is looked at again once per resync period although
//! nothing announced a change, so that a lost event never strands one. The period is cut
//! into [`SLICES`] ticks; each workload belongs to one slice, fixed by its namespace and
//! name ([`slice_of`]), and tick `n` looks at slice [`slice_at`]`(n)`. Over any
//! [`SLICES`] consecutive ticks every workload is looked at exactly once.
//!
//! **Why.** All at once, 50,000 workloads came back every five minutes in one burst of
//! 50,000 reconciles: about 12 MiB more resident memory at its height (issue 23, 20 workers),
//! and every workload woken by a real change waited behind it. A slice is a sixtieth of
//! that.

use std::hash::{DefaultHasher, Hash, Hasher};

/// How many slices the period is cut into.
pub const SLICES: u32 = 60;

/// The slice (below [`SLICES`]) that Workload `name` in `namespace` is looked at in. The
/// same in every call of one process (a fixed hash), whatever else the cache holds.
pub fn slice_of(namespace: &str, name: &str) -> u32 {
    let mut hasher = DefaultHasher::new();
    namespace.hash(&mut hasher);
    name.hash(&mut hasher);
    // Below SLICES, which fits.
    (hasher.finish() % u64::from(SLICES)) as u32
}

/// The slice looked at on tick `tick` (ticks count from 0).
pub fn slice_at(tick: u64) -> u32 {
    // Below SLICES, which fits.
    (tick % u64::from(SLICES)) as u32
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_workload_keeps_its_slice() {
        assert_eq!(slice_of("team-a", "train"), slice_of("team-a", "train"));
    }

    #[test]
    fn the_ticks_go_round_the_slices_in_order() {
        let seen: Vec<u32> = (0..u64::from(SLICES) + 2).map(slice_at).collect();
        assert_eq!(seen[0], 0);
        assert_eq!(seen[usize::try_from(SLICES - 1).unwrap()], SLICES - 1);
        assert_eq!(seen[usize::try_from(SLICES).unwrap()], 0, "round again");
        assert_eq!(slice_at(u64::MAX), (u64::MAX % u64::from(SLICES)) as u32);
    }

    #[test]
    fn workloads_spread_over_the_slices() {
        let mut counts = vec![0_u32; usize::try_from(SLICES).unwrap()];
        for n in 0..12_000 {
            counts[slice_of("default", &format!("wl-{n:05}")) as usize] += 1;
        }
        // 200 a slice on average; none holds a burst.
        let (least, most) = (counts.iter().min(), counts.iter().max());
        assert!(
            least >= Some(&120) && most <= Some(&280),
            "{least:?}..{most:?}"
        );
    }

    proptest! {
        #[test]
        fn any_run_of_slices_ticks_looks_at_a_workload_exactly_once(
            namespace in "[a-z]{1,12}",
            name in "[a-z0-9-]{1,40}",
            start in any::<u32>(),
        ) {
            let slice = slice_of(&namespace, &name);
            prop_assert!(slice < SLICES);
            let start = u64::from(start);
            let looks = (start..start + u64::from(SLICES))
                .filter(|tick| slice_at(*tick) == slice)
                .count();
            prop_assert_eq!(looks, 1);
        }
    }
}
