#!/usr/bin/env bash
# The one test command of guestbook: formatting, lints, manifests up to date, unit
# tests and e2e tests on a real control plane. It does all set-up: `kcr envtest` builds
# (once, then from its cache) etcd, kube-apiserver and kube-controller-manager, as
# controller-runtime's setup-envtest does. KCR names the kcr binary (default: kcr on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
KCR=${KCR:-kcr}

echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo clippy -D warnings"
cargo clippy --all-targets -- -D warnings
echo "==> the manifests are the code's (cargo run --bin manifests -- --check)"
cargo run --quiet --bin manifests -- --check
echo "==> the control plane for the e2e tests ($KCR envtest)"
eval "$("$KCR" envtest)"
echo "==> cargo test (unit tests on the fake API, e2e tests on the control plane)"
cargo test
