#!/usr/bin/env bash
# Fails if crates/runtime/protowire/src/generated.rs or generated_encode.rs is not
# exactly what hack/tools/protogen generates from the pinned Go types (the diff is
# printed); run hack/update-protowire.sh then. Called by hack/test.sh (with the lints).
set -euo pipefail
cd "$(dirname "$0")/.."
src=crates/runtime/protowire/src
tmp=$(mktemp -d "${TMPDIR:-/tmp}/verify-protowire.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash hack/lib/protogen.sh "$tmp"
stale=0
for file in generated.rs generated_encode.rs; do
  if diff -u "$src/$file" "$tmp/$file"; then
    echo "verify-protowire: $src/$file is up to date with hack/tools/protogen."
  else
    echo "verify-protowire: $src/$file is stale ('-' checked in, '+' generated): run hack/update-protowire.sh." >&2
    stale=1
  fi
done
exit "$stale"
