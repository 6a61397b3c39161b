#!/usr/bin/env bash
# The sandbox at scale, as a new user would try it (issue 23): `baton-sandbox --workers W
# --controllers` with the release binaries, then N small Workloads (100m CPU each, LocalQueue
# user-queue) created on the manager with kubectl. Most of them cannot fit the workers'
# quotas and stay pending, each with a replica on every worker. Prints, once every Workload
# has its replicas and the controllers have been quiet for a while, the manager's and each
# worker shim's resident memory (now and peak) and the machine's load.
#
# Usage: hack/sandbox-scale.sh [WORKERS=10] [WORKLOADS=3000]
# Needs kubectl; builds `baton` and `baton-sandbox` in release mode first.
set -euo pipefail
workers=${1:-10}
workloads=${2:-3000}
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
command -v kubectl >/dev/null || { echo "kubectl is required" >&2; exit 1; }

cargo build --release --locked -q -p baton -p baton-e2e --bin baton --bin baton-sandbox
dir=$(mktemp -d /tmp/baton-sandbox-scale.XXXXXX)
BATON_BIN=$target/release/baton "$target/release/baton-sandbox" --workers "$workers" \
  --controllers --dir "$dir" >"$dir/sandbox.out" 2>&1 &
sandbox=$!
trap 'kill -INT $sandbox 2>/dev/null; wait $sandbox 2>/dev/null; rm -rf "$dir"' EXIT
started=$(date +%s.%N)
until [ -e "$dir/ready" ]; do
  kill -0 $sandbox 2>/dev/null || { cat "$dir/sandbox.out" >&2; exit 1; }
  sleep 0.2
done
awk -v w="$workers" -v s="$started" -v e="$(date +%s.%N)" \
  'BEGIN { printf "sandbox with %s workers ready in %.1f s\n", w, e - s }'
manager_kc=$dir/manager.kubeconfig

pids_of() { pgrep -f -- "$target/release/baton $1 .*$dir" || true; }
rss() { awk -v f="$2" '$1 == f":" {print int($2 / 1024)}' "/proc/$1/status" 2>/dev/null || echo 0; }
manager=$(pids_of manager)
echo "manager idle: $(rss "$manager" VmRSS) MiB"

mkdir -p "$dir/manifests"
for i in $(seq 1 "$workloads"); do
  cat >>"$dir/manifests/$(( (i - 1) / 250 )).yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: scale-$i
  namespace: default
spec:
  queueName: user-queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers:
        - name: c
          image: registry.k8s.io/pause:3.9
          resources:
            requests:
              cpu: 100m
---
EOF
done
t0=$(date +%s)
# Four kubectl processes at once, 250 Workloads each.
find "$dir/manifests" -name "*.yaml" -print0 |
  xargs -0 -P 4 -I{} kubectl --kubeconfig "$manager_kc" create -f {} >/dev/null
echo "created $workloads Workloads in $(( $(date +%s) - t0 )) s"

# Settled: every worker holds a replica of every Workload, and the counts stay for 10 s.
count() { kubectl --kubeconfig "$1" get workloads -A --no-headers 2>/dev/null | wc -l; }
last=""; same=0
while [ $same -lt 5 ]; do
  sleep 2
  now=""
  for kc in "$dir"/worker-*.kubeconfig; do now="$now $(count "$kc")"; done
  if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
done
echo "replicas per worker:$last"
echo "manager: $(rss "$manager" VmRSS) MiB now, $(rss "$manager" VmHWM) MiB peak"
for pid in $(pids_of worker); do
  echo "worker shim $pid: $(rss "$pid" VmRSS) MiB now, $(rss "$pid" VmHWM) MiB peak"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
