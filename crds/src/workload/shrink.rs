//! Releasing a parsed Workload's spare capacity before a cache keeps it.
//!
//! A list parsed from JSON grows by doubling from four elements, so a Workload as serde
//! leaves it holds room for four pod sets, four conditions and sixteen nominated clusters
//! where it has one, two and ten: about 1.8 KB of its 6 KB when cached. Kept for hours by
//! the thousand, that spare room is most of what a cache could save.

use super::{Admission, AdmissionCheckState, SmallMap, Workload};

impl Workload {
    /// Gives back every list's unused capacity (the object's value is unchanged).
    pub fn shrink_to_fit(&mut self) {
        let meta = &mut self.metadata;
        shrink_opt(&mut meta.finalizers);
        shrink_opt(&mut meta.owner_references);
        let spec = &mut self.spec;
        spec.pod_sets.shrink_to_fit();
        for pod_set in &mut spec.pod_sets {
            pod_set.name.shrink_to_fit();
        }
        spec.preemption_gates.shrink_to_fit();
        let Some(status) = self.status.as_mut() else {
            return;
        };
        status.conditions.shrink_to_fit();
        status.reclaimable_pods.shrink_to_fit();
        status.resource_requests.shrink_to_fit();
        status.unhealthy_nodes.shrink_to_fit();
        status.preemption_gates.shrink_to_fit();
        status.admission_checks.shrink_to_fit();
        status
            .admission_checks
            .iter_mut()
            .for_each(AdmissionCheckState::shrink_to_fit);
        if let Some(admission) = status.admission.as_mut() {
            admission.shrink_to_fit();
        }
    }
}

impl AdmissionCheckState {
    fn shrink_to_fit(&mut self) {
        self.pod_set_updates.shrink_to_fit();
    }
}

impl Admission {
    fn shrink_to_fit(&mut self) {
        self.pod_set_assignments.shrink_to_fit();
        for assignment in &mut self.pod_set_assignments {
            shrink_map(&mut assignment.flavors);
            shrink_map(&mut assignment.resource_usage);
        }
    }
}

fn shrink_map<K, V>(map: &mut SmallMap<K, V>) {
    let mut entries = std::mem::take(map).into_tuple_vec();
    entries.shrink_to_fit();
    // Still sorted and without duplicates: the entries of a map, in its order.
    *map = SmallMap::from_sorted_store_unchecked(entries);
}

fn shrink_opt<T>(list: &mut Option<Vec<T>>) {
    if let Some(list) = list.as_mut() {
        list.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shrinking_keeps_the_value_and_frees_the_room() {
        let json = r#"{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",
            "metadata":{"name":"w","namespace":"ns","finalizers":["a"]},
            "spec":{"podSets":[{"name":"main","count":1,"template":{"spec":{"containers":[]}}}]},
            "status":{"conditions":[{"type":"QuotaReserved","status":"True","reason":"R",
              "message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}],
              "nominatedClusterNames":["a","b","c","d","e"],
              "admission":{"clusterQueue":"cq","podSetAssignments":[{"name":"main","count":1}]}}}"#;
        let parsed: Workload = serde_json::from_str(json).expect("fixture parses");
        let mut shrunk = parsed.clone();
        shrunk.shrink_to_fit();
        assert_eq!(shrunk, parsed);
        let status = shrunk.status.as_ref().expect("status");
        assert_eq!(shrunk.spec.pod_sets.capacity(), 1);
        assert_eq!(status.conditions.capacity(), 1);
        assert_eq!(status.nominated_cluster_names.len(), 5);
        let admission = status.admission.as_ref().expect("admission");
        assert_eq!(admission.pod_set_assignments.capacity(), 1);
    }
}
