#!/usr/bin/env bash
# Fail if deploy/crds is not exactly what crates/controllers/apis generates
# (the analogue of code-generator's verify-codegen.sh). Called by hack/test.sh.
# Exit 0: up to date. Exit 1: stale (the diff is printed); run hack/update-crds.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

out_dir=deploy/crds
tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-crds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# CRDGEN: an already-built crdgen (hack/test.sh passes target/debug/crdgen from its one
# build; `cargo run -p crdgen-bin` would resolve crdgen-bin's features alone and rebuild).
if [ -n "${CRDGEN:-}" ]; then
  "$CRDGEN" --out-dir "$tmp/crds" >/dev/null
else
  cargo run --quiet --locked -p crdgen-bin -- --out-dir "$tmp/crds" >/dev/null
fi

if diff -Nru "$out_dir" "$tmp/crds"; then
  echo "verify-crds: $out_dir is up to date with crates/controllers/apis."
else
  echo >&2
  echo "verify-crds: $out_dir is stale: it differs from what crates/controllers/apis generates (diff above," >&2
  echo "verify-crds: '-' is the checked-in file, '+' the generated one)." >&2
  echo "verify-crds: run hack/update-crds.sh and commit deploy/crds." >&2
  exit 1
fi
