#!/usr/bin/env bash
# Fails if crates/runtime/protowire/src/generated.rs is not exactly what
# hack/tools/protogen generates from the pinned Go types (the diff is printed); run
# hack/update-protowire.sh then. Called by hack/test.sh (with the lints).
set -euo pipefail
cd "$(dirname "$0")/.."
out=crates/runtime/protowire/src/generated.rs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-protowire.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash hack/lib/protogen.sh "$tmp/generated.rs"
if diff -u "$out" "$tmp/generated.rs"; then
  echo "verify-protowire: $out is up to date with hack/tools/protogen."
else
  echo "verify-protowire: $out is stale ('-' checked in, '+' generated): run hack/update-protowire.sh." >&2
  exit 1
fi
