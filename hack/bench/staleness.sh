#!/usr/bin/env bash
# Staleness benchmark (issue 15): the Foo controller on a Deployment cache that lags,
# with the staleness guard off (client-go's behaviour, --freshness-timeout 0) and on
# (the default, 2 s), on a real control plane.
#
#   bash hack/bench/staleness.sh                              # 200 Foos, 0.5 s and 1 s, 3 rounds: ~5 min
#   FOOS=50 LATENCIES=1 ROUNDS=1 bash hack/bench/staleness.sh # smoke test
#   BENCH_KUBECONFIG=/path/kubeconfig bash hack/bench/staleness.sh   # reuse a control plane
#
# What one run measures (hack/bench/staleness, `staleness-bench`, one process per run;
# its header has the details). The Foo controller runs in the bench process, wired as
# cmd/sample-controller wires it (HTTP/2 client, $WORKERS workers, informers stripping
# managedFields, events.k8s.io/v1 Events), watching a fresh namespace. Its client
# delays the body of every Deployment watch by the latency (crates/dev/testenv's
# inject::WatchLatency, a client-side layer: over HTTP/2 a TCP proxy cannot delay the
# watch without delaying the writes multiplexed with it), so its Deployment informer
# lags while its writes answer at once; every response it gets is logged
# (inject::ResponseLog). Once its informers have synced, $FOOS Foos are created
# ($CREATE_CONCURRENCY at a time or paced, by a separate client), each naming its own
# Deployment. A Foo's first sync creates the Deployment and writes the Foo's status;
# the status write comes back at once through the Foo watch and queues the Foo again,
# and that second sync may run before the Deployment reaches the lagging cache:
# without the guard it POSTs the Deployment again (409 AlreadyExists), retried with
# backoff until the cache catches up; with it, the Foo is parked (not synced) until
# the Deployment informer has seen its create, and the workers sync other Foos.
# Reported per run (one JSON line in results.jsonl):
#   duplicate_creates  409 AlreadyExists answers to POST .../deployments
#   status_conflicts   409 Conflict answers to PUT .../foos/<name>/status
#   writes             every POST/PUT/PATCH/DELETE of the controller (Events included);
#                      writes_by splits them per method, resource and status
#   freshness          controller_freshness_checks_total{result=fresh|stale|incomparable}
#                      of the controller, and the mean wait of those checks
#   reconciles         controller_runtime_reconcile_total per result (error = a failed sync)
#   converge_ms        first Foo create -> every Foo has its Deployment (controlled by it)
#                      and a status, as seen by informers of a separate client
#   last_response_ms   first Foo create -> the controller's last response (its last
#                      retry or Event write; the run waits for 3 s of quiet)
#
# Control plane: hack/control-plane.sh up (or BENCH_KUBECONFIG). Unless
# KEEP_CONTROLLERS=1, the script then stops the kube-controller-manager, kube-scheduler
# and kwok it started (as hack/bench/converge.sh does): the Deployments stay as the
# controller created them, so each Foo gets exactly one status write and nothing but
# the controller's own writes moves the caches. Each run uses a namespace of its own
# (left in place: without kube-controller-manager nothing would finish deleting it).
#
# Each round runs every latency in both modes; the order of the modes alternates per
# round (off first in odd rounds), so neither always runs on a warmer server.
#
# Knobs: FOOS (200), LATENCIES (seconds, "0.5 1"), ROUNDS (3), FRESHNESS_TIMEOUT
# (guard's bound when on, ms, 2000), WORKERS (2), QPS (0 = unthrottled; the binaries'
# default is 20), BURST (30), KEEP_CONTROLLERS (0), SETTLE (s of pause before each run,
# 3), CREATE_CONCURRENCY (Foo creates in flight, 16: the Foos arrive in a burst),
# CREATE_INTERVAL (ms, 0; > 0 paces the creates, one Foo every CREATE_INTERVAL ms, so
# the queue never backs up: each Foo's second sync comes right after its first and,
# with the guard, waits out the whole latency in a worker), BENCH_KUBECONFIG, OUT (target/bench/staleness/<UTC timestamp>: machine.txt,
# server.txt, results.jsonl, logs/, summary.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
BENCH_DIR="$ROOT/hack/bench/staleness"
FOOS="${FOOS:-200}"
LATENCIES="${LATENCIES:-0.5 1}"
ROUNDS="${ROUNDS:-3}"
FRESHNESS_TIMEOUT="${FRESHNESS_TIMEOUT:-2000}"
WORKERS="${WORKERS:-2}"
QPS="${QPS:-0}"
BURST="${BURST:-30}"
KEEP_CONTROLLERS="${KEEP_CONTROLLERS:-0}"
SETTLE="${SETTLE:-3}"
CREATE_CONCURRENCY="${CREATE_CONCURRENCY:-16}"
CREATE_INTERVAL="${CREATE_INTERVAL:-0}"
OUT="${OUT:-$TARGET_DIR/bench/staleness/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
: >"$OUT/results.jsonl"

SCRIPT=staleness.sh
source hack/bench/lib.sh

{
  echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:     $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "rustc:    $(rustc --version)"
  echo "settings: $FOOS Foos, latencies $LATENCIES s, $ROUNDS rounds, guard bound $FRESHNESS_TIMEOUT ms, workers $WORKERS, qps $QPS (0 = unthrottled), burst $BURST, Foo creates: $CREATE_CONCURRENCY in flight, interval $CREATE_INTERVAL ms (0 = none)"
} | tee "$OUT/machine.txt"

say "building (cargo build --release in hack/bench/staleness)"
(cd "$BENCH_DIR" && cargo build --release 2>&1 | tail -n 2)
# Where cargo put it: CARGO_TARGET_DIR if set (cargo reads a relative one from the
# directory it runs in, the bench's), else the bench's own target/.
BENCH="$(cd "$BENCH_DIR" && realpath -m "${CARGO_TARGET_DIR:-target}")/release/staleness-bench"

bench_control_plane

"$KUBECTL" apply -f deploy/crds/samplecontroller.k8s.io_foos.yaml >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s crd/foos.samplecontroller.k8s.io >/dev/null

# watch_cache RESOURCE GROUP: whether kube-apiserver serves RESOURCE from its watch
# cache (it reports the cache's initialization; --watch-cache=false has none).
# (Read whole first: `grep -q` on the pipe would SIGPIPE kubectl and fail the pipeline.)
watch_cache() {
  local metrics
  metrics=$("$KUBECTL" get --raw /metrics 2>/dev/null || true)
  if grep -q "^apiserver_watch_cache_initialization_duration_seconds_count{group=\"$2\",resource=\"$1\"}" <<<"$metrics"; then
    echo "on"
  else
    echo "off (or not initialized yet)"
  fi
}
server_state() {
  echo "$1: $(date -u +%H:%M:%SZ); load $(load)"
  echo "  kubernetes $("$KUBECTL" version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' || echo '?')"
  echo "  watch cache: deployments $(watch_cache deployments apps), foos $(watch_cache foos samplecontroller.k8s.io)"
  echo "  kube-apiserver flags touching the cache: $(tr ' ' '\n' <"$CP_DIR/kube-apiserver.args" 2>/dev/null | grep -iE 'watch-cache|feature-gates' | tr '\n' ' ' || true)(none = defaults)"
  echo "  $(running kube-controller-manager), $(running kube-scheduler), $(running kwok)"
  echo "  objects: $("$KUBECTL" get foos -A --no-headers 2>/dev/null | wc -l) Foos, $("$KUBECTL" get deployments -A --no-headers 2>/dev/null | wc -l) Deployments"
}
# Touch both resources once so their watch caches exist before the first report.
"$KUBECTL" get deployments,foos -A >/dev/null 2>&1 || true
server_state "start" | tee "$OUT/server.txt"

for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then modes="off on"; else modes="on off"; fi
  for latency in $LATENCIES; do
    latency_ms=$(python3 -c "print(round($latency * 1000))")
    for mode in $modes; do
      timeout_ms=$FRESHNESS_TIMEOUT
      [ "$mode" = off ] && timeout_ms=0
      ns="stale-r$round-${latency_ms}ms-$mode"
      sleep "$SETTLE"
      l=$(load)
      log="$OUT/logs/$ns.log"
      line=$("$BENCH" --kubeconfig "$KUBECONFIG" --namespace "$ns" --foos "$FOOS" \
        --latency-ms "$latency_ms" --freshness-timeout-ms "$timeout_ms" --workers "$WORKERS" \
        --qps "$QPS" --burst "$BURST" --create-concurrency "$CREATE_CONCURRENCY" \
        --create-interval-ms "$CREATE_INTERVAL" 2>"$log") || { echo "$line"; die "run $ns failed; see $log"; }
      printf '{"round":%s,"load":"%s","result":%s}\n' "$round" "$l" "$line" >>"$OUT/results.jsonl"
      python3 - "$round" "$l" "$line" <<'EOF'
import json, sys
r = json.loads(sys.argv[3])
fr = r["freshness"]
print(f"round {sys.argv[1]} latency {r['latency_ms']} ms guard {r['guard']:3}: "
      f"409 AlreadyExists {r['duplicate_creates']}, 409 Conflict {r['status_conflicts']}, "
      f"writes {r['writes']}, fresh {fr.get('fresh', 0):.0f} stale {fr.get('stale', 0):.0f} "
      f"incomparable {fr.get('incomparable', 0):.0f}, converge {r['converge_ms']} ms "
      f"(load {sys.argv[2]})")
EOF
    done
  done
done
server_state "end" | tee -a "$OUT/server.txt"

say "summary"
python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
rows = [json.loads(l) for l in open(out / "results.jsonl")]
print(open(out / "machine.txt").read())
print("Every run, in the order run:")
print()
print("| round | latency | guard | 409 AlreadyExists (POST deployments) | 409 Conflict (PUT foos/status) | writes | Deployment creates | status writes | fresh | stale | incomparable | mean wait ms | failed syncs | Foos created ms | converge ms | last response ms | load |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for row in rows:
    r, fr = row["result"], row["result"]["freshness"]
    print(f"| {row['round']} | {r['latency_ms']} ms | {r['guard']} | {r['duplicate_creates']} | {r['status_conflicts']} "
          f"| {r['writes']} | {r['creates']} | {r['status_writes']} | {fr.get('fresh', 0):.0f} | {fr.get('stale', 0):.0f} "
          f"| {fr.get('incomparable', 0):.0f} | {r['freshness_mean_wait_ms']:.0f} | {r['reconciles'].get('error', 0):.0f} "
          f"| {r['created_ms']} | {r['converge_ms']} | {r['last_response_ms']} | {row['load'].split(',')[0]} |")
print()
print("Medians over rounds:")
print()
print("| latency | guard | 409 AlreadyExists | 409 Conflict | writes | fresh | stale | converge ms |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
groups = defaultdict(list)
for row in rows:
    groups[(row["result"]["latency_ms"], row["result"]["guard"])].append(row["result"])
for (lat, guard), rs in sorted(groups.items()):
    med = lambda f: statistics.median(f(r) for r in rs)
    print(f"| {lat} ms | {guard} | {med(lambda r: r['duplicate_creates']):.0f} | {med(lambda r: r['status_conflicts']):.0f} "
          f"| {med(lambda r: r['writes']):.0f} | {med(lambda r: r['freshness'].get('fresh', 0)):.0f} "
          f"| {med(lambda r: r['freshness'].get('stale', 0)):.0f} | {med(lambda r: r['converge_ms']):.0f} |")
print()
print("Writes per run, by method, resource and status:")
print()
for row in rows:
    r = row["result"]
    print(f"    round {row['round']} {r['latency_ms']} ms guard {r['guard']}: " + ", ".join(f"{k} x{v}" for k, v in r["writes_by"].items()))
print()
print("Server state:")
print()
for line in (out / "server.txt").read_text().splitlines():
    print(f"    {line}")
EOF
echo "results: $OUT"
