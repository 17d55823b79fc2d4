#!/usr/bin/env bash
# The ONE test command (README, .ci/run): formatting, lints, every test.
# It installs what it needs on a fresh machine, so a green run never depends on
# something a developer installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

# --- Disk -------------------------------------------------------------------------
# A full run builds every crate several times over (each `cargo test -p` resolves its
# own feature set, and the demo builds the binaries): with full debuginfo and
# incremental caches that was 22 GB of target/, and a CI machine once ran out of disk
# in the demo. Line tables keep backtraces readable; incremental caches only help
# rebuilds, which a one-shot run never does. Set either variable to override.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"

# --- Rust toolchain -------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found. Install Rust with rustup (https://rustup.rs), then re-run $0." >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
    log "installing rustup component ${component}"
    rustup component add "${component}"
  fi
done

# --- Control-plane binaries for the e2e tests (crates/testenv) ------------------
# Two releases, cached side by side in ~/.cache/kube-controllers-rs/k8s-<version>/bin
# (or KUBEBUILDER_ASSETS): the newest (every e2e suite runs on it) and the oldest we
# support (the cache and Foo e2e suites run on it again at the end). Built with Go on
# a cold machine: about 6 and 7 minutes on 2 cores, plus kwok (docs/testing.md).
log "hack/control-plane.sh build (newest: $(bash hack/control-plane.sh version))"
bash hack/control-plane.sh build
log "hack/control-plane.sh build (oldest: $(K8S_VERSION=oldest bash hack/control-plane.sh version))"
K8S_VERSION=oldest bash hack/control-plane.sh build

# --- QEMU for the VirtualMachine controller's real driver (crates/vm-driver) -------
log "hack/install-qemu.sh"
bash hack/install-qemu.sh

# --- Chromium for the pipeline page's browser test (the sample-controller e2e suite) --
log "hack/install-chromium.sh"
bash hack/install-chromium.sh

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "hack/verify-crds.sh (deploy/crds generated from crates/apis, not stale)"
bash hack/verify-crds.sh

log "cargo doc (every public item documented, no broken links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

log "cargo test (unit, integration, doc tests)"
cargo test --workspace --locked

log "cache informer suites again on the DeltaFIFO (CACHE_TEST_QUEUE=delta; the run above used the default RealFIFO)"
CACHE_TEST_QUEUE=delta cargo test -p cache --locked \
  --test informer --test informer_sync --test informer_watch_list --test informer_freshness \
  --test e2e_informer --test e2e_pager

# Coverage-guided fuzzing of the parsers that read outside input, a few seconds per
# target from the checked-in corpus (docs/reliability.md). Installs cargo-fuzz when
# missing; builds in ~/.cache/kube-controllers-rs/fuzz-target, so a fresh clone on the
# same machine rebuilds only what changed. Longer runs by hand:
# FUZZ_SECONDS=600 bash hack/fuzz.sh <target>.
log "hack/fuzz.sh (every fuzz target, ${FUZZ_SECONDS:-5}s each)"
bash hack/fuzz.sh

# The chaos soak, short: two replicas of every binary with leader election, 200 Foos,
# 40 VirtualMachines and 6 MyWebs under writes, while a seeded nemesis overlaps faults
# for 90 s; then every invariant (docs/reliability.md). 3-5 minutes. The seed is
# printed; SEED=<seed> bash hack/chaos.sh replays its schedule. Longer runs by hand:
# DURATION=30m FOOS=1000 VMS=200 MYWEBS=20 REPLICAS=3 bash hack/chaos.sh.
log "hack/chaos.sh (the short chaos soak)"
bash hack/chaos.sh

# The oldest release we support: a feature the newest server has and this one lacks
# (an API field or feature added after it) must be detected with a fallback,
# never a crash. testenv's api test checks the server really is that release.
log "e2e suites of the cache and the Foo controller on the oldest release (K8S_VERSION=oldest)"
K8S_VERSION=oldest cargo test --locked -p cache --test e2e_informer --test e2e_pager
K8S_VERSION=oldest cargo test --locked -p foo-controller --test e2e
K8S_VERSION=oldest cargo test --locked -p testenv --test e2e api::

log "hack/demo.sh --non-interactive (the README's main command, end to end)"
bash hack/demo.sh --non-interactive

# Recorded so a growing build footprint shows up in CI logs before it fills a disk.
log "disk: target/ is $(du -sh target 2>/dev/null | cut -f1); $(df -h . | awk 'NR==2 {print $4}') free"
