#!/usr/bin/env bash
# Checks the chart's Grafana dashboard (charts/baton/dashboards/baton.json) against a real
# Prometheus scraping a sandbox run (issue 26): starts `baton-sandbox --workers 2 --demo`
# (the KEP-8303 scenario: a high-priority Job preempts on one worker), then Prometheus
# (Debian package `prometheus`) scraping the manager's and both worker shims' /metrics every
# 2 s, then more traffic on the manager (high-priority Jobs that preempt on the workers, and
# small Workloads of either priority class), and then evaluates every panel's PromQL through
# Prometheus's HTTP API (/api/v1/query): each must parse and return data. Prints one line per
# query and exits 1 when any fails. Also saves the key panels' series over the run
# (/api/v1/query_range) to DIR/series.json, which hack/dashboard-plot.py draws as an SVG.
#
# Usage: hack/dashboard-check.sh [DIR]    (default: a new /tmp/baton-dashboard.XXXXXX, kept)
# Needs kubectl, python3 and prometheus (apt-get install -y prometheus); builds `baton` and
# `baton-sandbox` (debug) first. Not part of the test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
for tool in kubectl python3 prometheus; do
  command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
dir=${1:-$(mktemp -d /tmp/baton-dashboard.XXXXXX)}
mkdir -p "$dir"
cd "$root"
cargo build -q -p baton -p baton-e2e --bin baton --bin baton-sandbox

"$target/debug/baton-sandbox" --workers 2 --demo --dir "$dir" >"$dir/sandbox.out" 2>&1 &
sandbox=$!
prom=""
trap 'kill -INT $sandbox 2>/dev/null; [ -n "$prom" ] && kill $prom 2>/dev/null; wait 2>/dev/null' EXIT
until [ -e "$dir/ready" ]; do
  kill -0 $sandbox 2>/dev/null || { cat "$dir/sandbox.out" >&2; exit 1; }
  sleep 0.5
done
echo "sandbox ready in $dir"

# The controllers' /metrics addresses, from their logs ("serving /metrics ... local=ADDR").
targets=""
for log in "$dir"/manager.log "$dir"/worker-*.log; do
  addr=$(grep -m1 "serving /metrics" "$log" | sed 's/.*local=\([^ ]*\).*/\1/')
  name=$(basename "$log" .log)
  targets="$targets      - targets: ['$addr']\n        labels: {controller: '$name'}\n"
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf "global: {scrape_interval: 2s, evaluation_interval: 2s}\nscrape_configs:\n  - job_name: baton\n    static_configs:\n$targets" >"$dir/prometheus.yml"
cat "$dir/prometheus.yml"
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prometheus-data" \
  --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
prom=$!
api="http://127.0.0.1:$port"
until python3 -c "import urllib.request; urllib.request.urlopen('$api/-/ready')" 2>/dev/null; do
  kill -0 $prom 2>/dev/null || { cat "$dir/prometheus.log" >&2; exit 1; }
  sleep 0.5
done
started=$(date +%s)
echo "prometheus ready on $api; traffic starts"
sleep 6

# Traffic: high-priority Jobs (two 1-CPU pods, 20 s) that preempt on the full workers, and
# small Workloads of either priority class.
kc="kubectl --kubeconfig $dir/manager.kubeconfig"
for i in 1 2 3; do
  sed -e "s/name: sample-job/name: traffic-job-$i/" -e 's/run-seconds: "60"/run-seconds: "20"/' \
    -e 's/sleep 60/sleep 20/' "$dir/job.yaml" | $kc apply -f - >/dev/null
  sleep 8
done
for i in $(seq 1 6); do
  class=$([ $((i % 2)) -eq 0 ] && echo high-priority || echo low-priority)
  cat <<YAML | $kc apply -f - >/dev/null
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: traffic-wl-$i, namespace: default}
spec:
  queueName: user-queue
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: $class}
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, image: busybox, resources: {requests: {cpu: 100m}}}
YAML
  sleep 2
done
sleep 30
$kc get kwl -A 2>&1 | sed 's/^/  /'
$kc get mkc -o wide 2>&1 | sed 's/^/  /'

python3 - "$api" "$root/charts/baton/dashboards/baton.json" "$dir/series.json" "$started" <<'PY'
import json, math, sys, time, urllib.parse, urllib.request
api, dashboard, out, started = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])

def get(path, **params):
    url = f"{api}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)

panels = json.load(open(dashboard))["panels"]
failed, checked, series = 0, 0, {}
now = time.time()
for p in panels:
    for t in p["targets"]:
        checked += 1
        r = get("/api/v1/query", query=t["expr"])
        if r.get("status") != "success":
            failed += 1
            print(f"FAIL  {p['title']} [{t['refId']}]: {r.get('errorType')}: {r.get('error')}")
            continue
        result = r["data"]["result"]
        values = [float(s["value"][1]) for s in result]
        numbers = [v for v in values if not math.isnan(v)]
        ok = bool(numbers)
        failed += not ok
        shown = ", ".join(f"{v:g}" for v in values[:4]) + (" ..." if len(values) > 4 else "")
        print(f"{'ok  ' if ok else 'FAIL'}  {p['title']} [{t['refId']}]: {len(result)} series ({shown})  {t['expr']}")
        rr = get("/api/v1/query_range", query=t["expr"], start=started, end=now, step=2)
        if rr.get("status") == "success":
            series.setdefault(p["title"], []).append({"legend": t["legendFormat"], "result": rr["data"]["result"]})
json.dump({"started": started, "end": now, "panels": series}, open(out, "w"))
print(f"{checked - failed} of {checked} queries in {len(panels)} panels parsed and returned data")
sys.exit(1 if failed else 0)
PY
