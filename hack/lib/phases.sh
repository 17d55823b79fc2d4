# shellcheck shell=bash
# Phases and background jobs for hack/test.sh, each timed, with a table at the end.
#
#   phases_init cold|warm        start the clock; the table prints on exit, pass or fail
#   phase NAME CMD...            run CMD in the foreground as one timed phase
#   bg_start NAME CMD...         start CMD in the background (own session, log in
#                                $PHASE_DIR/NAME.log); killed if the run ends first
#   bg_nice N                    inside a background job: lower the whole job to nice N
#                                (its autogroup, see below)
#   bg_wait NAME                 a phase: wait for NAME, print its log, fail if it failed
#   bg_wait_file NAME FILE       a phase: wait until NAME creates FILE (or fails)
#
# Each row also says how much CPU the phase used (user + system seconds of the processes
# it waited for), and the run ends with how busy the machine's cores were: on 2 cores a
# run is its CPU work divided by two plus the time a core sat idle (docs/testing.md).
#
# Why bg_nice and not `nice`: the kernel groups processes by session for scheduling
# (autogroups, /proc/sys/kernel/sched_autogroup_enabled), and each background job is a
# session of its own (setsid), so `nice -n 19` in a job only orders that job's own
# processes: against the foreground it still got an equal share. Measured here: two
# sessions spinning two processes each got 5.6 and 5.7 CPU s with `nice -n 19` in the
# second, and 11.6 and 0.2 with the second's autogroup at 19. bg_nice sets both.
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
  PHASE_STAT0=$(cpu_stat)
  PHASE_CURRENT=""
  declare -gA BG_PID=()
  : >"$PHASE_DIR/rows"
  trap phases_on_exit EXIT
  log "$PHASE_MODE run started $(date -u +%FT%TZ) on $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}

# cpu_stat: "busy idle" jiffies of the whole machine since boot (/proc/stat).
cpu_stat() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $5 + $6; exit }' /proc/stat; }

# bg_nice N: lower the calling background job (its whole session, every process in it
# now and later) to nice N against the other sessions. Within the job, `nice -n` still
# orders its own processes (and is what counts where autogroups are off).
bg_nice() { echo "$1" >/proc/self/autogroup 2>/dev/null || true; }

# timed FILE CMD...: run CMD; write "user system" CPU seconds of CMD and everything it
# waited for to FILE. In a subshell, so that a background job the shell reaps meanwhile
# is not counted.
timed() (
  local file=$1
  shift
  TIMEFORMAT='%3U %3S'
  { time "$@" 2>&4; } 4>&2 2>"$file"
)

export -f bg_nice timed

# cpu_of FILE: the CPU seconds a `timed` FILE holds, or "-".
cpu_of() { awk 'NF == 2 { printf "%d", $1 + $2; f = 1 } END { if (!f) printf "-" }' "$1" 2>/dev/null || printf -- -; }

# status_of EXIT_CODE: the table's status column.
status_of() { if [ "$1" = 0 ]; then echo ok; else echo "FAILED (exit $1)"; fi; }

# row KIND NAME START END STATUS CPU
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:--}" >>"$PHASE_DIR/rows"; }

phase() {
  local name=$1 start
  shift
  PHASE_CURRENT=$name
  start=$(date +%s)
  PHASE_CURRENT_START=$start
  log "$name   [start $(date -u +%T), +$(clock "$start")]"
  if [ "$1" = bg_finish ]; then
    # Waiting: the job's own row has its CPU. In this shell: it changes BG_PID.
    "$@"
    : >"$PHASE_DIR/cpu"
  else
    timed "$PHASE_DIR/cpu" "$@"
  fi
  row fg "$name" "$start" "$(date +%s)" ok "$(cpu_of "$PHASE_DIR/cpu")"
  printf '==> done in %ss: %s\n' "$(($(date +%s) - start))" "$name"
  PHASE_CURRENT=""
}

bg_start() {
  local name=$1
  shift
  log "background: $name (log: $PHASE_DIR/$name.log)   [start $(date -u +%T), +$(clock "$(date +%s)")]"
  # setsid: the job and its children form a process group the exit trap can stop.
  # The functions go along, for the jobs that call bg_nice.
  setsid bash -c '
    done_file=$1; shift
    start=$(date +%s)
    if timed "$done_file.cpu" "$@"; then rc=0; else rc=$?; fi
    echo "$start $(date +%s) $rc" >"$done_file"
    exit "$rc"' _ "$PHASE_DIR/$name.done" "$@" >"$PHASE_DIR/$name.log" 2>&1 </dev/null &
  BG_PID[$name]=$!
}

# bg_finish NAME: collect a finished job: its row, its log; fail the run if it failed.
bg_finish() {
  local name=$1 start end rc
  wait "${BG_PID[$name]}" || true
  read -r start end rc <"$PHASE_DIR/$name.done" || { start=$PHASE_T0 end=$(date +%s) rc=1; }
  row bg "$name" "$start" "$end" "$(status_of "$rc")" "$(cpu_of "$PHASE_DIR/$name.done.cpu")"
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

# Paths removed when the run ends, passed or failed.
PHASE_REMOVE_ON_EXIT=()

phases_on_exit() {
  local rc=$? now name kind start end status total
  now=$(date +%s)
  [ -n "$PHASE_CURRENT" ] && row fg "$PHASE_CURRENT" "$PHASE_CURRENT_START" "$now" "FAILED (exit $rc)"
  for name in "${!BG_PID[@]}"; do
    if [ -e "$PHASE_DIR/$name.done" ]; then
      read -r start end status <"$PHASE_DIR/$name.done"
      row bg "$name" "$start" "$end" "$(status_of "$status")" "$(cpu_of "$PHASE_DIR/$name.done.cpu")"
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
  printf '| phase | start | end | seconds | CPU s | status |\n|---|---|---|---|---|---|\n'
  sort -s -t$'\t' -k3,3n "$PHASE_DIR/rows" | while IFS=$'\t' read -r kind name start end status cpu; do
    [ "$kind" = bg ] && name="(background) $name"
    printf '| %s | %s | %s | %d | %s | %s |\n' "$name" "$(clock "$start")" "$(clock "$end")" $((end - start)) "$cpu" "$status"
  done
  printf '| **total** | 0:00 | %s | **%d** (%d min) | | |\n' "$(clock "$now")" "$total" $((total / 60))
  # How busy the cores were: what the run could still gain by filling idle time.
  local busy0 idle0 busy1 idle1
  read -r busy0 idle0 <<<"$PHASE_STAT0"
  read -r busy1 idle1 <<<"$(cpu_stat)"
  awk -v b=$((busy1 - busy0)) -v i=$((idle1 - idle0)) -v hz="$(getconf CLK_TCK)" -v n="$(nproc)" 'BEGIN {
    printf "\nmachine: %d CPU s busy, %d idle, over %d cores (%.0f %% busy)\n", b / hz, i / hz, n, 100 * b / (b + i + 0.001) }' 
  local budget=$PHASE_BUDGET_WARM
  [ "$PHASE_MODE" = cold ] && budget=$PHASE_BUDGET_COLD
  if [ "$total" -gt "$budget" ]; then
    printf '\nWARNING: this %s run took %d min, over its budget of %d min (docs/testing.md, "The CI budget").\n' \
      "$PHASE_MODE" $((total / 60)) $((budget / 60))
  fi
  # The background logs were printed when collected; a failed run keeps them to look at.
  [ "$rc" = 0 ] && rm -rf "$PHASE_DIR"
  [ "${#PHASE_REMOVE_ON_EXIT[@]}" -gt 0 ] && rm -rf "${PHASE_REMOVE_ON_EXIT[@]}"
  return "$rc"
}
