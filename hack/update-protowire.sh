#!/usr/bin/env bash
# Regenerates crates/runtime/protowire/src/generated.rs (protobuf decoders into
# k8s-openapi's structs) and generated_encode.rs (encoders from them) from the Go types
# of the pinned release with hack/tools/protogen. hack/verify-protowire.sh checks the
# files are up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
src=crates/runtime/protowire/src
tmp=$(mktemp -d "${TMPDIR:-/tmp}/protogen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash hack/lib/protogen.sh "$tmp"
for file in generated.rs generated_encode.rs; do
  mv "$tmp/$file" "$src/$file"
  echo "update-protowire: wrote $src/$file"
done
