# shellcheck shell=bash
# The cargo target directory in the cache, kept from filling the disk (hack/test.sh).
#
#   disk_prune_target DIR     before the build: drop what the last complete run did not use,
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
# there is no record of which artifacts a build still needs. Reads are the record: the
# run links every test binary (reading every rlib in its graph, generated projects
# included, as those are generated anew) and executes every test binary. The root file
# system is mounted relatime: an access updates the access time only when it is older
# than the modification or change time (or a day old). So before the build the access
# time of every artifact is set to the epoch (older than its mtime; `touch -a` also sets
# its ctime to now), and after a COMPLETE run an artifact whose access time is still the
# epoch was neither linked nor executed by it. Such a file is deleted only when a newer
# file of the same crate name and kind exists (superseded): a binary the run simply did
# not execute (crdgen's sibling, an example) is never the cause of a rebuild. A run that
# failed part-way does not prune the next time (it may not have linked everything).

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
      echo "disk: removing $(wc -l <<<"$stale") superseded artifacts the last complete run did not use ($(
        tr '\n' '\0' <<<"$stale" | du -ch --files0-from=- | tail -1 | cut -f1))"
      tr '\n' '\0' <<<"$stale" | xargs -0 rm -f
    fi
  fi
  rm -f "$marks/complete"
  find "$debug/deps" "$debug/examples" -maxdepth 1 -type f -exec touch -a -d @0 {} + 2>/dev/null || true
}

# disk_stale_artifacts DIR...: the files whose access time is the epoch and that a newer
# file of the same name and kind supersedes, one path per line. A file is
# `<name>-<16 hex digits><.ext>`; the name and the extension make its kind.
disk_stale_artifacts() {
  # mawk (Debian's awk) has no interval expressions: the 16 digits are spelled out.
  find "$@" -maxdepth 1 -type f -printf '%p\t%f\t%T@\t%A@\n' 2>/dev/null | awk -F'\t' '
    BEGIN { hash = "-"; for (i = 0; i < 16; i++) hash = hash "[0-9a-f]" }
    {
      if (!match($2, hash)) next
      key = substr($2, 1, RSTART - 1) "\t" substr($2, RSTART + RLENGTH)
      path[NR] = $1; k[NR] = key; mtime[NR] = $3; atime[NR] = $4
      if (!(key in newest) || $3 > newest[key]) newest[key] = $3
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
