#!/usr/bin/env bash
# The runtime crates (and testenv, a dev-dependency) are what a project outside this
# repository builds on (a `kcr init` project names them as path, git or registry
# dependencies). Fails when one of them could not be published: a package without its
# metadata, a dependency without a version, a file the crate needs left out of the
# package. `cargo package` takes them in dependency order.
#
# --no-verify: verifying builds every package again from its tarball against the others
# (a second build of the whole dependency graph, minutes on 2 cores); the scaffold e2e
# (cmd/kcr/tests) builds a project on these crates anyway. Run it by hand with VERIFY=1.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every package that says `publish = true`; each must be named kcr-*.
mapfile -t packages < <(cargo metadata --no-deps --format-version 1 --locked |
  jq -r '.packages[] | select(.publish == null) | .name')
[ "${#packages[@]}" -gt 0 ] || { echo "verify-package: no publishable package found" >&2; exit 1; }
args=()
for p in "${packages[@]}"; do
  case $p in
    kcr-*) args+=(-p "$p") ;;
    *) echo "verify-package: $p is publishable but not named kcr-* (one prefix for all)" >&2; exit 1 ;;
  esac
done
verify=(--no-verify --exclude-lockfile)
[ "${VERIFY:-0}" = 1 ] && verify=()
cargo package "${args[@]}" "${verify[@]}" --allow-dirty --quiet
echo "verify-package: ${#packages[@]} crates package cleanly: ${packages[*]}"
