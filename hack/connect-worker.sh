#!/usr/bin/env bash
# Connects a worker cluster to Baton's manager.
#
# On the worker, the chart installed with managerAccess.enabled=true created a ServiceAccount
# for the manager, its RBAC, and a kubernetes.io/service-account-token Secret. This script
# reads that Secret (token and CA) from the worker, builds a kubeconfig from it, and creates
# on the manager cluster:
#   - Secret <name>-kubeconfig (key "kubeconfig") in the manager's namespace;
#   - MultiKueueCluster <name>, whose kubeConfig source is that Secret.
# Then list <name> in a MultiKueueConfig's spec.clusters.
#
# Usage:
#   hack/connect-worker.sh --name NAME --worker-kubeconfig FILE [--manager-kubeconfig FILE]
#                          [options]
# Options:
#   --name NAME                 MultiKueueCluster name (a DNS-1123 label, e.g. worker-1)
#   --worker-kubeconfig FILE    kubeconfig of the worker cluster (to read the token Secret)
#   --worker-context CTX        context in it (default: its current context)
#   --worker-namespace NS       namespace of the worker's Baton release (default baton-system)
#   --token-secret NAME         the token Secret (default: the one Secret labelled
#                               app.kubernetes.io/component=manager-access in that namespace)
#   --server URL                the worker API server as the MANAGER reaches it (default: the
#                               server of the worker kubeconfig's context)
#   --manager-kubeconfig FILE   kubeconfig of the manager cluster (required unless --dry-run)
#   --manager-context CTX       context in it (default: its current context)
#   --manager-namespace NS      the manager's namespace, its --namespace (default baton-system)
#   --no-verify                 do not try the new credentials against the worker first
#   --dry-run                   print the manifests instead of applying them (they contain
#                               the token)
#   -h, --help
# Needs kubectl and base64.
set -euo pipefail

name=""
worker_kubeconfig=""
worker_context=""
worker_namespace="baton-system"
token_secret=""
server=""
manager_kubeconfig=""
manager_context=""
manager_namespace="baton-system"
verify=true
dry_run=false

usage() { sed -n '2,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "connect-worker: error: $*" >&2; exit 1; }
say() { echo "connect-worker: $*" >&2; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --name) name=${2:?--name needs a value}; shift 2 ;;
        --worker-kubeconfig) worker_kubeconfig=${2:?}; shift 2 ;;
        --worker-context) worker_context=${2:?}; shift 2 ;;
        --worker-namespace) worker_namespace=${2:?}; shift 2 ;;
        --token-secret) token_secret=${2:?}; shift 2 ;;
        --server) server=${2:?}; shift 2 ;;
        --manager-kubeconfig) manager_kubeconfig=${2:?}; shift 2 ;;
        --manager-context) manager_context=${2:?}; shift 2 ;;
        --manager-namespace) manager_namespace=${2:?}; shift 2 ;;
        --no-verify) verify=false; shift ;;
        --dry-run) dry_run=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done

[[ -n "$name" ]] || die "--name is required"
[[ "$name" =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ && ${#name} -le 52 ]] ||
    die "--name $name: use a DNS-1123 label of at most 52 characters (the Secret is <name>-kubeconfig)"
[[ -n "$worker_kubeconfig" ]] || die "--worker-kubeconfig is required"
[[ -r "$worker_kubeconfig" ]] || die "cannot read $worker_kubeconfig"
if ! $dry_run; then
    [[ -n "$manager_kubeconfig" ]] || die "--manager-kubeconfig is required (or use --dry-run)"
    [[ -r "$manager_kubeconfig" ]] || die "cannot read $manager_kubeconfig"
fi
command -v kubectl >/dev/null || die "kubectl not found"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

worker_args=(--kubeconfig "$worker_kubeconfig")
[[ -z "$worker_context" ]] || worker_args+=(--context "$worker_context")
manager_args=(--kubeconfig "$manager_kubeconfig")
[[ -z "$manager_context" ]] || manager_args+=(--context "$manager_context")
worker() { kubectl "${worker_args[@]}" "$@"; }
manager() { kubectl "${manager_args[@]}" "$@"; }
b64() { base64 | tr -d '\n'; }

# The token Secret.
if [[ -z "$token_secret" ]]; then
    found=$(worker -n "$worker_namespace" get secrets -l app.kubernetes.io/component=manager-access \
        -o jsonpath='{range .items[*]}{.type}{" "}{.metadata.name}{"\n"}{end}') ||
        die "cannot list Secrets in $worker_namespace on the worker"
    found=$(awk '$1 == "kubernetes.io/service-account-token" {print $2}' <<<"$found")
    count=$(grep -c . <<<"$found" || true)
    [[ "$count" -eq 1 ]] || die "expected one manager-access token Secret in namespace $worker_namespace on the worker, found $count (was the chart installed there with managerAccess.enabled=true? else pass --token-secret)"
    token_secret=$found
fi
say "reading Secret $worker_namespace/$token_secret on the worker"

# The token controller fills the Secret shortly after it is created: wait for it.
token=""
for _ in $(seq 1 30); do
    token=$(worker -n "$worker_namespace" get secret "$token_secret" -o jsonpath='{.data.token}') ||
        die "cannot read Secret $worker_namespace/$token_secret on the worker"
    [[ -n "$token" ]] && break
    sleep 1
done
[[ -n "$token" ]] || die "Secret $worker_namespace/$token_secret has no token after 30s (is it of type kubernetes.io/service-account-token, naming an existing ServiceAccount?)"
token=$(printf '%s' "$token" | base64 --decode) || die "the token is not base64"
ca=$(worker -n "$worker_namespace" get secret "$token_secret" -o jsonpath='{.data.ca\.crt}')

if [[ -z "$server" ]]; then
    server=$(worker config view --minify -o jsonpath='{.clusters[0].cluster.server}') ||
        die "cannot read the server of $worker_kubeconfig"
    [[ -n "$server" ]] || die "no server in $worker_kubeconfig; pass --server"
fi

# The manager's kubeconfig for this worker: the server, the cluster CA from the token Secret
# (none: the system's roots), the token. No exec or auth-provider plugin.
{
    echo "apiVersion: v1"
    echo "kind: Config"
    echo "clusters:"
    echo "- name: $name"
    echo "  cluster:"
    echo "    server: \"$server\""
    if [[ -n "$ca" ]]; then echo "    certificate-authority-data: $ca"; fi
    echo "contexts:"
    echo "- name: $name"
    echo "  context:"
    echo "    cluster: $name"
    echo "    user: $name"
    echo "current-context: $name"
    echo "users:"
    echo "- name: $name"
    echo "  user:"
    echo "    token: \"$token\""
} >"$tmp/kubeconfig"

if $verify; then
    say "checking the new credentials: list Workloads on $server"
    kubectl --kubeconfig "$tmp/kubeconfig" get workloads.kueue.x-k8s.io --all-namespaces \
        --request-timeout=15s -o name >/dev/null 2>"$tmp/verify.err" ||
        die "the credentials do not work from here: $(tail -1 "$tmp/verify.err") (if only the manager reaches $server, pass --no-verify)"
fi

cat >"$tmp/manifests.yaml" <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: $name-kubeconfig
  namespace: $manager_namespace
  labels:
    app.kubernetes.io/part-of: baton
    app.kubernetes.io/managed-by: connect-worker
type: Opaque
data:
  kubeconfig: $(b64 <"$tmp/kubeconfig")
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: $name
  labels:
    app.kubernetes.io/part-of: baton
    app.kubernetes.io/managed-by: connect-worker
spec:
  clusterSource:
    kubeConfig:
      locationType: Secret
      location: $name-kubeconfig
EOF

if $dry_run; then
    say "dry run: the manifests (the Secret holds the worker's token)"
    cat "$tmp/manifests.yaml"
    exit 0
fi

manager get namespace "$manager_namespace" -o name >/dev/null 2>&1 ||
    die "namespace $manager_namespace does not exist on the manager (install the chart there first, or pass --manager-namespace)"
manager apply -f "$tmp/manifests.yaml" >&2 || die "kubectl apply on the manager failed"
say "done: list $name in your MultiKueueConfig's spec.clusters, then check"
say "  kubectl get multikueueclusters $name    # CONNECTED True once the manager has connected"
