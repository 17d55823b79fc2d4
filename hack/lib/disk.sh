# shellcheck shell=bash
# The cargo target directory in the cache, kept from filling the disk (hack/test.sh).
#
#   disk_prune_target DIR     before the build: drop the executables the last complete run
#                             superseded and did not execute,
#                             then start marking what this run uses
#   disk_mark_complete DIR    at the end of a run that ran every phase
#   disk_guard DIR MIN_GB     wipe DIR when the disk still has less than MIN_GB free
#
# Why: the target directory is shared by every run on a machine (CI clones afresh, the
# dependencies are built once), and cargo never deletes an artifact. Each distinct build
# of a crate (another feature set, a generated project, a peer operator) leaves its own
# files beside the old ones; a day of work once grew it to 57 GB and a CI run after it
# failed with "no space left on device" in the demo's image build.
#
# What is stale: cargo only stats the files of a fresh unit, it does not read them, so
# there is no record of which artifacts a build still needs. Executions are the record,
# for the executables: a complete run executes every test binary it builds (the
# workspace's, kcr's generated projects', the tools'), and the executables are what
# fills the disk (35 of 43 GB once). The root file system is mounted relatime: an access
# updates the access time only when it is older than the modification or change time
# (or a day old). So before the build the access time of every executable in deps/ and
# examples/ is set to the epoch (older than its mtime; `touch -a` also sets its ctime to
# now), and after a COMPLETE run one whose access time is still the epoch was not
# executed by it. Such a file is deleted only when a newer executable of the same name
# exists (superseded): a binary the run simply did not execute (an example) is never the
# cause of a rebuild. A run that failed part-way does not prune the next time.
#
# Libraries are never pruned: a warm run reads no rlib or proc-macro of a dependency
# whose dependents are fresh (syn, say), and several live builds of one crate coexist
# (the workspace's features, a generated project's); pruning them by access time made
# the next run rebuild 160 dependencies (measured on 44a9941's CI run).

# disk_prune_target DIR
disk_prune_target() {
  local dir=$1 debug=$1/debug marks=$1/.prune
  [ -d "$debug" ] || return 0
  mkdir -p "$marks"
  # Incremental caches only help rebuilds by hand (hack/test.sh sets CARGO_INCREMENTAL=0).
  if [ "${CARGO_INCREMENTAL:-0}" = 0 ] && [ -d "$debug/incremental" ]; then
    echo "disk: removing $debug/incremental ($(du -sh "$debug/incremental" | cut -f1))"
    rm -rf "$debug/incremental"
  fi
  if [ -e "$marks/complete" ]; then
    local stale
    stale=$(disk_stale_artifacts "$debug/deps" "$debug/examples")
    if [ -n "$stale" ]; then
      echo "disk: removing $(wc -l <<<"$stale") superseded executables the last complete run did not execute ($(
        tr '\n' '\0' <<<"$stale" | du -ch --files0-from=- | tail -1 | cut -f1))"
      tr '\n' '\0' <<<"$stale" | xargs -0 rm -f
    fi
  fi
  rm -f "$marks/complete"
  disk_executables "$debug/deps" "$debug/examples" | tr '\n' '\0' | xargs -0 -r touch -a -d @0 2>/dev/null || true
}

# disk_executables DIR...: cargo's executables there, one path per line: files named
# `<name>-<16 hex digits>` exactly (no extension: not an rlib, rmeta, .d or a
# proc-macro's .so) with the executable bit.
disk_executables() {
  # mawk (Debian's awk) has no interval expressions: the 16 digits are spelled out.
  find "$@" -maxdepth 1 -type f -perm -u+x ! -name '*.*' -printf '%p\t%f\n' 2>/dev/null | awk -F'\t' '
    BEGIN { hash = "-"; for (i = 0; i < 16; i++) hash = hash "[0-9a-f]" }
    match($2, hash) && RSTART + RLENGTH - 1 == length($2) { print $1 }'
}

# disk_stale_artifacts DIR...: the executables whose access time is the epoch and that
# a newer executable of the same name supersedes, one path per line.
disk_stale_artifacts() {
  # Each name ends in `-<16 hex digits>` (disk_executables): the name is what precedes.
  disk_executables "$@" | tr '\n' '\0' | xargs -0 -r stat -c '%n	%Y	%X' | awk -F'\t' '
    {
      n = split($1, parts, "/"); key = substr(parts[n], 1, length(parts[n]) - 17)
      path[NR] = $1; k[NR] = key; mtime[NR] = $2; atime[NR] = $3
      if (!(key in newest) || $2 > newest[key]) newest[key] = $2
    }
    END {
      for (i in path) if (atime[i] < 1 && mtime[i] < newest[k[i]]) print path[i]
    }'
}

# disk_mark_complete DIR
disk_mark_complete() { mkdir -p "$1/.prune" && touch "$1/.prune/complete"; }

# disk_guard DIR MIN_GB: when the file system holding DIR has less than MIN_GB free even
# after pruning, remove DIR (the run builds cold) rather than fail part-way.
disk_guard() {
  local dir=$1 min_gb=$2 free_gb
  mkdir -p "$dir"
  free_gb=$(df -P -BG "$dir" | awk 'NR == 2 { sub(/G$/, "", $4); print $4 }')
  if [ "$free_gb" -lt "$min_gb" ]; then
    echo "disk: only ${free_gb} GB free beside $dir (under $min_gb GB): removing it, this run builds cold" >&2
    rm -rf "$dir"
    free_gb=$(df -P -BG "$(dirname "$dir")" | awk 'NR == 2 { sub(/G$/, "", $4); print $4 }')
    [ "$free_gb" -ge "$min_gb" ] ||
      echo "disk: WARNING: still only ${free_gb} GB free; the run may fail with no space left on device" >&2
  fi
  echo "disk: $(du -sh "$dir" 2>/dev/null | cut -f1) in $dir, ${free_gb} GB free"
}
