#!/usr/bin/env bash
# hack/lib/disk.sh's pruning on a scratch target directory (hack/test.sh runs it before it
# prunes the real one): after a complete run, an executable it superseded and did not
# execute goes; one it executed, the newest of a name, a unique one, every library
# (rlib, proc-macro .so) and a dep-info file stay; after an incomplete run nothing goes.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/disk.sh
source hack/lib/disk.sh
dir=$(mktemp -d "${TMPDIR:-/tmp}/disk-prune.XXXXXX")
trap 'rm -rf "$dir"' EXIT
deps=$dir/debug/deps
mkdir -p "$deps" "$dir/debug/examples"
make_file() { printf '#!/bin/sh\n' >"$deps/$1"; [ "${2:-}" = x ] && chmod +x "$deps/$1"; return 0; }
make_file e2e-0000000000000001 x           # superseded, not executed: goes
make_file e2e-0000000000000002 x           # the newest e2e
make_file unit-00000000000000a1 x          # superseded, but executed: stays
make_file unit-00000000000000a2 x
make_file crdgen-00000000000000c1 x        # unique
make_file libsyn-00000000000000b1.rlib     # libraries: never pruned
make_file libsyn-00000000000000b2.rlib
make_file libmacro-00000000000000d1.so x
make_file libmacro-00000000000000d2.so x
make_file e2e-0000000000000001.d
touch -d '1 hour ago' "$deps/e2e-0000000000000001" "$deps/unit-00000000000000a1" \
  "$deps/libsyn-00000000000000b1.rlib" "$deps/libmacro-00000000000000d1.so"
fail() { echo "verify-disk-prune: $*" >&2; exit 1; }

# An incomplete run before: nothing is removed.
disk_prune_target "$dir" >/dev/null
[ "$(find "$deps" -type f | wc -l)" = 10 ] || fail "an incomplete run's successor removed files"
# A complete run that executes unit-...a1 only.
"$deps/unit-00000000000000a1"
disk_mark_complete "$dir"
disk_prune_target "$dir" >/dev/null
left=$(cd "$deps" && ls | tr '\n' ' ')
want="crdgen-00000000000000c1 e2e-0000000000000001.d e2e-0000000000000002 libmacro-00000000000000d1.so libmacro-00000000000000d2.so libsyn-00000000000000b1.rlib libsyn-00000000000000b2.rlib unit-00000000000000a1 unit-00000000000000a2 "
[ "$left" = "$want" ] || fail "left: $left; want: $want"
echo "verify-disk-prune: a superseded executable nobody ran is removed; executed, newest, unique executables and every library stay"
