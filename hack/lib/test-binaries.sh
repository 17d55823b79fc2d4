# shellcheck shell=bash
# Run test binaries that `cargo build --workspace --tests` already built, without cargo.
#
# Why: `cargo test -p kcr-cache` resolves the features of `cache` alone, which differ from the
# workspace's (tokio's, hyper's, ...), so it rebuilds most of the dependency graph. A
# rerun of a suite (on the DeltaFIFO, on the oldest release) needs no new build: it is
# the same binary with other environment variables. cargo-nextest archives do the same.
#
#   test_binaries_index                          write $CARGO_TARGET_DIR/test-binaries.tsv
#   run_test_binaries PKG TARGET... [-- ARGS]    run PKG's integration test TARGETs with
#                                                ARGS (a name filter, --nocapture, ...)
# A binary runs as `cargo test` runs it: from its package's directory, with
# CARGO_MANIFEST_DIR and CARGO_PKG_NAME set.

# Where the index is: decided when used, so a CARGO_TARGET_DIR exported after this file
# is sourced (hack/test.sh) counts.
test_binaries_index_path() { echo "${TEST_BINARIES_INDEX:-${CARGO_TARGET_DIR:-target}/test-binaries.tsv}"; }

test_binaries_index() {
  local TEST_BINARIES_INDEX
  TEST_BINARIES_INDEX=$(test_binaries_index_path)
  mkdir -p "$(dirname "$TEST_BINARIES_INDEX")"
  # A no-op build (everything is fresh) that lists each test executable with its
  # package and target: package, target, kind, executable, manifest directory.
  cargo metadata --locked --no-deps --format-version 1 >"$TEST_BINARIES_INDEX.meta"
  cargo test --workspace --locked --no-run --message-format=json |
    jq -r --slurpfile meta "$TEST_BINARIES_INDEX.meta" '
      ($meta[0].packages | map({key: .manifest_path, value: .name}) | from_entries) as $names
      | select(.reason == "compiler-artifact" and .executable != null and .profile.test)
      | [$names[.manifest_path], .target.name, (.target.kind | join(",")), .executable,
         (.manifest_path | sub("/Cargo.toml$"; ""))] | @tsv' >"$TEST_BINARIES_INDEX.tmp"
  rm -f "$TEST_BINARIES_INDEX.meta"
  mv "$TEST_BINARIES_INDEX.tmp" "$TEST_BINARIES_INDEX"
  echo "$(wc -l <"$TEST_BINARIES_INDEX") test binaries in $TEST_BINARIES_INDEX"
}

run_test_binaries() {
  local pkg=$1 targets=() args=() t exe dir TEST_BINARIES_INDEX
  TEST_BINARIES_INDEX=$(test_binaries_index_path)
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
  [ "${1:-}" = -- ] && { shift; args=("$@"); }
  [ -f "$TEST_BINARIES_INDEX" ] || { echo "error: no $TEST_BINARIES_INDEX; run test_binaries_index first" >&2; return 1; }
  for t in "${targets[@]}"; do
    read -r exe dir < <(awk -F'\t' -v p="$pkg" -v t="$t" '$1 == p && $2 == t && $3 == "test" { print $4 "\t" $5 }' \
      "$TEST_BINARIES_INDEX")
    [ -n "${exe:-}" ] || { echo "error: no test target $t in package $pkg ($TEST_BINARIES_INDEX)" >&2; return 1; }
    printf '\n     Running %s %s (%s) %s\n' "$pkg" "$t" "${exe#"$PWD/"}" "${args[*]}"
    (cd "$dir" && CARGO_MANIFEST_DIR=$dir CARGO_PKG_NAME=$pkg "$exe" "${args[@]}")
    exe=""
  done
}
