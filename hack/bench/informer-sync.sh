#!/usr/bin/env bash
# Initial informer sync from a real control plane: crates/cache's SharedIndexInformer
# vs kube-runtime's reflector, on the same ConfigMaps, as separate processes; prints
# median sync time and median peak RSS (VmHWM) per implementation and size.
#
#   bash hack/bench/informer-sync.sh                   # 10k and 50k objects, 3 runs each: ~10 min
#   SIZES="10000" RUNS=5 bash hack/bench/informer-sync.sh
#   BENCH_KUBECONFIG=/path/kubeconfig bash hack/bench/informer-sync.sh   # reuse a running control plane
#
# What runs: hack/bench/informer-sync (a standalone cargo project, not in the main
# workspace) is built in release mode; hack/control-plane.sh brings up etcd +
# kube-apiserver (+ controllers, kwok) and is stopped on exit. One namespace is grown
# to each size (populate skips existing objects), then, per size, one warm-up sync
# (discarded) and RUNS rounds of every implementation in IMPLS, alternating.
# Logs, the raw JSON lines (results.jsonl) and the summary are kept in $OUT
# (default: target/bench/informer-sync).
#
# Implementations (informer-sync-bench sync --impl ...):
#   ours                    crates/cache SharedIndexInformer with its defaults (a streaming
#                           list, sendInitialEvents, falling back to paged lists; the in-order
#                           RealFIFO popped in batches), no handlers; timed until
#                           wait_for_cache_sync returns (woken, not polled)
#   ours-transform          the same + set_transform dropping metadata.managedFields
#   ours-paged              ours with set_watch_list(false): most-recent list in pages of
#                           500 (each page queued as it arrives, one page of read-ahead)
#   ours-deltafifo          ours with set_queue_kind(DeltaFifo): the classic per-key queue
#                           instead of the RealFIFO (not in IMPLS by default)
#   kube-runtime            reflector(store, watcher(api, watcher::Config::default())):
#                           most-recent list in pages of 500; timed until wait_until_ready
#   kube-runtime-transform  the same, dropping managedFields of every event before the store
#   kube-runtime-streaming  kube-runtime with streaming_lists() (sendInitialEvents)
#
# Each round runs every implementation once; the order rotates by one per round, so
# no implementation always follows the same one. The summary shows the ratio of the
# medians and, because the machine drifts between rounds, each round's own ratio.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BENCH_DIR="$ROOT/hack/bench/informer-sync"
SIZES="${SIZES:-10000 50000}"
RUNS="${RUNS:-3}"
IMPLS="${IMPLS:-ours kube-runtime ours-transform kube-runtime-transform ours-paged kube-runtime-streaming}"
NAMESPACE="${NAMESPACE:-informer-sync-bench}"
CONCURRENCY="${CONCURRENCY:-32}"
OUT="${OUT:-$ROOT/target/bench/informer-sync}"
mkdir -p "$OUT"
: >"$OUT/results.jsonl"

say() { printf '\n=== %s\n' "$*"; }
# CPU time (user + system, ms) used so far by the local process matching $1; 0 if none
# (a remote control plane): the server's share of each sync, which the client's
# figures do not show.
proc_cpu_ms() {
  local pid
  pid=$(pgrep -f "$1" | head -n 1 || true)
  if [ -z "$pid" ]; then echo 0; return; fi
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$pid/stat"
}
load() { uptime | sed 's/.*load average: //'; }

{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:    $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:  $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "rustc:   $(rustc --version)"
  echo "git:     $(git rev-parse --short HEAD)$(git status --porcelain -- crates/cache | grep -q . && echo ' + uncommitted changes in crates/cache')"
  echo "sizes:   $SIZES; runs: $RUNS; impls: $IMPLS"
} | tee "$OUT/machine.txt"

say "building (cargo build --release in hack/bench/informer-sync)"
(cd "$BENCH_DIR" && cargo build --release 2>&1 | tail -n 2)
BIN="$BENCH_DIR/target/release/informer-sync-bench"

if [ -n "${BENCH_KUBECONFIG:-}" ]; then
  export KUBECONFIG="$BENCH_KUBECONFIG"
  say "using the control plane of $KUBECONFIG"
else
  say "control plane up"
  UP_OUT=$(bash hack/control-plane.sh up --nodes 1 2> >(tee "$OUT/control-plane.log" >&2))
  KUBECONFIG=$(printf '%s\n' "$UP_OUT" | sed -n 's/^KUBECONFIG=//p' | head -n 1)
  [ -n "$KUBECONFIG" ] || { echo "no KUBECONFIG in the output of control-plane.sh up" >&2; exit 1; }
  export KUBECONFIG
  CP_DIR=$(dirname "$KUBECONFIG")
  trap 'say "control plane down"; bash hack/control-plane.sh down "$CP_DIR" || true' EXIT
fi

for size in $SIZES; do
  say "populate $NAMESPACE to $size ConfigMaps ($CONCURRENCY in flight); load: $(load)"
  "$BIN" populate --count "$size" --namespace "$NAMESPACE" --concurrency "$CONCURRENCY" | tee -a "$OUT/populate.jsonl"
  sleep 5
  echo "warm-up sync (discarded): $("$BIN" sync --impl ours --namespace "$NAMESPACE")"
  echo "size $size: load before runs: $(load)" | tee -a "$OUT/load.txt"
  read -r -a impls <<<"$IMPLS"
  for run in $(seq 1 "$RUNS"); do
    n=${#impls[@]}
    for k in $(seq 0 $((n - 1))); do
      impl=${impls[$(((k + run - 1) % n))]}
      api0=$(proc_cpu_ms 'bin/kube-apiserver'); etcd0=$(proc_cpu_ms 'bin/etcd')
      line=$("$BIN" sync --impl "$impl" --namespace "$NAMESPACE")
      api=$(( $(proc_cpu_ms 'bin/kube-apiserver') - api0 )); etcd=$(( $(proc_cpu_ms 'bin/etcd') - etcd0 ))
      echo "size=$size run=$run apiserver_cpu_ms=$api etcd_cpu_ms=$etcd $line"
      printf '{"size":%s,"run":%s,"apiserver_cpu_ms":%s,"etcd_cpu_ms":%s,"result":%s}\n' \
        "$size" "$run" "$api" "$etcd" "$line" >>"$OUT/results.jsonl"
    done
  done
  echo "size $size: load after runs:  $(load)" | tee -a "$OUT/load.txt"
done

say "summary (medians of $RUNS runs; ratio < 1 means ours is faster / smaller)"
python3 - "$OUT/results.jsonl" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[(r["size"], r["result"]["impl"])].append(dict(
        r["result"], run=r["run"], apiserver_cpu_ms=r.get("apiserver_cpu_ms"), etcd_cpu_ms=r.get("etcd_cpu_ms")))

def med(size, impl, field):
    xs = [r[field] for r in runs.get((size, impl), []) if r.get(field) is not None]
    return statistics.median(xs) if xs else None

def mib(kb):
    return "-" if kb is None else f"{kb / 1024:.0f}"

def ms(x):
    return "-" if x is None else f"{x:.0f}"

def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"

impls = ["ours", "ours-transform", "ours-paged", "ours-deltafifo", "kube-runtime", "kube-runtime-transform", "kube-runtime-streaming"]
sizes = sorted({s for s, _ in runs})
print("| objects | implementation | sync ms | client CPU ms | apiserver CPU ms | etcd CPU ms | peak RSS MiB | RSS after sync MiB | runs |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    for i in impls:
        if (s, i) in runs:
            print(f"| {s} | {i} | {ms(med(s, i, 'sync_ms'))} | {ms(med(s, i, 'cpu_ms'))} "
                  f"| {ms(med(s, i, 'apiserver_cpu_ms'))} | {ms(med(s, i, 'etcd_cpu_ms'))} "
                  f"| {mib(med(s, i, 'peak_rss_kb'))} | {mib(med(s, i, 'rss_kb'))} | {len(runs[(s, i)])} |")

def per_round(size, a, b, field):
    """This round's a/b ratios, for rounds that ran both."""
    by_run = lambda impl: {r["run"]: r[field] for r in runs.get((size, impl), [])}
    ra, rb = by_run(a), by_run(b)
    return [ra[k] / rb[k] for k in sorted(ra) if k in rb and rb[k]]

print()
print("| objects | comparison | sync time: ratio of medians | sync time: per-round ratios (median, rounds < 1) | client CPU ratio | peak RSS ratio |")
print("|---|---|---:|---|---:|---:|")
for s in sizes:
    for a, b in [("ours", "kube-runtime"), ("ours-transform", "kube-runtime-transform"),
                 ("ours", "kube-runtime-streaming"), ("ours-paged", "kube-runtime"),
                 ("ours", "ours-deltafifo"), ("ours-deltafifo", "kube-runtime")]:
        if (s, a) in runs and (s, b) in runs:
            rr = per_round(s, a, b, "sync_ms")
            rounds = " ".join(f"{x:.2f}" for x in rr)
            below = sum(1 for x in rr if x < 1)
            print(f"| {s} | {a} / {b} | {ratio(med(s, a, 'sync_ms'), med(s, b, 'sync_ms'))} "
                  f"| {rounds} (median {statistics.median(rr):.2f}, {below} of {len(rr)} < 1) "
                  f"| {ratio(med(s, a, 'cpu_ms'), med(s, b, 'cpu_ms'))} "
                  f"| {ratio(med(s, a, 'peak_rss_kb'), med(s, b, 'peak_rss_kb'))} |")
print()
print("| objects | transform saves (peak RSS / RSS after sync, MiB) |")
print("|---|---|")
for s in sizes:
    parts = []
    for a, b in [("ours", "ours-transform"), ("kube-runtime", "kube-runtime-transform")]:
        if (s, a) in runs and (s, b) in runs:
            dp = med(s, a, "peak_rss_kb") - med(s, b, "peak_rss_kb")
            dr = med(s, a, "rss_kb") - med(s, b, "rss_kb")
            parts.append(f"{a}: {dp / 1024:.0f} / {dr / 1024:.0f}")
    print(f"| {s} | {'; '.join(parts)} |")
EOF
