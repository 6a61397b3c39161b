#!/usr/bin/env bash
# Regenerates the committed CRD YAML under crds/yaml/ from the Rust API types.
# Run after changing anything in crds/src/; the drift test fails until you do. The Helm
# chart carries byte-identical copies (charts/baton/crds/), refreshed here too.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f crds/yaml/*.yaml
cargo run --quiet -p baton -- crds --out crds/yaml
bash "$(dirname "$0")/chart-sync-crds.sh"
