#!/usr/bin/env bash
# Regenerates crates/runtime/protowire/src/generated.rs (protobuf decoders into
# k8s-openapi's structs) from the Go types of the pinned release with
# hack/tools/protogen. hack/verify-protowire.sh checks the file is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
out=crates/runtime/protowire/src/generated.rs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/protogen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bash hack/lib/protogen.sh "$tmp/generated.rs"
mv "$tmp/generated.rs" "$out"
echo "update-protowire: wrote $out"
