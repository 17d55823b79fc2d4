# shellcheck shell=bash
# Phases and background jobs for hack/test.sh, each timed, with a table at the end.
#
#   phases_init cold|warm        start the clock; the table prints on exit, pass or fail
#   phase NAME CMD...            run CMD in the foreground as one timed phase
#   bg_start NAME CMD...         start CMD in the background (own process group, log in
#                                $PHASE_DIR/NAME.log); killed if the run ends first
#   bg_wait NAME                 a phase: wait for NAME, print its log, fail if it failed
#   bg_wait_file NAME FILE       a phase: wait until NAME creates FILE (or fails)
#
# The table is Markdown, so a CI log's table can go into docs/testing.md as it is. The
# guard at its end prints a WARNING when a run passes its budget: 45 minutes cold, 25
# warm (docs/testing.md, "The CI budget").

PHASE_BUDGET_COLD=${PHASE_BUDGET_COLD:-2700}
PHASE_BUDGET_WARM=${PHASE_BUDGET_WARM:-1500}

log() { printf '\n==> %s\n' "$*"; }

# clock SECONDS: minutes:seconds since the run started, e.g. 12:05.
clock() { printf '%d:%02d' $((($1 - PHASE_T0) / 60)) $((($1 - PHASE_T0) % 60)); }

phases_init() {
  PHASE_MODE=$1
  PHASE_T0=$(date +%s)
  PHASE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/test-phases.XXXXXX")
  PHASE_CURRENT=""
  declare -gA BG_PID=()
  : >"$PHASE_DIR/rows"
  trap phases_on_exit EXIT
  log "$PHASE_MODE run started $(date -u +%FT%TZ) on $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}

# status_of EXIT_CODE: the table's status column.
status_of() { if [ "$1" = 0 ]; then echo ok; else echo "FAILED (exit $1)"; fi; }

# row KIND NAME START END STATUS
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$PHASE_DIR/rows"; }

phase() {
  local name=$1 start
  shift
  PHASE_CURRENT=$name
  start=$(date +%s)
  PHASE_CURRENT_START=$start
  log "$name   [start $(date -u +%T), +$(clock "$start")]"
  "$@"
  row fg "$name" "$start" "$(date +%s)" ok
  printf '==> done in %ss: %s\n' "$(($(date +%s) - start))" "$name"
  PHASE_CURRENT=""
}

bg_start() {
  local name=$1
  shift
  log "background: $name (log: $PHASE_DIR/$name.log)   [start $(date -u +%T), +$(clock "$(date +%s)")]"
  # setsid: the job and its children form a process group the exit trap can stop.
  setsid bash -c '
    done_file=$1; shift
    start=$(date +%s)
    if "$@"; then rc=0; else rc=$?; fi
    echo "$start $(date +%s) $rc" >"$done_file"
    exit "$rc"' _ "$PHASE_DIR/$name.done" "$@" >"$PHASE_DIR/$name.log" 2>&1 </dev/null &
  BG_PID[$name]=$!
}

# bg_finish NAME: collect a finished job: its row, its log; fail the run if it failed.
bg_finish() {
  local name=$1 start end rc
  wait "${BG_PID[$name]}" || true
  read -r start end rc <"$PHASE_DIR/$name.done" || { start=$PHASE_T0 end=$(date +%s) rc=1; }
  row bg "$name" "$start" "$end" "$(status_of "$rc")"
  unset 'BG_PID[$name]'
  sed "s/^/[$name] /" "$PHASE_DIR/$name.log"
  if [ "$rc" != 0 ]; then
    echo "background job $name failed (exit $rc); its log is above" >&2
    exit 1
  fi
}

bg_wait() { phase "wait for background: $1" bg_finish "$1"; }

bg_wait_file() {
  local name=$1 file=$2
  phase "wait for background: $name ($(basename "$file"))" bash -c '
    while [ ! -e "$1" ] && [ ! -e "$2" ]; do sleep 2; done' _ "$file" "$PHASE_DIR/$name.done"
  # The job ended without making the file: it failed.
  [ -e "$file" ] || bg_finish "$name"
}

phases_on_exit() {
  local rc=$? now name kind start end status total
  now=$(date +%s)
  [ -n "$PHASE_CURRENT" ] && row fg "$PHASE_CURRENT" "$PHASE_CURRENT_START" "$now" "FAILED (exit $rc)"
  for name in "${!BG_PID[@]}"; do
    if [ -e "$PHASE_DIR/$name.done" ]; then
      read -r start end status <"$PHASE_DIR/$name.done"
      row bg "$name" "$start" "$end" "$(status_of "$status")"
    else
      kill -TERM -- "-${BG_PID[$name]}" 2>/dev/null
      row bg "$name" "$PHASE_T0" "$now" "stopped: the run ended first"
      echo "background job $name was still running; stopped. Its log: $PHASE_DIR/$name.log" >&2
    fi
  done
  total=$((now - PHASE_T0))
  printf '\n==> Phase timings: %s run of %s (%s), %s cores, %s\n\n' "$PHASE_MODE" \
    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$(date -u -d "@$PHASE_T0" +%F)" "$(nproc)" \
    "$([ "$rc" = 0 ] && echo passed || echo "FAILED (exit $rc)")"
  printf '| phase | start | end | seconds | status |\n|---|---|---|---|---|\n'
  sort -s -t$'\t' -k3,3n "$PHASE_DIR/rows" | while IFS=$'\t' read -r kind name start end status; do
    [ "$kind" = bg ] && name="(background) $name"
    printf '| %s | %s | %s | %d | %s |\n' "$name" "$(clock "$start")" "$(clock "$end")" $((end - start)) "$status"
  done
  printf '| **total** | 0:00 | %s | **%d** (%d min) | |\n' "$(clock "$now")" "$total" $((total / 60))
  local budget=$PHASE_BUDGET_WARM
  [ "$PHASE_MODE" = cold ] && budget=$PHASE_BUDGET_COLD
  if [ "$total" -gt "$budget" ]; then
    printf '\nWARNING: this %s run took %d min, over its budget of %d min (docs/testing.md, "The CI budget").\n' \
      "$PHASE_MODE" $((total / 60)) $((budget / 60))
  fi
  # The background logs were printed when collected; a failed run keeps them to look at.
  [ "$rc" = 0 ] && rm -rf "$PHASE_DIR"
  return "$rc"
}
