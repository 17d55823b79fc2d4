#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo fuzz, libFuzzer) of every parser that reads input from
# outside the process: the targets in fuzz/fuzz_targets, seeded from the corpus checked
# in under fuzz/corpus/<target>. docs/reliability.md says what each target checks.
#
#   bash hack/fuzz.sh                              # every target, FUZZ_SECONDS (5) each
#   FUZZ_SECONDS=600 bash hack/fuzz.sh selector    # one target (or several), longer
#
# It installs what it needs when missing: the nightly toolchain (rustup) and cargo-fuzz
# (`cargo install --locked --debug cargo-fuzz`). It exits non-zero if any target crashes (a
# panic, a failed property, a timeout or running out of memory) and prints how to
# reproduce each crash; the crashing input is kept under fuzz/artifacts/<target>/.
#
# Environment:
#   FUZZ_SECONDS     how long each target runs (default 5)
#   FUZZ_OPT_LEVEL   the release profile's opt-level (default 3, for long runs).
#                    hack/test.sh uses 1: a cold build costs 9 min of CPU instead of 13
#                    and runs about 3/4 as many inputs a second (0, cargo fuzz --dev,
#                    ran 35 times fewer: 5 s did not even replay the corpus)
#   FUZZ_SANITIZER   none (default: the code is safe Rust, and it builds and runs
#                    faster) or address
#   FUZZ_TARGET_DIR  the build directory (default: ~/.cache/kube-controllers-rs/fuzz-target,
#                    outside the clone, so a fresh clone on the same machine rebuilds
#                    only what changed)
#   FUZZ_CORPUS_DIR  where the inputs a run discovers are kept, one directory per target
#                    (default: a temporary directory, removed afterwards; the checked-in
#                    corpus is only read)
#   FUZZ_ARGS        more libFuzzer options, e.g. "-jobs=2 -workers=2"
#   FUZZ_BUILD_ONLY  1: install and build, run nothing (hack/test.sh builds in the
#                    background while other phases run, then runs the targets)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[fuzz] %s\n' "$*" >&2; }

FUZZ_SECONDS=${FUZZ_SECONDS:-5}
FUZZ_SANITIZER=${FUZZ_SANITIZER:-none}
# cargo fuzz builds the release profile; this sets its opt-level.
export CARGO_PROFILE_RELEASE_OPT_LEVEL=${FUZZ_OPT_LEVEL:-3}
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
FUZZ_TARGET_DIR=${FUZZ_TARGET_DIR:-$CACHE_ROOT/fuzz-target}

# --- Tools ------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
# libFuzzer's instrumentation needs a nightly compiler. If rustup cannot install one,
# the default toolchain is told to accept nightly flags (RUSTC_BOOTSTRAP=1).
TOOLCHAIN=(+nightly)
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  log "installing the nightly toolchain (rustup toolchain install nightly --profile minimal)"
  if ! rustup toolchain install nightly --profile minimal >&2; then
    log "no nightly toolchain; using $(rustc --version) with RUSTC_BOOTSTRAP=1"
    TOOLCHAIN=()
    export RUSTC_BOOTSTRAP=1
  fi
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  # --debug: cargo-fuzz only runs cargo and the target, so its speed does not matter, and
  # unoptimised it builds in 51 s of CPU instead of 89 (measured cold, this machine).
  log "installing cargo-fuzz (cargo install --locked --debug cargo-fuzz)"
  cargo install --locked --debug cargo-fuzz >&2
fi

# The targets are outside the main workspace, so `cargo fmt --all` does not see them.
rustfmt --edition 2024 --check fuzz/fuzz_targets/*.rs

ALL_TARGETS=$(cd fuzz && cargo "${TOOLCHAIN[@]}" fuzz list)
if [ $# -gt 0 ]; then
  TARGETS=("$@")
  for t in "${TARGETS[@]}"; do
    grep -qx "$t" <<<"$ALL_TARGETS" || { log "error: no fuzz target '$t' (have: $(echo $ALL_TARGETS))"; exit 2; }
  done
else
  mapfile -t TARGETS <<<"$ALL_TARGETS"
fi

FLAGS=(--sanitizer "$FUZZ_SANITIZER" --target-dir "$FUZZ_TARGET_DIR")
log "building ${#TARGETS[@]} target(s) (opt-level $CARGO_PROFILE_RELEASE_OPT_LEVEL, sanitizer $FUZZ_SANITIZER, in $FUZZ_TARGET_DIR)"
start=$SECONDS
# One target builds alone; otherwise all of them (they share every dependency).
ONE=()
[ ${#TARGETS[@]} -eq 1 ] && ONE=("${TARGETS[0]}")
(cd fuzz && cargo "${TOOLCHAIN[@]}" fuzz build "${FLAGS[@]}" "${ONE[@]}" >&2)
log "built in $((SECONDS - start)) s"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

if [ -n "${FUZZ_CORPUS_DIR:-}" ]; then
  WORK=$FUZZ_CORPUS_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-fuzz.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
fi

failed=()
for target in "${TARGETS[@]}"; do
  mkdir -p "$WORK/$target" "fuzz/artifacts/$target"
  out="$WORK/$target.log"
  log "$target: ${FUZZ_SECONDS}s"
  # New inputs go to the first directory; the checked-in corpus is only read.
  # shellcheck disable=SC2086
  if (cd fuzz && cargo "${TOOLCHAIN[@]}" fuzz run "${FLAGS[@]}" "$target" \
      "$WORK/$target" "corpus/$target" -- \
      -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="artifacts/$target/" ${FUZZ_ARGS:-}) >"$out" 2>&1; then
    # The last status line: executions, coverage (cov) and features (ft).
    summary=$(grep -E '^#[0-9]+' "$out" | tail -n 1 || true)
    runs=$(grep -E '^stat::number_of_executed_units' "$out" | awk '{print $2}' || true)
    log "$target: ok, ${runs:-?} executions; ${summary:-no status line}"
  else
    failed+=("$target")
    tail -n 60 "$out" >&2
    artifact=$(grep -oE 'artifacts/[^ ]+/(crash|timeout|oom|leak|slow-unit)-[0-9a-f]+' "$out" | tail -n 1 || true)
    log "$target: FAILED"
    if [ -n "$artifact" ]; then
      log "  the input is fuzz/$artifact; reproduce with:"
      log "    (cd fuzz && cargo +nightly fuzz run --sanitizer $FUZZ_SANITIZER $target $artifact)"
      log "  minimise with: (cd fuzz && cargo +nightly fuzz tmin --sanitizer $FUZZ_SANITIZER $target $artifact)"
    fi
    log "  then fix the parser, add a regression test next to it and the input to fuzz/corpus/$target/"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  log "crashed: ${failed[*]}"
  exit 1
fi
log "${#TARGETS[@]} target(s), ${FUZZ_SECONDS}s each: no crash"
