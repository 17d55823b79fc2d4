#!/usr/bin/env bash
# Starvation benchmark (issue 15): N Foos exist without Deployments, our controller
# (cmd/sample-controller) restarts, and one new Foo is created right after its caches
# have synced. How long until the new Foo's Deployment exists: with the priority queue
# (the default: initial-list adds wait at low priority) vs client-go's plain FIFO
# (--fifo-queue), where it waits behind the whole catch-up. Goal: under 1 s vs the
# whole catch-up.
#
#   bash hack/bench/starvation.sh                         # N=5,000, QPS 0 and 50, 3 rounds: ~45 min
#   N=500 ROUNDS=1 QPS_LIST=0 bash hack/bench/starvation.sh   # smoke test, ~2 min
#   BENCH_KUBECONFIG=/path/kubeconfig bash hack/bench/starvation.sh   # reuse a control plane
#
# What one run measures (hack/bench/converge-go, `converge-bench starve`; its
# starvation.go says the same per field). N Foos exist in $NAMESPACE (foo-00000...,
# spec.deploymentName = the Foo's name, spec.replicas = 1), no Deployment, no status.
# The harness watches Foos and Deployments, starts target/release/sample-controller,
# polls its /readyz every 10 ms (200 once the informers have synced and the handlers
# have seen the initial lists: every old Foo's key is in the queue), and at the first
# 200 creates the Foo $NEW_FOO: created after the controller's lists, it reaches the
# controller through its watch, at the default priority. Then:
#   new_foo_ms              create sent -> the new Foo's Deployment in the harness's
#                           watch (includes that watch's delay, milliseconds)
#   old_deployments_at_new  old Foos' Deployments created before it (exact: the watch
#                           delivers in resourceVersion order)
#   catch_up_after_ready_ms /readyz 200 -> all N+1 Foos converged (a Deployment
#                           controlled by the Foo and a .status: every Foo synced once)
#   ready_ms                process start -> /readyz 200 (the initial lists)
#   queue_depth_at_create   the controller's workqueue_depth just before the create
# plus the controller's CPU, the API server's and etcd's CPU, API requests by verb,
# the LISTs of foos/deployments served from the watch cache vs etcd, and the
# controller's syncs, queue adds and staleness-guard waits (its /metrics).
#
# Settings. Both queues run the same binary and flags but --fifo-queue: --workers
# $WORKERS, --resync-period 30s, --namespace $NAMESPACE, events.k8s.io/v1 Events (the
# binary's default), metrics and health on free loopback ports. Client-side throttling
# (QPS_LIST, one pass per value): 0 is --kube-api-qps 0 (unthrottled); otherwise
# --kube-api-qps QPS --kube-api-burst $BURST. Starvation depends on it: throttled, the
# catch-up takes 3 requests per Foo / QPS (a Deployment, a status, an Event), which is
# how long a new Foo waits behind it in a FIFO.
#
# One round runs both queues, the order alternating each round (priority first in odd
# rounds). Before each run `converge-bench reset` deletes the Deployments (and the new
# Foo's) and Events and removes every Foo's status; then SETTLE seconds of quiet.
#
# Control plane: hack/control-plane.sh up --nodes 1 (or BENCH_KUBECONFIG). Unless
# KEEP_CONTROLLERS=1, its kube-controller-manager, kube-scheduler and kwok are stopped
# (as in converge.sh): every Deployment stays as the controller created it, with no
# ReplicaSet, Pod or status changes re-enqueueing Foos.
#
# Knobs: N (5000), ROUNDS (3), QPS_LIST ("0 50"), BURST (30, the binary's default),
# WORKERS (2), NAMESPACE (starvation-bench), NEW_FOO (starve-new), SETTLE (5),
# TIMEOUT (20m per run), KEEP_CONTROLLERS (0), BENCH_KUBECONFIG, OUT
# (target/bench/starvation/<UTC timestamp>: machine.txt, server.txt, load.txt,
# results.jsonl, logs/, summary.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
N="${N:-5000}"
ROUNDS="${ROUNDS:-3}"
QPS_LIST="${QPS_LIST:-0 50}"
BURST="${BURST:-30}"
WORKERS="${WORKERS:-2}"
NAMESPACE="${NAMESPACE:-starvation-bench}"
NEW_FOO="${NEW_FOO:-starve-new}"
SETTLE="${SETTLE:-5}"
TIMEOUT="${TIMEOUT:-20m}"
KEEP_CONTROLLERS="${KEEP_CONTROLLERS:-0}"
OUT="${OUT:-$TARGET_DIR/bench/starvation/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT/logs" "$OUT/bin"
: >"$OUT/results.jsonl"
: >"$OUT/load.txt"

SCRIPT=starvation.sh
source hack/bench/lib.sh
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

{
  echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:     $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "commit:   $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- crates cmd/sample-controller 2>/dev/null || echo ' (crates/ or cmd/sample-controller modified)')"
  echo "rustc:    $(rustc --version)"
  echo "go:       $(go version)"
  echo "settings: N $N, rounds $ROUNDS, qps $QPS_LIST (0 = unthrottled), burst $BURST, workers $WORKERS, resync 30s, events.k8s.io/v1 Events"
} | tee "$OUT/machine.txt"

say "building"
(cargo build --release -p sample-controller-bin 2>&1 | tail -n 2)
BIN="$TARGET_DIR/release/sample-controller"
(cd hack/bench/converge-go && go build -o "$OUT/bin/converge-bench" .)
HARNESS="$OUT/bin/converge-bench"

bench_control_plane
APISERVER_PID=$(pid_of kube-apiserver)
ETCD_PID=$(pid_of etcd)
server_state() {
  echo "$1: $(date -u +%H:%M:%SZ); load $(load)"
  echo "  kubernetes $("$KUBECTL" version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' || echo '?')"
  local wc="default (enabled, every resource)"
  if [ -f "$CP_DIR/kube-apiserver.args" ] && grep -q -- '--watch-cache' "$CP_DIR/kube-apiserver.args"; then
    wc=$(grep -o -- '--watch-cache[^ ]*' "$CP_DIR/kube-apiserver.args" | tr '\n' ' ')
  fi
  echo "  kube-apiserver watch cache: $wc; feature gates: $("$KUBECTL" get --raw /metrics 2>/dev/null |
    sed -n 's/^kubernetes_feature_enabled{name="\(WatchList\|ConsistentListFromCache\|ListFromCacheSnapshot\)",stage="[A-Z]*"} \([01]\)$/\1=\2/p' | tr '\n' ' ')"
  echo "  $(running kube-controller-manager), $(running kube-scheduler), $(running kwok)"
  echo "  kube-apiserver RSS $(rss_mib "$APISERVER_PID"), etcd RSS $(rss_mib "$ETCD_PID"), etcd data $(du -sh "$CP_DIR/etcd" 2>/dev/null | cut -f1 || echo -)"
  echo "  objects: $("$KUBECTL" get foos -A --no-headers 2>/dev/null | wc -l) Foos, $("$KUBECTL" get deployments -A --no-headers 2>/dev/null | wc -l) Deployments, $("$KUBECTL" get events -A --no-headers 2>/dev/null | wc -l) Events, $("$KUBECTL" get pods -A --no-headers 2>/dev/null | wc -l) Pods"
}

"$KUBECTL" apply -f deploy/crds/samplecontroller.k8s.io_foos.yaml >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s crd/foos.samplecontroller.k8s.io >/dev/null
say "setup: $N Foos in $NAMESPACE; load: $(load)"
"$HARNESS" setup --namespace "$NAMESPACE" --count "$N"
server_state "start" | tee "$OUT/server.txt"

for qps in $QPS_LIST; do
  for round in $(seq 1 "$ROUNDS"); do
    queues="priority fifo"
    [ $((round % 2)) = 0 ] && queues="fifo priority"
    for queue in $queues; do
      "$HARNESS" reset --namespace "$NAMESPACE" >"$OUT/logs/reset-$qps-$round-$queue.json"
      sleep "$SETTLE"
      l=$(load)
      echo "qps $qps round $round $queue: load before: $l" | tee -a "$OUT/load.txt"
      hport=$(free_port)
      mport=$(free_port)
      cmd=("$BIN" --kubeconfig "$KUBECONFIG" --namespace "$NAMESPACE" --workers "$WORKERS" --resync-period 30s
        --kube-api-qps "$qps" --kube-api-burst "$BURST"
        --metrics-secure=false --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport")
      [ "$queue" = fifo ] && cmd+=(--fifo-queue)
      log="$OUT/logs/$queue-qps$qps-$round.log"
      line=$("$HARNESS" starve --namespace "$NAMESPACE" --count "$N" --new-foo "$NEW_FOO" --impl "$queue" \
        --readyz "http://127.0.0.1:$hport/readyz" --metrics "http://127.0.0.1:$mport/metrics" \
        --timeout "$TIMEOUT" --apiserver-pid "$APISERVER_PID" --etcd-pid "$ETCD_PID" --log "$log" \
        -- "${cmd[@]}") || { echo "$line"; die "$queue (qps $qps, round $round) failed; see $log"; }
      printf '{"qps":%s,"burst":%s,"round":%s,"load":"%s","result":%s}\n' "$qps" "$BURST" "$round" "$l" "$line" >>"$OUT/results.jsonl"
      python3 - "$line" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
print(f"  {r['impl']}: ready {r['ready_ms']} ms, queue {r['queue_depth_at_create']} {r.get('queue_depth_by_priority_at_create')}, "
      f"new Foo's Deployment {r['new_foo_ms']} ms after its create with {r['old_deployments_at_new']} old Deployments, "
      f"catch-up {r['catch_up_after_ready_ms']} ms after ready, cpu {r['cpu_ms']} ms")
EOF
    done
  done
  server_state "after qps $qps" | tee -a "$OUT/server.txt"
done
echo "end: load $(load)" >>"$OUT/load.txt"

say "summary"
python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
rows = [json.loads(line) for line in open(out / "results.jsonl")]
runs = defaultdict(list)  # (qps, queue) -> results
for r in rows:
    x = r["result"]
    x["round"], x["load"], x["qps"], x["burst"] = r["round"], r["load"], r["qps"], r["burst"]
    runs[(r["qps"], x["impl"])].append(x)

def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"

def med(qps, queue, key):
    xs = [x[key] for x in runs.get((qps, queue), []) if isinstance(x.get(key), (int, float))]
    return statistics.median(xs) if xs else None

def throttle(qps, burst):
    return "unthrottled (--kube-api-qps 0)" if qps == 0 else f"--kube-api-qps {qps} --kube-api-burst {burst}"

print((out / "machine.txt").read_text().strip().replace("\n", "  \n"))
print()
print("Every run, in the order run (times in ms; `old done` = old Foos' Deployments created before the new Foo's):")
print()
print("| client | round | queue | load (1 min) | ready | queue depth at create | new Foo's Deployment | old done | catch-up after ready | new / catch-up | CPU | apiserver / etcd CPU |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    x = r["result"]
    ratio = x["new_foo_ms"] / x["catch_up_after_ready_ms"] if x.get("catch_up_after_ready_ms") else None
    depth = x.get("queue_depth_at_create")
    by = x.get("queue_depth_by_priority_at_create") or {}
    if by:
        depth = f"{depth} ({', '.join(f'{v} at {k}' for k, v in sorted(by.items(), key=lambda kv: -int(kv[0])))})"
    print(f"| {throttle(r['qps'], r['burst'])} | {r['round']} | {x['impl']} | {r['load'].split(',')[0]} | {fmt(x['ready_ms'])} "
          f"| {depth} | **{fmt(x['new_foo_ms'])}** | {x['old_deployments_at_new']} | {fmt(x['catch_up_after_ready_ms'])} "
          f"| {fmt(ratio, 3)} | {fmt(x.get('cpu_ms'))} | {fmt(x.get('apiserver_cpu_ms'))} / {fmt(x.get('etcd_cpu_ms'))} |")

print()
print("Medians, and FIFO / priority per round (same round = back to back):")
print()
print("| client | queue | new Foo's Deployment ms | old done at that moment | catch-up after ready ms | runs |")
print("|---|---|---:|---:|---:|---:|")
for qps in sorted({q for q, _ in runs}):
    burst = runs[(qps, next(i for q, i in runs if q == qps))][0]["burst"]
    for queue in ("priority", "fifo"):
        if (qps, queue) in runs:
            print(f"| {throttle(qps, burst)} | {queue} | {fmt(med(qps, queue, 'new_foo_ms'))} | {fmt(med(qps, queue, 'old_deployments_at_new'))} "
                  f"| {fmt(med(qps, queue, 'catch_up_after_ready_ms'))} | {len(runs[(qps, queue)])} |")
print()
for qps in sorted({q for q, _ in runs}):
    p = {x["round"]: x for x in runs.get((qps, "priority"), [])}
    f = {x["round"]: x for x in runs.get((qps, "fifo"), [])}
    both = sorted(set(p) & set(f))
    if not both:
        continue
    wait = " ".join(f"{f[k]['new_foo_ms'] / max(p[k]['new_foo_ms'], 1):,.0f}x" for k in both)
    cu = " ".join(f"{p[k]['catch_up_after_ready_ms'] / f[k]['catch_up_after_ready_ms']:.2f}" for k in both)
    print(f"* qps {qps}: the new Foo waited FIFO / priority = {wait} per round; "
          f"catch-up priority / FIFO = {cu} per round (the cost of the priority queue on the whole catch-up)")

print()
print("API requests (kube-apiserver's apiserver_request_total, start -> converged; WATCH not counted), LISTs of foos/deployments "
      "by storage (none: the informers' streaming lists, WATCHes served from the watch cache), and the controller's own counters at convergence:")
print()
for r in rows:
    x = r["result"]
    req = ", ".join(f"{v} {k}" for k, v in sorted((x.get("requests") or {}).items()))
    lists = ", ".join(f"{v} {k}" for k, v in sorted((x.get("lists") or {}).items())) or "none"
    ctr = x.get("controller_counters") or {}
    def total(prefix, **labels):
        return sum(v for k, v in ctr.items() if k.startswith(prefix + "{") and all(f'{a}="{b}"' in k for a, b in labels.items()))
    syncs = ""
    if ctr:
        syncs = (f"; syncs {total('controller_runtime_reconcile_total'):,.0f} (errors {total('controller_runtime_reconcile_total', result='error'):,.0f}, "
                 f"requeues {total('controller_runtime_reconcile_total', result='requeue'):,.0f}), queue adds {total('workqueue_adds_total'):,.0f}, "
                 f"staleness-guard checks {total('controller_freshness_checks_total'):,.0f} (waited {total('controller_freshness_wait_seconds_sum'):.1f} s in all)")
    print(f"* qps {r['qps']} round {r['round']} {x['impl']}: {req}; lists: {lists}{syncs}")

print()
print("Load (1, 5, 15 min) before each run:")
print()
for line in (out / "load.txt").read_text().splitlines():
    print(f"    {line}")
print()
print("Server state:")
print()
for line in (out / "server.txt").read_text().splitlines():
    print(f"    {line}")
EOF
