#!/usr/bin/env bash
# Plays a worker's scheduler by hand (until the worker shim exists): reports that the replica
# could reserve quota only by preempting (QuotaReservationBlocked=True, PreemptionGated).
# Usage: hack/worker-signal.sh WORKER_KUBECONFIG [WORKLOAD] [NAMESPACE]
set -euo pipefail
kubeconfig=$1; name=${2:-job-1}; ns=${3:-default}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# As Baton's worker shim does in every status write: a gate in spec with no status entry is
# Closed (KEP-8303), and the entry makes it visible (`kubectl get kwl` prints Closed, not
# nothing). The manager's gate is added only when missing: never closes a gate it opened.
gates=$(kubectl --kubeconfig "$kubeconfig" -n "$ns" get workload "$name" -o jsonpath='{.status.preemptionGates[*].name}')
has_spec_gate=$(kubectl --kubeconfig "$kubeconfig" -n "$ns" get workload "$name" -o jsonpath='{.spec.preemptionGates[*].name}')
gate_entry=""
if [[ " $has_spec_gate " == *" kueue.x-k8s.io/multikueue "* && " $gates " != *" kueue.x-k8s.io/multikueue "* ]]; then
  gate_entry=",\"preemptionGates\":[{\"name\":\"kueue.x-k8s.io/multikueue\",\"state\":\"Closed\",\"position\":\"Closed\",\"lastTransitionTime\":\"$now\"}]"
fi
kubectl --kubeconfig "$kubeconfig" -n "$ns" patch workload "$name" --subresource=status --type=merge -p \
  "{\"status\":{\"conditions\":[{\"type\":\"QuotaReservationBlocked\",\"status\":\"True\",\"reason\":\"PreemptionGated\",\"message\":\"would preempt 1 workload\",\"lastTransitionTime\":\"$now\"}]$gate_entry}}"
