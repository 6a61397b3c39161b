#!/usr/bin/env bash
# Plays a worker's scheduler by hand: admits the replica.
# Usage: hack/worker-admit.sh WORKER_KUBECONFIG [WORKLOAD] [NAMESPACE]
set -euo pipefail
kubeconfig=$1; name=${2:-job-1}; ns=${3:-default}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl --kubeconfig "$kubeconfig" -n "$ns" patch workload "$name" --subresource=status --type=merge -p \
  "{\"status\":{\"admission\":{\"clusterQueue\":\"cluster-queue\",\"podSetAssignments\":[{\"name\":\"main\",\"count\":2,\"flavors\":{\"cpu\":\"default-flavor\"},\"resourceUsage\":{\"cpu\":\"2\"}}]},\"conditions\":[{\"type\":\"QuotaReservationBlocked\",\"status\":\"False\",\"reason\":\"QuotaReserved\",\"message\":\"\",\"lastTransitionTime\":\"$now\"},{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\",\"message\":\"reserved\",\"lastTransitionTime\":\"$now\"},{\"type\":\"Admitted\",\"status\":\"True\",\"reason\":\"Admitted\",\"message\":\"admitted\",\"lastTransitionTime\":\"$now\"}]}}"
