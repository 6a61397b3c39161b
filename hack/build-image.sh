#!/usr/bin/env bash
# Builds Baton's container image: the `baton` binary, statically linked (glibc with
# `-C target-feature=+crt-static`: no libc needed at run time; names resolve from /etc/hosts
# and DNS with glibc's built-in files and dns lookups), on an empty base with CA certificates
# for worker API servers' TLS, running as UID/GID 65532 (the chart's securityContext),
# entrypoint /baton.
#
#   hack/build-image.sh [--name NAME] [--tag TAG] [--out DIR] [--docker | --oci]
#
# NAME defaults to the chart's image.repository (where a release would be published), TAG to
# the workspace version (the chart's appVersion), so the chart's defaults find the image.
# With a Docker daemon (`docker info` answers) it runs `docker build` on the Dockerfile.
# Without one (or with --oci) it assembles the same single-layer image with umoci (Debian
# package `umoci`) and writes an OCI archive, DIR/baton-TAG.oci.tar (DIR defaults to
# target/container-image), and, when skopeo is installed, the same image as a docker archive,
# DIR/baton-TAG.docker.tar (for `kind load image-archive` and `docker load`). Either way it
# prints the image reference and the manifest digest. The daemonless build needs nothing but
# this toolchain, umoci and ca-certificates.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "build-image: $*" >&2; }
die() { say "error: $*"; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
source_url=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)
licence=$(sed -n 's/^license = "\(.*\)"/\1/p' Cargo.toml | head -1)
name=$(sed -n 's/^  repository: \(.*\)$/\1/p' charts/baton/values.yaml | head -1)
tag="$version"
out="target/container-image"
mode=auto
while [[ $# -gt 0 ]]; do
    case "$1" in
        --name) name="$2"; shift 2 ;;
        --tag) tag="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --docker) mode=docker; shift ;;
        --oci) mode=oci; shift ;;
        *) die "unknown argument $1 (see the comment at the top of $0)" ;;
    esac
done
[[ -n "$version" ]] || die "no workspace version in Cargo.toml"
[[ -n "$name" ]] || die "no image.repository in charts/baton/values.yaml"

if [[ "$mode" == auto ]]; then
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then mode=docker; else mode=oci; fi
fi

if [[ "$mode" == docker ]]; then
    docker build --build-arg "VERSION=$version" --build-arg "SOURCE=$source_url" \
        --build-arg "LICENSE=$licence" -t "$name:$tag" .
    echo "image: $name:$tag"
    echo "digest: $(docker image inspect --format '{{.Id}}' "$name:$tag")"
    exit 0
fi

# The target is named so that the static flag reaches only the binary, not build scripts.
target=x86_64-unknown-linux-gnu
command -v umoci >/dev/null || die "umoci not found: apt-get install umoci"
certs=/etc/ssl/certs/ca-certificates.crt
[[ -s "$certs" ]] || die "$certs not found: apt-get install ca-certificates"

say "building the static binary (cargo build --profile image --target $target, crt-static)"
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --profile image --locked -p baton --target "$target" >&2
binary="${CARGO_TARGET_DIR:-target}/$target/image/baton"
if readelf -l "$binary" 2>/dev/null | grep -q 'Requesting program interpreter'; then
    die "$binary is dynamically linked"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layout="$work/layout"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --rootless --image "$layout:$tag" "$work/bundle" >/dev/null
rootfs="$work/bundle/rootfs"
install -D -m 0755 "$binary" "$rootfs/baton"
install -D -m 0644 "$certs" "$rootfs/etc/ssl/certs/ca-certificates.crt"
# Names for the UID and GID, for tools that look them up; nothing else is in the image.
install -d -m 0755 "$rootfs/etc"
printf 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'nonroot:x:65532:\n' > "$rootfs/etc/group"
chmod 0644 "$rootfs/etc/passwd" "$rootfs/etc/group"
umoci repack --image "$layout:$tag" "$work/bundle"
umoci config --image "$layout:$tag" --no-history \
    --os linux --architecture amd64 \
    --config.entrypoint /baton \
    --config.user 65532:65532 \
    --config.workingdir / \
    --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    --config.env MIMALLOC_PURGE_DELAY=0 \
    --config.label "org.opencontainers.image.title=baton" \
    --config.label "org.opencontainers.image.description=Kueue-style multi-cluster preemption orchestrator (manager and worker shim)" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.source=$source_url" \
    --config.label "org.opencontainers.image.licenses=$licence"
umoci gc --layout "$layout"

mkdir -p "$out"
archive="$out/baton-$tag.oci.tar"
tar -C "$layout" -cf "$archive" .
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
echo "image: $name:$tag"
echo "digest: $digest"
echo "oci archive: $archive ($(stat -c %s "$archive") bytes)"
if command -v skopeo >/dev/null; then
    docker_archive="$out/baton-$tag.docker.tar"
    rm -f "$docker_archive"
    skopeo copy --quiet "oci-archive:$archive:$tag" "docker-archive:$docker_archive:$name:$tag"
    echo "docker archive: $docker_archive"
fi
