#!/usr/bin/env bash
# Copies the generated CRDs (crds/yaml/, see hack/gen-crds.sh) into the Helm chart's crds/
# directory, which must hold exactly the same files (e2e/tests/chart.rs and
# hack/chart-lint.sh check it). Run after hack/gen-crds.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -f charts/baton/crds/*.yaml
cp crds/yaml/*.yaml charts/baton/crds/
echo "copied $(ls crds/yaml/*.yaml | wc -l) CRDs into charts/baton/crds/"
