//! Replica statuses forged on a worker, for the manager's ungating.

use serde_json::{Value, json};

/// A replica status forged on worker-1 (by a skewed clock, an old or foreign scheduler, or
/// someone with write access there), and the worker whose gate must open next once worker-2
/// has signalled that it is gated.
pub struct Forged {
    pub name: &'static str,
    pub status: Value,
    pub opens_on: usize,
}

pub const GATE: &str = "kueue.x-k8s.io/multikueue";

/// The forged statuses the manager handles today.
pub fn forged_cases() -> Vec<Forged> {
    vec![
        // A status entry for a gate the replica's spec doesn't have, and a QuotaReservationBlocked
        // with a reason that is not PreemptionGated: neither an opening nor a candidate.
        Forged {
            name: "stray-gate",
            status: json!({"preemptionGates": [{"name": "example.com/other", "state": "Open",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "conditions": [{"type": "QuotaReservationBlocked", "status": "True", "reason": "SomethingElse",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
            opens_on: 2,
        },
        // Blocked "since 1970": the earliest signal, so first served (FCFS).
        Forged {
            name: "ancient-signal",
            status: json!({"conditions": [{"type": "QuotaReservationBlocked", "status": "True",
                "reason": "PreemptionGated", "message": "", "lastTransitionTime": "1970-01-01T00:00:00Z"}]}),
            opens_on: 1,
        },
        // Upstream Kueue ≥ 0.17's condition and `position` field, with no `state`.
        Forged {
            name: "upstream-words",
            status: json!({"conditions": [{"type": "BlockedOnPreemptionGates", "status": "True",
                "reason": "PreemptionGated", "message": "", "lastTransitionTime": "2000-01-01T00:00:00Z"}]}),
            opens_on: 1,
        },
    ]
}

/// A gate opened "in 2099" (a worker clock far ahead): the baton must still pass on within
/// about one timeout of the manager seeing it.
pub fn future_open() -> Forged {
    Forged {
        name: "future-open",
        status: json!({"preemptionGates": [{"name": GATE, "state": "Open", "position": "Open",
            "lastTransitionTime": "2099-01-01T00:00:00Z"}]}),
        opens_on: 2,
    }
}
