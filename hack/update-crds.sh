#!/usr/bin/env bash
# Regenerate deploy/crds/*.yaml from the Rust types in crates/controllers/apis
# (the analogue of controller-gen / code-generator's update-codegen.sh).
# Run it after changing a type in crates/controllers/apis; commit the result.
set -euo pipefail
cd "$(dirname "$0")/.."

out_dir=deploy/crds
mkdir -p "$out_dir"
# Every file in deploy/crds is generated: clear it so a removed CRD disappears.
rm -f "$out_dir"/*.yaml
cargo run --quiet -p crdgen-bin -- --out-dir "$out_dir"
