//! A workload's priority.
//!
//! Kueue fills `spec.priority` from `spec.priorityClassRef` in a webhook; Baton runs none, so
//! the controllers resolve it here: a `priority` written in the object is used as is;
//! otherwise the referenced class's value; otherwise 0 (Kueue's default).

use crate::workload::{PriorityClassGroup, WorkloadSpec};

/// The priority of a workload with no priority and no class.
pub const DEFAULT_PRIORITY: i32 = 0;

/// Where priority classes are looked up (watch caches in controllers, maps in tests).
pub trait PriorityClasses {
    /// The value of a `kueue.x-k8s.io` WorkloadPriorityClass.
    fn workload_priority_class(&self, name: &str) -> Option<i32>;
    /// The value of a `scheduling.k8s.io` PriorityClass.
    fn pod_priority_class(&self, name: &str) -> Option<i32>;
}

/// A referenced class that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.priorityClassRef: {kind} {name:?} not found")]
pub struct MissingPriorityClass {
    pub kind: &'static str,
    pub name: String,
}

/// Resolves the workload's priority.
pub fn resolve_priority(
    spec: &WorkloadSpec,
    classes: &impl PriorityClasses,
) -> Result<i32, MissingPriorityClass> {
    if let Some(priority) = spec.priority {
        return Ok(priority);
    }
    let Some(class_ref) = &spec.priority_class_ref else {
        return Ok(DEFAULT_PRIORITY);
    };
    let (kind, value) = match class_ref.group {
        PriorityClassGroup::Kueue => (
            "WorkloadPriorityClass",
            classes.workload_priority_class(&class_ref.name),
        ),
        PriorityClassGroup::Scheduling => {
            ("PriorityClass", classes.pod_priority_class(&class_ref.name))
        }
    };
    value.ok_or_else(|| MissingPriorityClass {
        kind,
        name: class_ref.name.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{PriorityClassKind, PriorityClassRef};
    use std::collections::BTreeMap;

    #[derive(Default)]
    struct Classes {
        workload: BTreeMap<String, i32>,
        pod: BTreeMap<String, i32>,
    }

    impl PriorityClasses for Classes {
        fn workload_priority_class(&self, name: &str) -> Option<i32> {
            self.workload.get(name).copied()
        }
        fn pod_priority_class(&self, name: &str) -> Option<i32> {
            self.pod.get(name).copied()
        }
    }

    fn classes() -> Classes {
        Classes {
            workload: BTreeMap::from([("high".to_string(), 1000)]),
            pod: BTreeMap::from([
                ("high".to_string(), 7),
                ("system-cluster-critical".to_string(), 2_000_000_000),
            ]),
        }
    }

    fn with_ref(group: PriorityClassGroup, kind: PriorityClassKind, name: &str) -> WorkloadSpec {
        WorkloadSpec {
            priority_class_ref: Some(Box::new(PriorityClassRef {
                group,
                kind,
                name: name.into(),
            })),
            ..Default::default()
        }
    }

    #[test]
    fn explicit_priority_wins_over_the_class() {
        let spec = WorkloadSpec {
            priority: Some(-5),
            ..with_ref(
                PriorityClassGroup::Kueue,
                PriorityClassKind::WorkloadPriorityClass,
                "high",
            )
        };
        assert_eq!(resolve_priority(&spec, &classes()), Ok(-5));
    }

    #[test]
    fn workload_priority_class_and_pod_priority_class_are_distinct() {
        let wpc = with_ref(
            PriorityClassGroup::Kueue,
            PriorityClassKind::WorkloadPriorityClass,
            "high",
        );
        let pc = with_ref(
            PriorityClassGroup::Scheduling,
            PriorityClassKind::PriorityClass,
            "high",
        );
        assert_eq!(resolve_priority(&wpc, &classes()), Ok(1000));
        assert_eq!(resolve_priority(&pc, &classes()), Ok(7));
    }

    #[test]
    fn no_priority_and_no_class_is_zero() {
        assert_eq!(
            resolve_priority(&WorkloadSpec::default(), &classes()),
            Ok(0)
        );
    }

    #[test]
    fn missing_class_is_an_error_naming_it() {
        let spec = with_ref(
            PriorityClassGroup::Kueue,
            PriorityClassKind::WorkloadPriorityClass,
            "nope",
        );
        let err = resolve_priority(&spec, &classes()).expect_err("missing");
        assert_eq!(
            err.to_string(),
            "spec.priorityClassRef: WorkloadPriorityClass \"nope\" not found"
        );
    }
}
