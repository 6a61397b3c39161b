#!/usr/bin/env bash
# Plays a worker's scheduler by hand (until the worker shim exists): reports that the replica
# could reserve quota only by preempting (QuotaReservationBlocked=True, PreemptionGated).
# Usage: hack/worker-signal.sh WORKER_KUBECONFIG [WORKLOAD] [NAMESPACE]
set -euo pipefail
kubeconfig=$1; name=${2:-job-1}; ns=${3:-default}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl --kubeconfig "$kubeconfig" -n "$ns" patch workload "$name" --subresource=status --type=merge -p \
  "{\"status\":{\"conditions\":[{\"type\":\"QuotaReservationBlocked\",\"status\":\"True\",\"reason\":\"PreemptionGated\",\"message\":\"would preempt 1 workload\",\"lastTransitionTime\":\"$now\"}]}}"
