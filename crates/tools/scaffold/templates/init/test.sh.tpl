#!/usr/bin/env bash
# The one test command of {{project_name}}: formatting, lints, manifests up to date, unit
# tests, e2e tests on a real control plane, and Sieve's perturbations of the controllers
# (`kcr sieve`). It does all set-up: `kcr envtest` builds
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
echo "==> the controllers under Sieve's perturbations ($KCR sieve: report in target/sieve/report.md)"
# A crash right after each write, each watch event withheld, on workloads derived from
# deploy/samples and the CRDs' schemas; then a fresh object at the final spec must reach
# the same state. The short pass: one spec change per sample. Restarts onto a lagging API
# server (--only stale) are left out here: the runtime's informers list for the most
# recent state, which a lagging server never serves stale. `kcr sieve --full` runs all.
"$KCR" sieve --max-updates "${KCR_SIEVE_MAX_UPDATES:-1}" --only intermediate,unobserved
