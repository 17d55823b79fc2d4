#!/usr/bin/env bash
# hack/lib/protogen.sh DIR: runs hack/tools/protogen and writes its Rust, formatted, to
# DIR/generated.rs (the decoders, `-emit decoders`) and DIR/generated_encode.rs (the
# encoders, `-emit encoders`). Built with the flags hack/control-plane.sh builds
# Kubernetes with (CGO off, -trimpath, no DWARF), so the k8s.io/api packages come from
# the Go build cache that build filled instead of compiling again.
set -euo pipefail
dir=$1
if ! command -v go >/dev/null 2>&1; then
  echo "protogen: 'go' is not installed: cannot generate (or verify) the protobuf decoders and encoders; install Go >= 1.26" >&2
  exit 1
fi
cd "$(dirname "${BASH_SOURCE[0]}")/../tools/protogen"
bin=$(mktemp "${TMPDIR:-/tmp}/protogen.XXXXXX")
trap 'rm -f "$bin"' EXIT
CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" go build -trimpath -gcflags=all=-dwarf=false -o "$bin" .
"$bin" -emit decoders | rustfmt --edition 2024 >"$dir/generated.rs"
"$bin" -emit encoders | rustfmt --edition 2024 >"$dir/generated_encode.rs"
