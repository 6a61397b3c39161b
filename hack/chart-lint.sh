#!/usr/bin/env bash
# Lints and renders the Helm chart (charts/baton) and checks what it renders. Fails on the
# first problem, saying what it was.
#
#   hack/chart-lint.sh            # uses $HELM, else `helm` on PATH, else installs it
#                                 # (hack/chart-install-helm.sh)
#
# Steps:
#   1. charts/baton/crds/ holds exactly the files of crds/yaml/, byte for byte;
#   2. `helm lint --strict` in manager mode, worker mode and with every optional part on;
#   3. `helm template` of seven scenarios into target/chart-render/ (or $CHART_RENDER_DIR),
#      and NOTES.txt rendered for five of them (no unset values);
#   4. a check of every rendered document: YAML that parses, apiVersion/kind/metadata.name,
#      names and labels Kubernetes accepts, namespaces, no duplicates, the kinds each
#      scenario must (and must not) contain, and the references between objects (selectors,
#      port names, ConfigMap, ServiceAccounts, roleRefs, token Secret), the hardened
#      securityContext, RBAC scoping (Secrets only through a namespaced Role; none for the
#      worker), the configuration file's field names, the CRDs rendered as templates
#      equal to crds/, and the Job admission policies (only on CREATE of batch/v1 jobs with
#      the queue-name label, bound by name, the mutating one only where served or forced);
#   5. values that values.schema.json or the templates must refuse are refused.
# Typed validation against the Kubernetes API types is done by `cargo test -p baton-e2e
# --test chart` (e2e/tests/chart.rs), which renders the same chart.
set -euo pipefail
cd "$(dirname "$0")/.."

chart=charts/baton
out=${CHART_RENDER_DIR:-target/chart-render}
ns=baton-system

say() { echo "chart-lint: $*"; }
die() { echo "chart-lint: FAILED: $*" >&2; exit 1; }

helm=${HELM:-}
if [[ -z "$helm" ]]; then
    if command -v helm >/dev/null; then helm=$(command -v helm); else helm=$(bash hack/chart-install-helm.sh); fi
fi
"$helm" version --short >/dev/null 2>&1 || die "helm ($helm) does not run"
case "$("$helm" version --short)" in v3.*) ;; *) die "Helm 3 is needed, got $("$helm" version --short)" ;; esac
say "helm $("$helm" version --short) at $helm"

# --- 1. CRDs
say "CRDs: $chart/crds/ == crds/yaml/"
diff -r crds/yaml "$chart/crds" >/dev/null ||
    die "$chart/crds differs from crds/yaml (run hack/chart-sync-crds.sh): $(diff -rq crds/yaml "$chart/crds" | head -5)"

# --- values for the scenarios
rm -rf "$out"
mkdir -p "$out/values"
cat >"$out/values/full-manager.yaml" <<'EOF'
mode: manager
replicas: 2
image: {repository: registry.example.com/baton/baton, tag: v9.9.9, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
crds: {managed: true, keep: true}
serviceMonitor: {enabled: true, interval: 15s, scrapeTimeout: 5s, labels: {release: prometheus}}
managerAccess: {enabled: true}
grafanaDashboard: {enabled: true, annotations: {grafana_folder: Baton}}
podDisruptionBudget: {enabled: true, minAvailable: 1}
jobs: {admissionPolicies: {mutating: true, validating: true}}
config:
  apiVersion: baton.kueue.x-k8s.io/v1alpha1
  kind: Configuration
  orchestratedPreemption: true
  singleClusterPreemptionTimeout: 2m30s
  workerLostTimeout: 10m
  gcInterval: 30s
  origin: team-a.manager
  dispatcher:
    name: Incremental
    incremental: {clustersPerRound: 2, roundTimeout: 3m}
  workerClient: {qps: 20.5, burst: 40}
  allowInsecureKubeconfigs: false
  leaderElection: {enabled: true, leaseName: baton-team-a, leaseDuration: 20s, renewDeadline: 15s, retryPeriod: 3s}
ports: {metrics: 9090, health: 9091}
service: {port: 9090, annotations: {example.com/scrape: "true"}}
logFormat: plain
logLevel: info,baton=debug
extraArgs: ["--kubeconfig", "/etc/baton/workers/self.kubeconfig"]
extraEnv: [{name: TZ, value: UTC}]
extraVolumes: [{name: kubeconfigs, secret: {secretName: worker-kubeconfigs}}]
extraVolumeMounts: [{name: kubeconfigs, mountPath: /etc/baton/workers, readOnly: true}]
podAnnotations: {example.com/team: batch}
podLabels: {example.com/tier: control}
priorityClassName: system-cluster-critical
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: control-plane, operator: Exists, effect: NoSchedule}]
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app.kubernetes.io/name: baton}}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector: {matchLabels: {app.kubernetes.io/name: baton}}
EOF
cat >"$out/values/full-worker.yaml" <<'EOF'
mode: worker
replicas: 3
crds: {managed: true, keep: false}
serviceMonitor: {enabled: true}
managerAccess: {enabled: true, serviceAccountName: multikueue-manager}
podDisruptionBudget: {enabled: true, minAvailable: 50%}
jobs: {admissionPolicies: {mutating: false, validating: false}}
config:
  singleClusterPreemptionTimeout: 45s
  leaderElection: {enabled: true}
serviceAccount: {create: true, name: baton-shim, annotations: {example.com/owner: batch}}
EOF

# --- 2. lint
for v in "mode=manager" "mode=worker"; do
    say "helm lint --strict --set $v"
    "$helm" lint --strict "$chart" --namespace "$ns" --set "$v" >"$out/lint.log" 2>&1 || { cat "$out/lint.log" >&2; die "helm lint --set $v"; }
done
for f in full-manager full-worker; do
    say "helm lint --strict -f $f.yaml"
    "$helm" lint --strict "$chart" --namespace "$ns" -f "$out/values/$f.yaml" >"$out/lint.log" 2>&1 || { cat "$out/lint.log" >&2; die "helm lint -f $f.yaml"; }
done

# --- 3. render
render() { # name, then helm template arguments
    local name=$1; shift
    say "helm template: $name"
    "$helm" template baton "$chart" --namespace "$ns" "$@" >"$out/$name.yaml" 2>"$out/$name.err" ||
        { cat "$out/$name.err" >&2; die "helm template ($name) failed"; }
}
render manager --set mode=manager
render worker --set mode=worker
render worker-access --set mode=worker --set managerAccess.enabled=true
render full-manager -f "$out/values/full-manager.yaml"
render full-worker -f "$out/values/full-worker.yaml"
render manager-include-crds --set mode=manager --include-crds
# A cluster that serves the v1 MutatingAdmissionPolicy (Kubernetes >= 1.36): mutating=auto installs it.
render worker-map-served --set mode=worker --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy

# NOTES.txt: `helm template` renders but does not print it; a copy of the chart prints it
# as a ConfigMap, so that it can be checked for unset values.
notes_chart="$out/notes-chart"
cp -r "$chart" "$notes_chart"
{ echo '{{- define "baton.lintNotes" }}'; cat "$chart/templates/NOTES.txt"; echo '{{- end }}'; } >"$notes_chart/templates/_lint_notes.tpl"
printf '%s\n' 'apiVersion: v1' 'kind: ConfigMap' 'metadata: {name: notes}' 'data:' '  notes: |' \
    '    {{- include "baton.lintNotes" . | nindent 4 }}' >"$notes_chart/templates/lint-notes.yaml"
for f in manager worker-access worker-map-served full-manager full-worker; do
    case $f in
        manager) args=(--set mode=manager) ;;
        worker-map-served) args=(--set mode=worker --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy) ;;
        worker-access) args=(--set mode=worker --set managerAccess.enabled=true) ;;
        *) args=(-f "$out/values/$f.yaml") ;;
    esac
    "$helm" template baton "$notes_chart" --namespace "$ns" "${args[@]}" --show-only templates/lint-notes.yaml \
        >"$out/values/notes-$f.txt" 2>&1 || { cat "$out/values/notes-$f.txt" >&2; die "NOTES.txt ($f) does not render"; }
    ! grep -q '<no value>' "$out/values/notes-$f.txt" || die "NOTES.txt ($f) prints <no value>"
    grep -q "kubectl -n $ns rollout status" "$out/values/notes-$f.txt" || die "NOTES.txt ($f) lacks the rollout check"
    grep -q "spec.suspend: true" "$out/values/notes-$f.txt" || die "NOTES.txt ($f) does not say that queued Jobs start suspended"
done
rm -rf "$notes_chart"

# --- 4. check what was rendered
python3 -c 'import yaml' 2>/dev/null || {
    # PyYAML, from PyPI, into the tools cache when the machine lacks it.
    pydir="${BATON_TOOLS_CACHE:-${HOME:-/tmp}/.cache/baton-tools}/pyyaml"
    if ! PYTHONPATH="$pydir" python3 -c 'import yaml' 2>/dev/null; then
        say "installing PyYAML into $pydir"
        python3 -m pip install --quiet --disable-pip-version-check --target "$pydir" pyyaml >&2 || die "cannot install PyYAML"
    fi
    export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
}
say "checking the rendered manifests"
python3 - "$out" "$ns" <<'EOF' || die "rendered manifests are not valid (see above)"
import glob, json, os, re, sys
import yaml

out, ns = sys.argv[1], sys.argv[2]
errors = []

def err(scenario, msg):
    errors.append(f"{scenario}: {msg}")

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
LABEL_KEY_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
POLICY_KINDS = {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
                "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
                  "PriorityClass"} | POLICY_KINDS
QUEUED = "has(object.metadata.labels) && 'kueue.x-k8s.io/queue-name' in object.metadata.labels"
JOB_RULES = [{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"], "operations": ["CREATE"]}]
# Kinds whose names must be DNS-1123 labels (63 characters) rather than subdomains.
LABEL_NAMED = {"Service", "Deployment", "Namespace"}
CONFIG_FIELDS = {
    "apiVersion", "kind", "orchestratedPreemption", "singleClusterPreemptionTimeout",
    "workerLostTimeout", "gcInterval", "origin", "dispatcher", "workerClient",
    "allowInsecureKubeconfigs", "leaderElection", "metricsBindAddress", "healthProbeBindAddress",
    "ungatingPolicy", "releaseOnFailure", "leastDisruptionWindow", "integrations", "multiKueue",
}
GO_DURATION = re.compile(r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$")
DURATION_FIELDS = ["singleClusterPreemptionTimeout", "workerLostTimeout", "gcInterval"]

# What each scenario must contain (kind -> count) and must not contain.
EXPECT = {
    "manager": ({"ServiceAccount": 1, "ConfigMap": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
                 "Role": 1, "RoleBinding": 1, "Service": 1, "Deployment": 1,
                 "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1},
                {"ServiceMonitor", "PodDisruptionBudget", "Secret", "CustomResourceDefinition",
                 "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}),
    "worker": ({"ServiceAccount": 1, "ConfigMap": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
                "Role": 1, "RoleBinding": 1, "Service": 1, "Deployment": 1,
                "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1},
               {"ServiceMonitor", "PodDisruptionBudget", "Secret", "CustomResourceDefinition",
                "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}),
    "worker-map-served": ({k: 1 for k in POLICY_KINDS}, set()),
    "worker-access": ({"ServiceAccount": 2, "Secret": 1, "ClusterRole": 2, "ClusterRoleBinding": 2,
                       "Role": 1, "RoleBinding": 1, "Deployment": 1}, {"CustomResourceDefinition"}),
    "full-manager": ({"ServiceAccount": 2, "Secret": 1, "ClusterRole": 2, "ClusterRoleBinding": 2,
                      "Role": 1, "RoleBinding": 1, "ServiceMonitor": 1, "PodDisruptionBudget": 1,
                      "CustomResourceDefinition": 8, "Deployment": 1,
                      **{k: 1 for k in POLICY_KINDS}}, set()),
    "full-worker": ({"ServiceAccount": 2, "Secret": 1, "ClusterRole": 2, "ClusterRoleBinding": 2,
                     "ServiceMonitor": 1, "PodDisruptionBudget": 1, "CustomResourceDefinition": 8,
                     "Deployment": 1}, POLICY_KINDS),
    "manager-include-crds": ({"CustomResourceDefinition": 8, "Deployment": 1}, set()),
}

def crds_on_disk():
    crds = {}
    for path in sorted(glob.glob("crds/yaml/*.yaml")):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    crds[doc["metadata"]["name"]] = doc
    return crds

CRDS = crds_on_disk()

def check_labels(scenario, where, labels):
    if labels is None:
        return
    if not isinstance(labels, dict):
        err(scenario, f"{where}: labels must be a map")
        return
    for k, v in labels.items():
        name = k.split("/", 1)[-1]
        if not isinstance(v, str):
            err(scenario, f"{where}: label {k} has a non-string value {v!r}")
        elif len(v) > 63 or not LABEL_VALUE.match(v):
            err(scenario, f"{where}: label {k}={v!r} is not a valid label value")
        if len(name) > 63 or not LABEL_KEY_NAME.match(name):
            err(scenario, f"{where}: label key {k!r} is not valid")

def matches(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())

def rule_grants(rules, group, resource):
    return [r for r in rules or [] if group in r.get("apiGroups", []) and
            (resource in r.get("resources", []) or "*" in r.get("resources", []))]

for path in sorted(glob.glob(os.path.join(out, "*.yaml"))):
    scenario = os.path.basename(path)[:-5]
    try:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        err(scenario, f"does not parse as YAML: {e}")
        continue
    objects, seen = [], set()
    for i, doc in enumerate(docs):
        where = f"document {i + 1}"
        if not isinstance(doc, dict):
            err(scenario, f"{where} is not a mapping")
            continue
        for key in ("apiVersion", "kind"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                err(scenario, f"{where} has no {key}")
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            err(scenario, f"{where} ({doc.get('kind')}) has no metadata.name")
            continue
        kind, name = doc.get("kind"), meta["name"]
        where = f"{kind}/{name}"
        limit, pattern = (63, DNS1123_LABEL) if kind in LABEL_NAMED else (253, DNS1123_SUBDOMAIN)
        if len(name) > limit or not pattern.match(name):
            err(scenario, f"{where}: name is not a valid {'DNS-1123 label' if limit == 63 else 'DNS-1123 subdomain'}")
        if kind in CLUSTER_SCOPED:
            if "namespace" in meta:
                err(scenario, f"{where}: a cluster-scoped object has a namespace")
        elif meta.get("namespace") != ns:
            err(scenario, f"{where}: namespace is {meta.get('namespace')!r}, not the release namespace {ns!r}")
        check_labels(scenario, where, meta.get("labels"))
        for k, v in (meta.get("annotations") or {}).items():
            if not isinstance(v, str):
                err(scenario, f"{where}: annotation {k} has a non-string value {v!r}")
        group = doc["apiVersion"].split("/")[0] if "/" in doc.get("apiVersion", "") else ""
        key = (group, kind, meta.get("namespace"), name)
        if key in seen:
            err(scenario, f"{where}: rendered twice")
        seen.add(key)
        objects.append(doc)

    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    must, must_not = EXPECT.get(scenario, ({}, set()))
    for kind, count in must.items():
        if len(by_kind.get(kind, [])) != count:
            err(scenario, f"expected {count} {kind}, rendered {len(by_kind.get(kind, []))}")
    for kind in must_not:
        if by_kind.get(kind):
            err(scenario, f"must not render a {kind}")
    names = lambda kind: {o["metadata"]["name"] for o in by_kind.get(kind, [])}

    for dep in by_kind.get("Deployment", []):
        where = f"Deployment/{dep['metadata']['name']}"
        spec = dep.get("spec", {})
        pod = spec.get("template", {})
        pod_labels = pod.get("metadata", {}).get("labels", {})
        check_labels(scenario, where + " pod", pod_labels)
        if not matches(spec.get("selector", {}).get("matchLabels"), pod_labels):
            err(scenario, f"{where}: selector does not match the pod labels")
        pspec = pod.get("spec", {})
        sa = pspec.get("serviceAccountName")
        if sa not in names("ServiceAccount"):
            err(scenario, f"{where}: serviceAccountName {sa!r} is not rendered")
        psc = pspec.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True or psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            err(scenario, f"{where}: pod securityContext is not hardened: {psc}")
        volumes = {v["name"]: v for v in pspec.get("volumes", [])}
        for v in volumes.values():
            if "configMap" in v and v["configMap"]["name"] not in names("ConfigMap"):
                err(scenario, f"{where}: volume {v['name']} uses a ConfigMap that is not rendered")
        containers = pspec.get("containers", [])
        if len(containers) != 1:
            err(scenario, f"{where}: expected one container")
        for c in containers:
            cw = f"{where} container {c.get('name')}"
            sc = c.get("securityContext", {})
            hardened = (sc.get("runAsNonRoot") is True and isinstance(sc.get("runAsUser"), int)
                        and sc["runAsUser"] > 0 and sc.get("readOnlyRootFilesystem") is True
                        and sc.get("allowPrivilegeEscalation") is False
                        and sc.get("capabilities", {}).get("drop") == ["ALL"]
                        and sc.get("seccompProfile", {}).get("type") == "RuntimeDefault")
            if not hardened:
                err(scenario, f"{cw}: securityContext is not hardened: {sc}")
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
                get = c.get(probe, {}).get("httpGet", {})
                if get.get("path") != path or get.get("port") != "health" or "health" not in ports:
                    err(scenario, f"{cw}: {probe} is not {path} on the health port")
            args = c.get("args", [])
            mode = pod_labels.get("app.kubernetes.io/component")
            if not args or args[0] != mode or args[1:3] != ["--config", "/etc/baton/config.yaml"]:
                err(scenario, f"{cw}: args {args} do not start with `{mode} --config /etc/baton/config.yaml`")
            if "--namespace" not in args or args[args.index("--namespace") + 1] != ns:
                err(scenario, f"{cw}: args do not pass --namespace {ns}")
            env = {e["name"]: e for e in c.get("env", [])}
            for var, field in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")):
                if env.get(var, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != field:
                    err(scenario, f"{cw}: {var} does not come from {field}")
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    err(scenario, f"{cw}: mount {m['name']} has no volume")
            if not c.get("resources", {}).get("requests"):
                err(scenario, f"{cw}: no resource requests")
            for cm in by_kind.get("ConfigMap", []):
                dashboard = cm.get("data", {}).get("baton.json")
                if dashboard is not None:
                    # The Grafana dashboard (grafanaDashboard.enabled): JSON with panels.
                    if cm["metadata"].get("labels", {}).get("grafana_dashboard") != "1":
                        err(scenario, f"ConfigMap/{cm['metadata']['name']}: no grafana_dashboard label")
                    try:
                        if not json.loads(dashboard).get("panels"):
                            err(scenario, "the dashboard has no panels")
                    except ValueError as e:
                        err(scenario, f"the dashboard is not JSON: {e}")
                    continue
                text = cm.get("data", {}).get("config.yaml")
                if text is None:
                    err(scenario, f"ConfigMap/{cm['metadata']['name']}: no config.yaml")
                    continue
                config = yaml.safe_load(text)
                if not isinstance(config, dict):
                    err(scenario, "config.yaml is not a mapping")
                    continue
                unknown = set(config) - CONFIG_FIELDS
                if unknown:
                    err(scenario, f"config.yaml has fields baton does not read: {sorted(unknown)}")
                for field in DURATION_FIELDS:
                    if field in config and not (isinstance(config[field], str) and GO_DURATION.match(config[field])):
                        err(scenario, f"config.yaml: {field} is not a duration string: {config[field]!r}")
                for field, port in (("metricsBindAddress", "metrics"), ("healthProbeBindAddress", "health")):
                    addr = str(config.get(field, ""))
                    if not addr.endswith(f":{ports.get(port)}"):
                        err(scenario, f"config.yaml: {field} {addr!r} is not the container's {port} port {ports.get(port)}")
            if pod.get("metadata", {}).get("annotations", {}).get("checksum/config") is None:
                err(scenario, f"{where}: no checksum/config pod annotation")

        for svc in by_kind.get("Service", []):
            sw = f"Service/{svc['metadata']['name']}"
            if not matches(svc["spec"].get("selector"), pod_labels):
                err(scenario, f"{sw}: selector does not select the pods")
            for p in svc["spec"].get("ports", []):
                if isinstance(p.get("targetPort"), str) and p["targetPort"] not in {q["name"] for c in containers for q in c.get("ports", [])}:
                    err(scenario, f"{sw}: targetPort {p['targetPort']} is not a container port")
        for pdb in by_kind.get("PodDisruptionBudget", []):
            if not matches(pdb["spec"].get("selector", {}).get("matchLabels"), pod_labels):
                err(scenario, "PodDisruptionBudget does not select the pods")
            if spec.get("replicas", 1) < 2:
                err(scenario, "PodDisruptionBudget rendered for a single replica")

    for sm in by_kind.get("ServiceMonitor", []):
        if sm.get("apiVersion") != "monitoring.coreos.com/v1":
            err(scenario, f"ServiceMonitor apiVersion {sm.get('apiVersion')}")
        svcs = [s for s in by_kind.get("Service", []) if matches(sm["spec"]["selector"].get("matchLabels"), s["metadata"].get("labels", {}))]
        if len(svcs) != 1:
            err(scenario, f"ServiceMonitor selects {len(svcs)} Services, not 1")
        for e in sm["spec"].get("endpoints", []):
            if svcs and e.get("port") not in {p["name"] for p in svcs[0]["spec"]["ports"]}:
                err(scenario, f"ServiceMonitor endpoint port {e.get('port')} is not a Service port")

    for kind, role_kind in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
        for b in by_kind.get(kind, []):
            bw = f"{kind}/{b['metadata']['name']}"
            ref = b.get("roleRef", {})
            if ref.get("kind") != role_kind or ref.get("apiGroup") != "rbac.authorization.k8s.io" or ref.get("name") not in names(role_kind):
                err(scenario, f"{bw}: roleRef {ref} is not a rendered {role_kind}")
            for s in b.get("subjects", []):
                if s.get("kind") != "ServiceAccount" or s.get("name") not in names("ServiceAccount") or s.get("namespace") != ns:
                    err(scenario, f"{bw}: subject {s} is not a rendered ServiceAccount")
    # Secrets: never through a ClusterRole; the manager reads them in its namespace only;
    # the worker shim not at all.
    for cr in by_kind.get("ClusterRole", []):
        if rule_grants(cr.get("rules"), "", "secrets"):
            err(scenario, f"ClusterRole/{cr['metadata']['name']} grants Secrets")
        for r in cr.get("rules", []):
            if "*" in r.get("verbs", []) or "*" in r.get("resources", []) or "*" in r.get("apiGroups", []):
                err(scenario, f"ClusterRole/{cr['metadata']['name']} has a wildcard rule {r}")
    for role in by_kind.get("Role", []):
        component = role["metadata"].get("labels", {}).get("app.kubernetes.io/component")
        grants = rule_grants(role.get("rules"), "", "secrets")
        if component == "worker" and grants:
            err(scenario, f"Role/{role['metadata']['name']}: the worker must not read Secrets")
        if component == "manager" and (not grants or set(grants[0]["verbs"]) != {"get", "list", "watch"}):
            err(scenario, f"Role/{role['metadata']['name']}: the manager must read (only) Secrets of its namespace")
        if not rule_grants(role.get("rules"), "coordination.k8s.io", "leases"):
            err(scenario, f"Role/{role['metadata']['name']}: no Lease access for leader election")

    for s in by_kind.get("Secret", []):
        sw = f"Secret/{s['metadata']['name']}"
        if s.get("type") != "kubernetes.io/service-account-token":
            err(scenario, f"{sw}: unexpected type {s.get('type')}")
        sa = s["metadata"].get("annotations", {}).get("kubernetes.io/service-account.name")
        if sa not in names("ServiceAccount"):
            err(scenario, f"{sw}: names ServiceAccount {sa!r}, which is not rendered")
        if s.get("data") or s.get("stringData"):
            err(scenario, f"{sw}: a token Secret must be left for the token controller to fill")

    # Job admission policies: CREATE of batch/v1 jobs, queued ones only, failing closed, bound
    # by name; the mutating one sets spec.suspend and nothing else.
    for kind in ("MutatingAdmissionPolicy", "ValidatingAdmissionPolicy"):
        for p in by_kind.get(kind, []):
            pw = f"{kind}/{p['metadata']['name']}"
            spec = p.get("spec", {})
            if p.get("apiVersion") != "admissionregistration.k8s.io/v1":
                err(scenario, f"{pw}: apiVersion {p.get('apiVersion')}")
            if spec.get("matchConstraints", {}).get("resourceRules") != JOB_RULES:
                err(scenario, f"{pw}: matches {spec.get('matchConstraints')}, not CREATE of batch/v1 jobs")
            if [c.get("expression") for c in spec.get("matchConditions", [])] != [QUEUED]:
                err(scenario, f"{pw}: matchConditions {spec.get('matchConditions')} do not select queued Jobs")
            if spec.get("failurePolicy") != "Fail":
                err(scenario, f"{pw}: failurePolicy is not Fail")
            if spec.get("paramKind"):
                err(scenario, f"{pw}: takes no parameters")
            bindings = [b for b in by_kind.get(kind + "Binding", []) if b["spec"].get("policyName") == p["metadata"]["name"]]
            if len(bindings) != 1:
                err(scenario, f"{pw}: bound {len(bindings)} times")
            if kind == "MutatingAdmissionPolicy":
                if spec.get("reinvocationPolicy") != "Never":
                    err(scenario, f"{pw}: reinvocationPolicy is not Never")
                if spec.get("mutations") != [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{spec: Object.spec{suspend: true}}"}}]:
                    err(scenario, f"{pw}: mutations {spec.get('mutations')} do not set spec.suspend")
            else:
                vals = spec.get("validations", [])
                if len(vals) != 1 or "suspend" not in vals[0].get("expression", ""):
                    err(scenario, f"{pw}: validations {vals} do not check spec.suspend")
                elif "\n" in vals[0].get("message", "") or "spec.suspend: true" not in vals[0].get("message", ""):
                    err(scenario, f"{pw}: the message must be one line that says to set spec.suspend: true")
    for kind in ("MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"):
        for b in by_kind.get(kind, []):
            if b["spec"].get("policyName") not in names(kind[:-len("Binding")]):
                err(scenario, f"{kind}/{b['metadata']['name']}: binds {b['spec'].get('policyName')!r}, which is not rendered")
            if kind.startswith("Validating") and b["spec"].get("validationActions") != ["Deny"]:
                err(scenario, f"{kind}/{b['metadata']['name']}: validationActions are not [Deny]")

    for crd in by_kind.get("CustomResourceDefinition", []):
        name = crd["metadata"]["name"]
        if name not in CRDS:
            err(scenario, f"CRD {name} is not one of crds/yaml/")
        elif crd.get("spec") != CRDS[name].get("spec"):
            err(scenario, f"CRD {name}: spec differs from crds/yaml/")

if errors:
    for e in errors:
        print(f"  - {e}", file=sys.stderr)
    sys.exit(1)
print(f"chart-lint: {len(glob.glob(os.path.join(out, '*.yaml')))} scenarios checked")
EOF

# --- 5. values that must be refused
refuse() { # reason, then helm arguments
    local reason=$1; shift
    if "$helm" template baton "$chart" --namespace "$ns" "$@" >/dev/null 2>"$out/refused.err"; then
        die "accepted $* (must be refused: $reason)"
    fi
}
say "checking that bad values are refused"
refuse "mode enum" --set mode=scheduler
refuse "durations are strings" --set config.singleClusterPreemptionTimeout=300
refuse "durations are Go durations" --set config.singleClusterPreemptionTimeout=soon
refuse "timeout must be positive" --set-string config.singleClusterPreemptionTimeout=0s
refuse "unknown config field" --set config.singleClusterPreemptionTimout=5m
refuse "bind addresses follow ports" --set config.metricsBindAddress=:9090
refuse "dispatcher enum" --set config.dispatcher.name=Sometimes
refuse "origin is a label value" --set config.origin=-bad-
refuse "qps must be positive" --set-string config.workerClient.qps=0
refuse "replicas > 1 needs leader election" --set replicas=2 --set config.leaderElection.enabled=false
refuse "ports must differ" --set ports.metrics=8080 --set ports.health=8080
refuse "unknown top-level value" --set replicaCount=2
refuse "serviceAccount.name needed" --set serviceAccount.create=false
refuse "mutating policy: auto, true or false" --set jobs.admissionPolicies.mutating=sometimes
refuse "validating policy: a boolean" --set-string jobs.admissionPolicies.validating=yes
refuse "unknown jobs value" --set jobs.suspend=true

say "OK ($(ls "$out"/*.yaml | wc -l) renders in $out)"
