#!/usr/bin/env bash
# Plays a worker's scheduler by hand: admits the replica.
# Usage: hack/worker-admit.sh WORKER_KUBECONFIG [WORKLOAD] [NAMESPACE]
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
  "{\"status\":{\"admission\":{\"clusterQueue\":\"cluster-queue\",\"podSetAssignments\":[{\"name\":\"main\",\"count\":2,\"flavors\":{\"cpu\":\"default-flavor\"},\"resourceUsage\":{\"cpu\":\"2\"}}]},\"conditions\":[{\"type\":\"QuotaReservationBlocked\",\"status\":\"False\",\"reason\":\"QuotaReserved\",\"message\":\"\",\"lastTransitionTime\":\"$now\"},{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\",\"message\":\"reserved\",\"lastTransitionTime\":\"$now\"},{\"type\":\"Admitted\",\"status\":\"True\",\"reason\":\"Admitted\",\"message\":\"admitted\",\"lastTransitionTime\":\"$now\"}]$gate_entry}}"
