#!/usr/bin/env bash
# Checks an image archive written by hack/build-image.sh: its config (entrypoint, user,
# labels), its contents, and that the binary runs from the unpacked root filesystem alone
# (chroot, empty environment): `baton --version` and `baton crds`.
#
#   hack/check-image.sh target/container-image/baton-0.1.0.oci.tar
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "check-image: $*" >&2; }
die() { say "error: $*"; exit 1; }

archive="${1:?usage: $0 ARCHIVE}"
[[ -s "$archive" ]] || die "$archive not found"
command -v umoci >/dev/null || die "umoci not found: apt-get install umoci"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/layout"
tar -C "$work/layout" -xf "$archive"
tag=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])' "$work/layout/index.json")

# The image config, as a runtime reads it.
python3 - "$work/layout" <<'PY'
import json, os, sys
layout = sys.argv[1]
blob = lambda d: os.path.join(layout, "blobs", *d.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
manifest = json.load(open(blob(index["manifests"][0]["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
c = config.get("config", {})
problems = []
def expect(what, got, want):
    if got != want:
        problems.append(f"{what}: expected {want!r}, got {got!r}")
expect("entrypoint", c.get("Entrypoint"), ["/baton"])
expect("user", c.get("User"), "65532:65532")
expect("os", config.get("os"), "linux")
expect("architecture", config.get("architecture"), "amd64")
labels = c.get("Labels") or {}
for key in ["org.opencontainers.image.source", "org.opencontainers.image.version",
            "org.opencontainers.image.licenses", "org.opencontainers.image.title"]:
    if not labels.get(key):
        problems.append(f"label {key} missing")
layers = manifest.get("layers", [])
expect("layer count", len(layers), 1)
size = sum(l["size"] for l in layers)
print(f"check-image: config ok: entrypoint {c.get('Entrypoint')}, user {c.get('User')}, "
      f"{len(labels)} labels; {len(layers)} layer(s), {size / 1e6:.1f} MB compressed", file=sys.stderr)
if problems:
    sys.exit("check-image: error: " + "; ".join(problems))
PY

umoci unpack --rootless --image "$work/layout:$tag" "$work/bundle" >/dev/null
rootfs="$work/bundle/rootfs"
files=$(cd "$rootfs" && find . -type f | sort | tr '\n' ' ')
expected="./baton ./etc/group ./etc/passwd ./etc/ssl/certs/ca-certificates.crt "
[[ "$files" == "$expected" ]] || die "unexpected files in the image: $files"
say "root filesystem: $(du -sh "$rootfs" | cut -f1) ($files)"

# Run from the image's files alone: chroot when we may, else the binary with an empty
# environment (it is static, so it loads nothing from the host either way).
run() {
    local chroot_bin
    chroot_bin=$(command -v chroot || true)
    if [[ $(id -u) -eq 0 && -n "$chroot_bin" ]]; then
        env -i "$chroot_bin" --userspec=65532:65532 "$rootfs" /baton "$@"
    else
        env -i "$rootfs/baton" "$@"
    fi
}
version=$(run --version)
say "baton --version: $version"
crds=$(run crds)
count=$(grep -c '^kind: CustomResourceDefinition$' <<<"$crds" || true)
[[ "$count" -eq 8 ]] || die "baton crds printed $count CRDs, expected 8"
say "baton crds: $count CRDs"
echo "check-image: ok"
