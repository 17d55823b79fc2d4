#!/usr/bin/env bash
# Initial informer sync from a real control plane: crates/runtime/cache's SharedIndexInformer
# vs kube-runtime's reflector vs client-go's SharedIndexInformer, on the same
# ConfigMaps, as separate processes; prints median sync time, CPU and peak RSS
# (VmHWM) per implementation, size and API server state.
#
#   bash hack/bench/informer-sync.sh                   # 10k and 50k objects, 3 runs each
#   SIZES="10000" RUNS=5 bash hack/bench/informer-sync.sh
#   SERVER_STATE=both bash hack/bench/informer-sync.sh  # every size in both server states
#   IMPLS="ours kube-runtime" bash hack/bench/informer-sync.sh
#   BENCH_KUBECONFIG=/path/kubeconfig bash hack/bench/informer-sync.sh   # reuse a running control plane
#
# What runs: hack/bench/informer-sync (a standalone cargo project, not in the main
# workspace) is built in release mode, hack/bench/informer-sync-go (a Go module pinning
# client-go at the control plane's release) with go build; hack/control-plane.sh brings
# up etcd + kube-apiserver (+ controllers, kwok) and is stopped on exit. One namespace
# is grown to each size (populate skips existing objects), then, per size and server
# state, one warm-up sync (discarded) and RUNS rounds of every implementation in IMPLS.
# Logs, the raw JSON lines (results.jsonl) and the summary are kept in $OUT
# (default: target/bench/informer-sync).
#
# Implementations (Rust: informer-sync-bench sync --impl ...; Go: informer-sync-go sync):
#   ours                    crates/runtime/cache SharedIndexInformer with its defaults (a streaming
#                           list, sendInitialEvents, falling back to paged lists; the atomic
#                           RealFIFO: a relist one entry), no handlers; timed until
#                           wait_for_cache_sync returns (woken, not polled). Every ours-*
#                           variant except ours-plain runs in the controller binaries'
#                           process set-up: their API client (manager::ClientArgs: HTTP/2,
#                           as client-go's) and heap growth (manager::heap: 64 MiB steps)
#   ours-transform          the same + set_transform dropping metadata.managedFields
#   ours-strip              ours + ApiListerWatcher::strip_managed_fields: managedFields cut
#                           out of the raw JSON before decoding (the binaries' default)
#   ours-plain              ours as a library user gets it: kube's default HTTP/1.1 client
#                           and glibc's default heap growth, as every kube-runtime variant
#   ours-paged              ours with set_watch_list(false): most-recent list in pages of
#                           500 (each page queued as it arrives, one page of read-ahead)
#   ours-deltafifo          ours with set_queue_kind(DeltaFifo): the classic per-key queue
#                           instead of the RealFIFO (not in IMPLS by default)
#   ours-realfifo           ours with set_queue_kind(RealFifo): the plain RealFIFO, the default
#                           before the atomic one (not in IMPLS by default)
#   ours-untraced           ours with the pipeline trace off (PIPELINE_TRACE=off): the cost
#                           of the always-on /debug/pipeline recording (not in IMPLS by default)
#   ours-alt                $ALT_BIN sync --impl ${ALT_IMPL:-ours}: the same variant from a binary
#                           built another way, interleaved with the others (not in IMPLS by
#                           default), e.g. another allocator: cargo build --release --features
#                           mimalloc (or jemalloc) in hack/bench/informer-sync, the binary
#                           copied aside as ALT_BIN
#   kube-runtime            reflector(store, watcher(api, watcher::Config::default())):
#                           most-recent list in pages of 500; timed until wait_until_ready
#   kube-runtime-transform  the same, dropping managedFields of every event before the store
#   kube-runtime-streaming  kube-runtime with streaming_lists() (sendInitialEvents)
#   client-go               client-go v0.37.2: SharedInformerFactory WithNamespace, resync 0,
#                           no handlers, QPS unlimited; WatchListClient forced off
#                           (KUBE_FEATURE_WatchListClient=false): a LIST with
#                           resourceVersion="0" and limit=500, which the API server answers
#                           from its watch cache in ONE response (it ignores limit for RV=0);
#                           timed until the factory's WaitForCacheSync returns (woken in
#                           1.37: cache.WaitFor on HasSyncedChecker, no 100 ms poll)
#   client-go-streaming     the same with WatchListClient on (client-go's DEFAULT since 1.35):
#                           a watch with sendInitialEvents=true, resourceVersion=""
#   client-go-transform     client-go + WithTransform dropping managedFields
#   client-go-streaming-transform  client-go-streaming + that transform
#   *-json                  any ours-* or client-go* variant asking for JSON (ours: Wire::Json;
#                           client-go: rest.Config.ContentType = "application/json"). Without
#                           it both ask for protobuf, client-go's default for built-in types
#                           (its generated clients use gentype.PrefersProtobuf); kube-runtime
#                           speaks JSON only. Each JSON line's "wire" is the media type the
#                           server answered.
# The requests each client-go process made are logged in $OUT/client-go.log.
#
# SERVER_STATE (cache | etcd | both; default cache) names and sets where the API server
# serves a paged list's continuation pages from (the first page of a most-recent list
# always comes from its watch cache; RV="0" lists and streaming lists always come from
# the watch cache, so only ours-paged and kube-runtime* depend on it):
#   cache  the default kube-apiserver, and a ConfigMap written just before each sync
#          ($NAMESPACE-marker/marker): the watch cache keeps a snapshot per ConfigMap
#          write (ListFromCacheSnapshot, beta and on since 1.34), and a continuation is
#          served from the newest snapshot at or below its resourceVersion. Snapshots
#          are dropped when the API server's etcd compaction (every 5 min, to the
#          revision seen 5 min earlier) passes the newest ConfigMap write, so without
#          the write a quiet server flips to "etcd" 5-10 min after its last ConfigMap
#          write; with it the state holds for any run length.
#   etcd   kube-apiserver restarted with --feature-gates=ListFromCacheSnapshot=false (via
#          KUBE_APISERVER_EXTRA_ARGS of hack/control-plane.sh): no snapshots, every
#          continuation is read from etcd. The same state a default 1.34+ server reaches
#          once compaction dropped the snapshots, and that of every server <= 1.33.
#   both   every size in both states (the API server is restarted between them).
# Before the rounds of a state, a probe (a 2-page list of one object each) checks who
# serves the continuation; per run, results.jsonl records the LISTed ConfigMaps the API
# server read from etcd and from its watch cache (apiserver_storage_list_* counters) next
# to the etcd and kube-apiserver CPU. The same marker write precedes every sync in both
# states, so the only difference is the feature gate. With BENCH_KUBECONFIG, switching
# state needs a hack/control-plane.sh state dir (the kubeconfig's directory).
#
# Each round runs every implementation once; the order rotates by one per round, so
# no implementation always follows the same one. The summary shows the ratio of the
# medians and, because the machine drifts between rounds, each round's own ratio.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BENCH_DIR="$ROOT/hack/bench/informer-sync"
GO_DIR="$ROOT/hack/bench/informer-sync-go"
SIZES="${SIZES:-10000 50000}"
RUNS="${RUNS:-3}"
IMPLS="${IMPLS:-ours ours-strip ours-transform ours-plain ours-paged kube-runtime kube-runtime-transform client-go client-go-streaming client-go-streaming-transform}"
SERVER_STATE="${SERVER_STATE:-cache}"
NAMESPACE="${NAMESPACE:-informer-sync-bench}"
MARKER="${NAMESPACE}-marker/marker"
CONCURRENCY="${CONCURRENCY:-32}"
OUT="${OUT:-$ROOT/target/bench/informer-sync}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
: >"$OUT/results.jsonl"
: >"$OUT/client-go.log"

say() { printf '\n=== %s\n' "$*"; }
die() { printf 'informer-sync.sh: %s\n' "$*" >&2; exit 1; }

KNOWN_IMPLS=" ours ours-alt ours-transform ours-strip ours-plain ours-paged ours-deltafifo ours-realfifo ours-untraced kube-runtime kube-runtime-transform kube-runtime-streaming client-go client-go-streaming client-go-transform client-go-streaming-transform "
# Every ours-* and client-go* variant also on JSON: its name + "-json".
for i in $KNOWN_IMPLS; do
  case $i in ours* | client-go*) KNOWN_IMPLS+="$i-json " ;; esac
done
read -r -a impls <<<"$IMPLS"
[ ${#impls[@]} -gt 0 ] || die "IMPLS is empty"
for i in "${impls[@]}"; do
  [[ "$KNOWN_IMPLS" == *" $i "* ]] || die "unknown implementation '$i' in IMPLS (known:$KNOWN_IMPLS)"
done
if [[ " ${impls[*]} " == *" ours-alt"* ]]; then
  [ -x "${ALT_BIN:-}" ] || die "ours-alt needs ALT_BIN, an informer-sync-bench binary (got '${ALT_BIN:-}')"
fi
case "$SERVER_STATE" in
cache | etcd) STATES=("$SERVER_STATE") ;;
both) STATES=(cache etcd) ;;
*) die "SERVER_STATE=$SERVER_STATE: want cache, etcd or both" ;;
esac

# state_flags STATE: the extra kube-apiserver flags of a server state.
state_flags() { if [ "$1" = etcd ]; then echo "--feature-gates=ListFromCacheSnapshot=false"; fi; }
state_doc() {
  case $1 in
  cache) echo "cache: default kube-apiserver (ListFromCacheSnapshot on), a ConfigMap written before each sync: paged lists' continuations served from watch-cache snapshots" ;;
  etcd) echo "etcd: kube-apiserver --feature-gates=ListFromCacheSnapshot=false: paged lists' continuations read from etcd (first pages, RV=0 lists and streaming lists still from the watch cache)" ;;
  esac
}

# CP_DIR: the hack/control-plane.sh state dir, when there is one (pids, restarts).
CP_DIR=""
# proc_cpu_ms NAME: CPU time (user + system, ms) used so far by the control plane's
# process NAME (etcd, kube-apiserver); 0 if none (a remote control plane): the server's
# share of each sync, which the client's figures do not show. The pid comes from the
# state dir when there is one (other control planes may run on the same machine).
proc_cpu_ms() {
  local pid=""
  if [ -n "$CP_DIR" ] && [ -f "$CP_DIR/pids/$1.pid" ]; then
    pid=$(cat "$CP_DIR/pids/$1.pid")
  else
    pid=$(pgrep -f "bin/$1 " | head -n 1 || true)
  fi
  if [ -z "$pid" ] || [ ! -r "/proc/$pid/stat" ]; then echo 0; return; fi
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$pid/stat"
}
load() { uptime | sed 's/.*load average: //'; }

{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:    $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:  $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "rustc:   $(rustc --version)"
  echo "go:      $(go version | sed 's/^go version //'); client-go $(cd "$GO_DIR" && go list -m -f '{{.Version}}' k8s.io/client-go) (GOGC, GOMAXPROCS: Go's defaults${GOGC:+; GOGC=$GOGC}${GOMAXPROCS:+; GOMAXPROCS=$GOMAXPROCS})"
  echo "git:     $(git rev-parse --short HEAD)$(git status --porcelain -- crates/runtime/cache | grep -q . && echo ' + uncommitted changes in crates/runtime/cache')"
  echo "sizes:   $SIZES; runs: $RUNS; impls: $IMPLS"
  echo "server state: $SERVER_STATE"
  for s in "${STATES[@]}"; do echo "  $(state_doc "$s")"; done
} | tee "$OUT/machine.txt"

say "building (cargo build --release in hack/bench/informer-sync, go build in hack/bench/informer-sync-go)"
(cd "$BENCH_DIR" && cargo build --release 2>&1 | tail -n 2)
# Where cargo put it: CARGO_TARGET_DIR if set (cargo reads a relative one from the
# directory it runs in, the bench's), else the bench's own target/.
BIN="$(cd "$BENCH_DIR" && realpath -m "${CARGO_TARGET_DIR:-target}")/release/informer-sync-bench"
# The Go program also reads the API server's list counters and writes the marker, so
# it is built even when IMPLS has no client-go variant.
GO_BIN="$OUT/informer-sync-go"
(cd "$GO_DIR" && go build -trimpath -o "$GO_BIN" .)

if [ -n "${BENCH_KUBECONFIG:-}" ]; then
  export KUBECONFIG="$BENCH_KUBECONFIG"
  d=$(dirname "$KUBECONFIG")
  [ -f "$d/.kube-controllers-rs-control-plane" ] && CP_DIR=$d
  say "using the control plane of $KUBECONFIG${CP_DIR:+ (state dir $CP_DIR)}"
else
  say "control plane up ($(state_doc "${STATES[0]}" | cut -d: -f1) state)"
  # `up` records the new control plane as the cache root's "current" one; put back the
  # one that was there (someone else's) when ours goes down.
  CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
  PREV_CURRENT=$(cat "$CACHE_ROOT/current" 2>/dev/null || true)
  UP_OUT=$(KUBE_APISERVER_EXTRA_ARGS="$(state_flags "${STATES[0]}")" bash hack/control-plane.sh up --nodes 1 \
    2> >(tee "$OUT/control-plane.log" >&2))
  KUBECONFIG=$(printf '%s\n' "$UP_OUT" | sed -n 's/^KUBECONFIG=//p' | head -n 1)
  [ -n "$KUBECONFIG" ] || { echo "no KUBECONFIG in the output of control-plane.sh up" >&2; exit 1; }
  export KUBECONFIG
  CP_DIR=$(dirname "$KUBECONFIG")
  restore_current() {
    if [ -n "$PREV_CURRENT" ] && [ -d "$PREV_CURRENT" ] && [ ! -s "$CACHE_ROOT/current" ]; then
      echo "$PREV_CURRENT" >"$CACHE_ROOT/current"
    fi
  }
  trap 'say "control plane down"; bash hack/control-plane.sh down "$CP_DIR" || true; restore_current' EXIT
fi
echo "kube-apiserver: $("$GO_BIN" server-state --version || echo unknown)" | tee -a "$OUT/machine.txt"

# ensure_state STATE: put the API server in STATE (restarting it with the state's
# flags if its ListFromCacheSnapshot gate differs), then check with a probe who serves
# a continuation page. Needs the namespace populated (at least 2 ConfigMaps).
CUR_STATE=""
ensure_state() {
  local want=$1 counters gate want_gate=1 probe expected=watchcache
  if [ "$want" = etcd ]; then want_gate=0; expected=etcd; fi
  counters=$("$GO_BIN" server-state)
  gate=$(awk '{ print $5 }' <<<"$counters")
  if [ "$gate" != "$want_gate" ]; then
    [ -n "$CP_DIR" ] || die "server state $want needs ListFromCacheSnapshot=$([ $want_gate = 1 ] && echo true || echo false) on kube-apiserver (it reports '$gate'), and $KUBECONFIG is not in a hack/control-plane.sh state dir this script could restart"
    say "restarting kube-apiserver for server state $want (extra flags: '$(state_flags "$want")')"
    KUBE_APISERVER_EXTRA_ARGS="$(state_flags "$want")" bash hack/control-plane.sh restart-apiserver "$CP_DIR" \
      2>>"$OUT/control-plane.log"
    # /readyz includes the watch caches' initialization (a list of every resource
    # from etcd); let the server settle before measuring.
    sleep 10
    counters=$("$GO_BIN" server-state)
    gate=$(awk '{ print $5 }' <<<"$counters")
    [ "$gate" = "$want_gate" ] || die "kube-apiserver reports ListFromCacheSnapshot=$gate after the restart"
  fi
  "$GO_BIN" server-state --marker "$MARKER" >/dev/null
  probe=$("$GO_BIN" server-state --probe "$NAMESPACE")
  echo "server state $want: ListFromCacheSnapshot=$gate; a paged list's continuation page is served by: $probe" |
    tee -a "$OUT/state.txt"
  [ "$probe" = "$expected" ] || die "server state $want: the continuation came from '$probe', expected '$expected'"
  CUR_STATE=$want
}

# run_impl IMPL: one sync in a fresh process; prints its JSON line.
run_impl() {
  local json=()
  [[ $1 == *-json ]] && json=(--json)
  case $1 in
  client-go*)
    local flags=("${json[@]}")
    [[ $1 == *streaming* ]] && flags+=(--streaming)
    [[ $1 == *transform* ]] && flags+=(--transform)
    # The caller's KUBE_FEATURE_WatchListClient must not contradict the variant.
    env -u KUBE_FEATURE_WatchListClient "$GO_BIN" sync --namespace "$NAMESPACE" "${flags[@]}" 2>>"$OUT/client-go.log"
    ;;
  ours-alt*)
    # Reported under the variant's own name.
    "$ALT_BIN" sync --impl "${ALT_IMPL:-ours}" --namespace "$NAMESPACE" "${json[@]}" |
      sed -E "s/\"impl\":\"[^\"]*\"/\"impl\":\"$1\"/"
    ;;
  *) "$BIN" sync --impl "${1%-json}" --namespace "$NAMESPACE" "${json[@]}" ;;
  esac
}

for size in $SIZES; do
  say "populate $NAMESPACE to $size ConfigMaps ($CONCURRENCY in flight); load: $(load)"
  "$BIN" populate --count "$size" --namespace "$NAMESPACE" --concurrency "$CONCURRENCY" | tee -a "$OUT/populate.jsonl"
  sleep 5
  # The state the server is in first (saves a restart with SERVER_STATE=both).
  states=("${STATES[@]}")
  if [ ${#states[@]} -gt 1 ] && [ "$CUR_STATE" = "${states[1]}" ]; then states=("${states[1]}" "${states[0]}"); fi
  for state in "${states[@]}"; do
    ensure_state "$state"
    "$GO_BIN" server-state --marker "$MARKER" >/dev/null
    echo "warm-up sync (discarded): $(run_impl "${impls[0]}")"
    echo "size $size, server state $state: load before runs: $(load)" | tee -a "$OUT/load.txt"
    for run in $(seq 1 "$RUNS"); do
      n=${#impls[@]}
      for k in $(seq 0 $((n - 1))); do
        impl=${impls[$(((k + run - 1) % n))]}
        # The same in both states: the marker write (a fresh watch-cache snapshot when
        # snapshots are on), the list counters, then a pause so that none of it is
        # counted as the sync's server CPU.
        counters=$("$GO_BIN" server-state --marker "$MARKER")
        read -r el0 eo0 cl0 co0 _ <<<"$counters"
        sleep 0.5
        api0=$(proc_cpu_ms kube-apiserver); etcd0=$(proc_cpu_ms etcd)
        line=$(run_impl "$impl")
        api=$(( $(proc_cpu_ms kube-apiserver) - api0 )); etcd=$(( $(proc_cpu_ms etcd) - etcd0 ))
        counters=$("$GO_BIN" server-state)
        read -r el1 eo1 cl1 co1 _ <<<"$counters"
        el=$((el1 - el0)); eo=$((eo1 - eo0)); cl=$((cl1 - cl0)); co=$((co1 - co0))
        echo "size=$size state=$state run=$run apiserver_cpu_ms=$api etcd_cpu_ms=$etcd listed_from_etcd=$eo listed_from_cache=$co $line"
        printf '{"size":%s,"state":"%s","run":%s,"apiserver_cpu_ms":%s,"etcd_cpu_ms":%s,"etcd_lists":%s,"etcd_list_objects":%s,"cache_lists":%s,"cache_list_objects":%s,"result":%s}\n' \
          "$size" "$state" "$run" "$api" "$etcd" "$el" "$eo" "$cl" "$co" "$line" >>"$OUT/results.jsonl"
      done
    done
    echo "size $size, server state $state: load after runs:  $(load)" | tee -a "$OUT/load.txt"
  done
done

say "summary (medians of $RUNS runs; ratio < 1 means ours is faster / smaller); server state: $SERVER_STATE"
python3 - "$OUT/results.jsonl" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    state = r.get("state", "-")
    runs[(r["size"], state, r["result"]["impl"])].append(dict(
        r["result"], run=r["run"], apiserver_cpu_ms=r.get("apiserver_cpu_ms"), etcd_cpu_ms=r.get("etcd_cpu_ms"),
        etcd_list_objects=r.get("etcd_list_objects"), cache_list_objects=r.get("cache_list_objects")))

def med(key, field):
    xs = [r[field] for r in runs.get(key, []) if r.get(field) is not None]
    return statistics.median(xs) if xs else None

def mib(kb):
    return "-" if kb is None else f"{kb / 1024:.0f}"

def ms(x):
    return "-" if x is None else f"{x:.0f}"

def ratio(a, b):
    return "-" if a is None or b is None or not b else f"{a / b:.2f}"

DOC = {
    "cache": "default kube-apiserver, a ConfigMap written before each sync: paged lists' continuation pages "
             "served from the watch cache's snapshots",
    "etcd": "kube-apiserver with --feature-gates=ListFromCacheSnapshot=false: paged lists' continuation pages "
            "read from etcd (first pages, RV=0 lists and streaming lists from the watch cache)",
}
impls = ["ours", "ours-alt", "ours-untraced", "ours-strip", "ours-transform", "ours-plain", "ours-paged", "ours-deltafifo", "ours-realfifo", "kube-runtime", "kube-runtime-transform",
         "kube-runtime-streaming", "client-go", "client-go-streaming", "client-go-transform",
         "client-go-streaming-transform"]
impls += [i + "-json" for i in impls if i.startswith(("ours", "client-go"))]

def wire(key):
    """The media types the server answered in, over the runs (older results have none)."""
    return "/".join(sorted({r.get("wire") or "?" for r in runs.get(key, [])}))

sizes = sorted({s for s, _, _ in runs})
states = [s for s in ("cache", "etcd", "-") if any(st == s for _, st, _ in runs)]
print("Server state: " + "; ".join(f"**{s}** = {DOC.get(s, 'not recorded')}" for s in states) + ".")
print("Objects listed from etcd / the watch cache: ConfigMaps the API server returned from LIST requests "
      "per sync (apiserver_storage_list_returned_objects_total; a streaming list is a watch and counts in neither).")
print()
print("| objects | server state | implementation | wire | sync ms | client CPU ms | apiserver CPU ms | etcd CPU ms "
      "| listed from etcd | listed from watch cache | peak RSS MiB | RSS after sync MiB | runs |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    for st in states:
        for i in impls:
            k = (s, st, i)
            if k in runs:
                print(f"| {s} | {st} | {i} | {wire(k)} | {ms(med(k, 'sync_ms'))} | {ms(med(k, 'cpu_ms'))} "
                      f"| {ms(med(k, 'apiserver_cpu_ms'))} | {ms(med(k, 'etcd_cpu_ms'))} "
                      f"| {ms(med(k, 'etcd_list_objects'))} | {ms(med(k, 'cache_list_objects'))} "
                      f"| {mib(med(k, 'peak_rss_kb'))} | {mib(med(k, 'rss_kb'))} | {len(runs[k])} |")

def per_round(ka, kb, field):
    """This round's a/b ratios, for rounds that ran both."""
    by_run = lambda k: {r["run"]: r[field] for r in runs.get(k, [])}
    ra, rb = by_run(ka), by_run(kb)
    return [ra[k] / rb[k] for k in sorted(ra) if k in rb and rb[k]]

print()
print("| objects | server state | comparison | sync time: ratio of medians | sync time: per-round ratios (median, rounds < 1) "
      "| client CPU ratio | apiserver CPU: per-round ratios | peak RSS ratio |")
print("|---|---|---|---:|---|---:|---|---:|")
pairs = [("ours", "client-go-streaming"), ("ours-strip", "client-go-streaming"),
         ("ours-json", "client-go-streaming-json"), ("ours-json", "client-go-streaming"),
         ("client-go-streaming-json", "client-go-streaming"), ("ours", "ours-json"),
         ("ours", "kube-runtime"), ("ours", "client-go"),
         ("ours-strip", "client-go-streaming-transform"), ("ours-strip", "kube-runtime-transform"),
         ("ours", "ours-plain"), ("ours-plain", "kube-runtime"),
         ("ours-transform", "kube-runtime-transform"), ("ours-transform", "client-go-streaming-transform"),
         ("ours-transform", "client-go-transform"), ("ours", "kube-runtime-streaming"),
         ("ours-paged", "kube-runtime"), ("ours", "ours-deltafifo"), ("ours", "ours-realfifo"), ("ours-deltafifo", "kube-runtime"),
         ("ours", "ours-untraced"), ("ours-alt", "ours"), ("ours-alt", "client-go-streaming")]
for s in sizes:
    for st in states:
        for a, b in pairs:
            ka, kb = (s, st, a), (s, st, b)
            if ka in runs and kb in runs:
                rr = per_round(ka, kb, "sync_ms")
                rounds = " ".join(f"{x:.2f}" for x in rr)
                below = sum(1 for x in rr if x < 1)
                summary = f"median {statistics.median(rr):.2f}, {below} of {len(rr)} < 1" if rr else "no common rounds"
                print(f"| {s} | {st} | {a} / {b} | {ratio(med(ka, 'sync_ms'), med(kb, 'sync_ms'))} "
                      f"| {rounds} ({summary}) "
                      f"| {ratio(med(ka, 'cpu_ms'), med(kb, 'cpu_ms'))} "
                      f"| {' '.join(f'{x:.2f}' for x in per_round(ka, kb, 'apiserver_cpu_ms'))} "
                      f"| {ratio(med(ka, 'peak_rss_kb'), med(kb, 'peak_rss_kb'))} |")
rows = []
for s in sizes:
    for st in states:
        parts = []
        for a, b in [("ours", "ours-transform"), ("ours", "ours-strip"), ("kube-runtime", "kube-runtime-transform"),
                     ("client-go", "client-go-transform"), ("client-go-streaming", "client-go-streaming-transform")]:
            ka, kb = (s, st, a), (s, st, b)
            if ka in runs and kb in runs:
                dp = med(ka, "peak_rss_kb") - med(kb, "peak_rss_kb")
                dr = med(ka, "rss_kb") - med(kb, "rss_kb")
                parts.append(f"{a} -> {b}: {dp / 1024:.0f} / {dr / 1024:.0f}")
        if parts:
            rows.append(f"| {s} | {st} | {'; '.join(parts)} |")
if rows:
    print()
    print("| objects | server state | transform saves (peak RSS / RSS after sync, MiB) |")
    print("|---|---|---|")
    print("\n".join(rows))
EOF
