#!/usr/bin/env bash
# Converge benchmark: our Foo controller (cmd/sample-controller) vs the Go original,
# kubernetes/sample-controller (k8s.io/sample-controller), on a real control plane,
# plus a bare client doing the same writes without informers (the API server's limit).
#
#   bash hack/bench/converge.sh                          # N=500 and N=5000, 3 rounds: ~40 min
#   SIZES=200 ROUNDS=1 bash hack/bench/converge.sh       # smoke test, ~5 min
#   GO_CONTROLLER_BIN=/path/sample-controller bash hack/bench/converge.sh   # a prebuilt Go side
#   GO_CONTROLLER_SRC=/path/to/sample-controller-checkout bash hack/bench/converge.sh
#                                                  # the Go side built from a source tree
#   BENCH_KUBECONFIG=/path/kubeconfig bash hack/bench/converge.sh           # reuse a control plane
#
# What one run measures. N Foos exist (namespace $NAMESPACE, foo-00000..., each with
# spec.deploymentName = its own name and spec.replicas = 1), no Deployment, no Foo
# status, no Event. The harness (hack/bench/converge-go, `converge-bench run`) watches
# Foos and Deployments, then starts the controller and times it until CONVERGED: every
# Foo has a Deployment named spec.deploymentName whose controller owner reference is
# that Foo (same UID), and a .status with availableReplicas. Both controllers write
# the status right after creating the Deployment, so this is "every Foo synced once".
# Reported per run (one JSON line in results.jsonl):
#   converge_ms            controller start -> converged (includes process start-up,
#                          the informers' initial lists and the watch delay of the last
#                          event); first_deployment_ms is when the first Deployment appeared
#   cpu_ms                 controller CPU (user + sys, /proc/<pid>/stat) until converged
#   idle_cpu_ms            controller CPU over IDLE (60 s) starting IDLE_DELAY (5 s)
#                          after convergence: the resync cost (both resync every 30 s,
#                          so the window holds two resyncs); tail_cpu_ms is the CPU of
#                          the IDLE_DELAY gap (processing the echoes of its own writes)
#   peak_rss_kb            VmHWM just before SIGTERM (after the idle window)
#   apiserver_cpu_ms, etcd_cpu_ms (and idle_*): CPU of the local kube-apiserver and etcd
#                          over the same intervals (pids from the control plane's state dir)
#   requests, idle_requests: kube-apiserver's apiserver_request_total deltas by verb and
#                          resource (foos, deployments, events; the rest as "other")
#   event_writes, idle_event_writes: Events created or updated in the namespace
# Between runs `converge-bench reset` deletes the Deployments and Events and removes
# every Foo's .status (merge patch of /status with status: null), so every run starts
# from the same state.
#
# Implementations (IMPLS):
#   ours            target/release/sample-controller --workers $WORKERS --resync-period 30s
#                   --kube-api-qps $QPS --kube-api-burst $BURST --events-api $EVENTS_API,
#                   metrics and health servers off (sample-controller serves neither)
#   go              kubernetes/sample-controller $SAMPLE_CONTROLLER_VERSION (2 workers, 30 s
#                   resync, core/v1 Events, both hard-coded), with a small added file that
#                   sets rest.Config QPS/Burst (and the workers) from the environment (below)
#   ours-alt        an experiment next to ours: the same flags plus $ALT_ARGS, run as
#                   `env $ALT_ENV $ALT_BIN` ($ALT_BIN defaults to ours; e.g. a binary built
#                   from another commit, or ALT_ENV="MALLOC_ARENA_MAX=1")
#   bare            `converge-bench bare --concurrency $WORKERS`: LIST the Foos, then per Foo
#                   POST its Deployment and PUT its status, $WORKERS Foos at a time
#   bare-unbounded  the same with every Foo at once (one goroutine per Foo)
# One round runs every implementation once, the order rotating by one per round.
#
# Client-side throttling (QPS, BURST): QPS=0 (the default) turns it off on both sides:
# ours gets --kube-api-qps 0; the Go side gets rest.Config.QPS = -1 (client-go treats 0
# as "default 5", a negative QPS as "no rate limiter"). QPS > 0 sets the same QPS and
# Burst on both; note that sample-controller has two clientsets (Deployments + Events,
# and Foos), each with its own token bucket, while ours throttles the whole process.
# sample-controller's main.go has no flag for this. The script downloads the module
# (go mod download k8s.io/sample-controller@$SAMPLE_CONTROLLER_VERSION), copies it to
# $TARGET_DIR/bench/converge/build/, adds bench_throttle.go (package main), and inserts
# two calls in main.go with sed: applyBenchThrottle(cfg) before the clientsets are
# built, and controller.Run(ctx, benchWorkers(2)). Both read BENCH_KUBE_API_QPS,
# BENCH_KUBE_API_BURST and BENCH_WORKERS and log them ("bench: client-side throttling"),
# which the script checks in each Go run's log. The upstream tree is never modified.
# When the module proxy does not serve that module the script stops and says so.
# GO_CONTROLLER_BIN skips the download and build: it must be a sample-controller built
# with the same two additions (the log check tells if it is not). GO_CONTROLLER_SRC
# skips the download only: a checkout of kubernetes/sample-controller (the fetch tool's
# github:kubernetes/sample-controller, as hack/sieve.sh's GO_SAMPLE_CONTROLLER_SRC), whose
# go.mod pins the k8s.io modules to use; it is copied, patched the same way and built.
#
# Control plane: hack/control-plane.sh up (or BENCH_KUBECONFIG). Unless
# KEEP_CONTROLLERS=1, the script then stops the kube-controller-manager,
# kube-scheduler and kwok it started: with them, each Deployment becomes a ReplicaSet
# and a Pod (the Foo CRD allows replicas 1..10, not 0), whose status changes re-enqueue
# the Foos and change availableReplicas after convergence, adding load that is not
# the controllers' own. Without them, every Deployment stays exactly as the controller
# created it. The Foo CRD applied is deploy/crds/samplecontroller.k8s.io_foos.yaml
# (same group, version, kind, fields and status subresource as sample-controller's
# artifacts/examples/crd-status-subresource.yaml).
#
# Knobs: SIZES ("500 5000", run in increasing order: the namespace only grows), ROUNDS
# (3), IMPLS, WORKERS (2), QPS (0), BURST (30, used when QPS > 0), EVENTS_API (core/v1:
# what sample-controller writes; ours defaults to events.k8s.io/v1), IDLE (60s),
# IDLE_DELAY (5s), SETTLE (5 s of quiet after each reset), NAMESPACE (converge-bench),
# TIMEOUT (20m per run), GO_CONTROLLER_BIN, SAMPLE_CONTROLLER_VERSION (v0.<minor>.<patch>
# of the Kubernetes release hack/tools/control-plane pins), KEEP_CONTROLLERS (0),
# BENCH_KUBECONFIG, OUT (target/bench/converge/<UTC timestamp>: machine.txt,
# server.txt, load.txt, results.jsonl, logs/, summary.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SIZES="$(printf '%s\n' ${SIZES:-500 5000} | sort -n | tr '\n' ' ')"
ROUNDS="${ROUNDS:-3}"
IMPLS="${IMPLS:-ours go bare bare-unbounded}"
WORKERS="${WORKERS:-2}"
QPS="${QPS:-0}"
BURST="${BURST:-30}"
EVENTS_API="${EVENTS_API:-core/v1}"
IDLE="${IDLE:-60s}"
IDLE_DELAY="${IDLE_DELAY:-5s}"
SETTLE="${SETTLE:-5}"
NAMESPACE="${NAMESPACE:-converge-bench}"
TIMEOUT="${TIMEOUT:-20m}"
KEEP_CONTROLLERS="${KEEP_CONTROLLERS:-0}"
K8S_PINNED="$(awk '$1 == "k8s.io/kubernetes" { print $2 }' hack/tools/control-plane/go.mod)"
SAMPLE_CONTROLLER_VERSION="${SAMPLE_CONTROLLER_VERSION:-v0.${K8S_PINNED#v1.}}"
OUT="${OUT:-$TARGET_DIR/bench/converge/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT/logs" "$OUT/bin"
: >"$OUT/results.jsonl"
: >"$OUT/load.txt"

SCRIPT=converge.sh
source hack/bench/lib.sh

# patch_and_build_go SRC BIN: copy the sample-controller module at SRC to a build dir,
# add the throttle/workers hook (see the header) and build BIN.
patch_and_build_go() {
  local src=$1 bin=$2 build="$TARGET_DIR/bench/converge/build/sample-controller"
  rm -rf "$build" && mkdir -p "$build"
  cp -r "$src"/. "$build"/ && chmod -R u+w "$build"
  cat >"$build/bench_throttle.go" <<'EOF'
package main

// Added by hack/bench/converge.sh; not part of sample-controller. Sets the client-side
// throttling and the number of workers from the environment, so that both controllers
// of the benchmark run with the same settings. Unset: client-go's defaults and 2 workers.

import (
	"os"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// applyBenchThrottle: BENCH_KUBE_API_QPS (a negative QPS disables throttling; 0 means
// client-go's default, 5) and BENCH_KUBE_API_BURST.
func applyBenchThrottle(cfg *rest.Config) {
	if cfg == nil {
		return
	}
	if v := os.Getenv("BENCH_KUBE_API_QPS"); v != "" {
		q, err := strconv.ParseFloat(v, 32)
		if err != nil {
			klog.Fatalf("BENCH_KUBE_API_QPS=%q: %v", v, err)
		}
		cfg.QPS = float32(q)
	}
	if v := os.Getenv("BENCH_KUBE_API_BURST"); v != "" {
		b, err := strconv.Atoi(v)
		if err != nil {
			klog.Fatalf("BENCH_KUBE_API_BURST=%q: %v", v, err)
		}
		cfg.Burst = b
	}
	klog.InfoS("bench: client-side throttling", "qps", cfg.QPS, "burst", cfg.Burst)
}

// benchWorkers: BENCH_WORKERS, else def.
func benchWorkers(def int) int {
	n := def
	if v := os.Getenv("BENCH_WORKERS"); v != "" {
		w, err := strconv.Atoi(v)
		if err != nil || w < 1 {
			klog.Fatalf("BENCH_WORKERS=%q: want a positive integer", v)
		}
		n = w
	}
	klog.InfoS("bench: workers", "count", n)
	return n
}
EOF
  local main="$build/main.go"
  grep -q 'kubeClient, err := kubernetes.NewForConfig(cfg)' "$main" &&
    grep -q 'controller.Run(ctx, 2)' "$main" ||
    die "$main does not have the lines the throttle hook patches (sample-controller changed?)"
  sed -i -e 's|^\([[:space:]]*\)kubeClient, err := kubernetes.NewForConfig(cfg)|\1applyBenchThrottle(cfg)\n&|' \
    -e 's|controller.Run(ctx, 2)|controller.Run(ctx, benchWorkers(2))|' "$main"
  (cd "$build" && CGO_ENABLED=0 go build -trimpath -o "$bin" .)
}

# build_go_controller BIN: k8s.io/sample-controller@$SAMPLE_CONTROLLER_VERSION from the
# Go module proxy, patched and built as BIN.
build_go_controller() {
  local json dir
  json=$(cd "$OUT" && GOFLAGS=-mod=mod go mod download -json "k8s.io/sample-controller@$SAMPLE_CONTROLLER_VERSION" 2>&1) || true
  dir=$(printf '%s' "$json" | python3 -c 'import json,sys
try: d = json.load(sys.stdin)
except Exception: d = {}
print(d.get("Dir", "") if not d.get("Error") else "")')
  [ -n "$dir" ] && [ -f "$dir/main.go" ] || die "cannot download k8s.io/sample-controller@$SAMPLE_CONTROLLER_VERSION:
$json
Set GO_CONTROLLER_BIN to a sample-controller binary built with the additions described in this script's header."
  patch_and_build_go "$dir" "$1"
}

{
  echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host:     $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  echo "commit:   $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates cmd/sample-controller || echo ' (crates/ or cmd/sample-controller modified)')"
  echo "rustc:    $(rustc --version)"
  echo "go:       $(go version)"
  echo "sizes:    $SIZES; rounds: $ROUNDS; impls: $IMPLS"
  echo "settings: workers $WORKERS, qps $QPS (0 = unthrottled), burst $BURST, events $EVENTS_API, resync 30s, idle $IDLE after $IDLE_DELAY"
} | tee "$OUT/machine.txt"

say "building"
(cargo build --release -p sample-controller-bin 2>&1 | tail -n 2)
OURS_BIN="$TARGET_DIR/release/sample-controller"
(cd hack/bench/converge-go && go build -o "$OUT/bin/converge-bench" .)
HARNESS="$OUT/bin/converge-bench"
if [[ " $IMPLS " == *" go "* ]]; then
  if [ -n "${GO_CONTROLLER_BIN:-}" ]; then
    [ -x "$GO_CONTROLLER_BIN" ] || die "GO_CONTROLLER_BIN=$GO_CONTROLLER_BIN is not executable"
    GO_BIN="$GO_CONTROLLER_BIN"
    echo "go side:  $GO_BIN (prebuilt, GO_CONTROLLER_BIN)" | tee -a "$OUT/machine.txt"
  elif [ -n "${GO_CONTROLLER_SRC:-}" ]; then
    [ -f "$GO_CONTROLLER_SRC/main.go" ] || die "GO_CONTROLLER_SRC=$GO_CONTROLLER_SRC has no main.go"
    GO_BIN="$OUT/bin/sample-controller-go"
    patch_and_build_go "$GO_CONTROLLER_SRC" "$GO_BIN"
    echo "go side:  $GO_CONTROLLER_SRC ($(cd "$GO_CONTROLLER_SRC" && git rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'); k8s.io/client-go $(cd "$GO_CONTROLLER_SRC" && go list -m -f '{{.Version}}' k8s.io/client-go 2>/dev/null || echo '?')) + bench_throttle.go" | tee -a "$OUT/machine.txt"
  else
    GO_BIN="$OUT/bin/sample-controller-go"
    build_go_controller "$GO_BIN"
    echo "go side:  k8s.io/sample-controller@$SAMPLE_CONTROLLER_VERSION + bench_throttle.go" | tee -a "$OUT/machine.txt"
  fi
fi

bench_control_plane
APISERVER_PID=$(pid_of kube-apiserver)
ETCD_PID=$(pid_of etcd)
server_state() {
  echo "$1: $(date -u +%H:%M:%SZ); load $(load)"
  echo "  kubernetes $("$KUBECTL" version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])' || echo '?')"
  echo "  $(running kube-controller-manager), $(running kube-scheduler), $(running kwok)"
  echo "  kube-apiserver RSS $(rss_mib "$APISERVER_PID"), etcd RSS $(rss_mib "$ETCD_PID"), etcd data $(du -sh "$CP_DIR/etcd" 2>/dev/null | cut -f1 || echo -)"
  echo "  objects: $("$KUBECTL" get foos -A --no-headers 2>/dev/null | wc -l) Foos, $("$KUBECTL" get deployments -A --no-headers 2>/dev/null | wc -l) Deployments, $("$KUBECTL" get events -A --no-headers 2>/dev/null | wc -l) Events, $("$KUBECTL" get pods -A --no-headers 2>/dev/null | wc -l) Pods"
}

"$KUBECTL" apply -f deploy/crds/samplecontroller.k8s.io_foos.yaml >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s crd/foos.samplecontroller.k8s.io >/dev/null
server_state "start" | tee "$OUT/server.txt"

go_qps=$QPS
[ "$QPS" = 0 ] && go_qps=-1
# command_for IMPL: sets CMD to the command line of IMPL.
command_for() {
  case $1 in
  ours) CMD=("$OURS_BIN" --kubeconfig "$KUBECONFIG" --workers "$WORKERS" --resync-period 30s
    --kube-api-qps "$QPS" --kube-api-burst "$BURST" --events-api "$EVENTS_API"
    --metrics-bind-address 0 --health-probe-bind-address 0) ;;
  go) CMD=(env BENCH_KUBE_API_QPS="$go_qps" BENCH_KUBE_API_BURST="$BURST" BENCH_WORKERS="$WORKERS"
    "$GO_BIN" --kubeconfig "$KUBECONFIG") ;;
  ours-alt) CMD=(env ${ALT_ENV:-} "${ALT_BIN:-$OURS_BIN}" --kubeconfig "$KUBECONFIG" --workers "$WORKERS"
    --resync-period 30s --kube-api-qps "$QPS" --kube-api-burst "$BURST" --events-api "$EVENTS_API"
    --metrics-bind-address 0 --health-probe-bind-address 0 ${ALT_ARGS:-}) ;;
  bare) CMD=("$HARNESS" bare --namespace "$NAMESPACE" --concurrency "$WORKERS") ;;
  bare-unbounded) CMD=("$HARNESS" bare --namespace "$NAMESPACE" --concurrency 0) ;;
  *) die "unknown implementation $1" ;;
  esac
}

read -r -a impls <<<"$IMPLS"
for size in $SIZES; do
  say "setup: $size Foos in $NAMESPACE; load: $(load)"
  "$HARNESS" setup --namespace "$NAMESPACE" --count "$size"
  for round in $(seq 1 "$ROUNDS"); do
    n=${#impls[@]}
    for k in $(seq 0 $((n - 1))); do
      impl=${impls[$(((k + round - 1) % n))]}
      "$HARNESS" reset --namespace "$NAMESPACE" >"$OUT/logs/reset-$size-$round-$impl.json"
      sleep "$SETTLE"
      l=$(load)
      echo "size $size round $round $impl: load before: $l" | tee -a "$OUT/load.txt"
      idle=$IDLE
      [[ $impl == bare* ]] && idle=0
      log="$OUT/logs/$impl-$size-$round.log"
      command_for "$impl"
      line=$("$HARNESS" run --namespace "$NAMESPACE" --count "$size" --impl "$impl" --idle "$idle" \
        --idle-delay "$IDLE_DELAY" --timeout "$TIMEOUT" --apiserver-pid "$APISERVER_PID" --etcd-pid "$ETCD_PID" \
        --log "$log" -- "${CMD[@]}") || { echo "$line"; die "$impl did not converge; see $log"; }
      if [ "$impl" = go ] && ! grep -q "bench: client-side throttling.*qps=$go_qps" "$log"; then
        echo "WARNING: $log has no 'bench: client-side throttling ... qps=$go_qps' line: the Go side may run with client-go's default QPS 5" | tee -a "$OUT/load.txt"
      fi
      printf '{"size":%s,"round":%s,"load":"%s","result":%s}\n' "$size" "$round" "$l" "$line" >>"$OUT/results.jsonl"
      python3 - "$line" <<'EOF'
import json, sys
r = json.loads(sys.argv[1])
f = lambda k: "-" if r.get(k) is None else r[k]
print(f"  {r['impl']}: converged in {f('converge_ms')} ms (first Deployment at {f('first_deployment_ms')} ms), "
      f"cpu {f('cpu_ms')} ms, idle cpu {f('idle_cpu_ms')} ms, peak RSS {f('peak_rss_kb')} kB, "
      f"apiserver {f('apiserver_cpu_ms')} ms, etcd {f('etcd_cpu_ms')} ms")
EOF
    done
  done
  server_state "after size $size" | tee -a "$OUT/server.txt"
done
echo "end: load $(load)" >>"$OUT/load.txt"

say "summary (medians over rounds; ratios < 1 mean ours is faster / cheaper / smaller)"
python3 - "$OUT" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
runs = defaultdict(list)  # (size, impl) -> [result + round + load]
for line in open(out / "results.jsonl"):
    r = json.loads(line)
    res = r["result"]
    res["round"], res["load"] = r["round"], r["load"]
    runs[(r["size"], res["impl"])].append(res)
sizes = sorted({s for s, _ in runs})
order = ["ours", "go", "bare", "bare-unbounded"]
impls = [i for i in order if any((s, i) in runs for s in sizes)]

def med(size, impl, key):
    xs = [r[key] for r in runs.get((size, impl), []) if isinstance(r.get(key), (int, float)) and r[key] >= 0]
    return statistics.median(xs) if xs else None

def fmt(x, scale=1, digits=0):
    return "-" if x is None else f"{x / scale:,.{digits}f}"

print((out / "machine.txt").read_text().strip().replace("\n", "  \n"))
print()
print("| N | impl | converge ms | first Deployment ms | CPU ms | tail CPU ms | idle CPU ms / 60 s | peak RSS MiB | apiserver CPU ms | etcd CPU ms | idle apiserver / etcd CPU ms | Events written (converge / idle) | runs |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    for i in impls:
        if (s, i) not in runs:
            continue
        idle = "-" if med(s, i, "idle_cpu_ms") is None else f"{fmt(med(s, i, 'idle_apiserver_cpu_ms'))} / {fmt(med(s, i, 'idle_etcd_cpu_ms'))}"
        print(f"| {s} | {i} | {fmt(med(s, i, 'converge_ms'))} | {fmt(med(s, i, 'first_deployment_ms'))} "
              f"| {fmt(med(s, i, 'cpu_ms'))} | {fmt(med(s, i, 'tail_cpu_ms'))} | {fmt(med(s, i, 'idle_cpu_ms'))} | {fmt(med(s, i, 'peak_rss_kb'), 1024, 1)} "
              f"| {fmt(med(s, i, 'apiserver_cpu_ms'))} | {fmt(med(s, i, 'etcd_cpu_ms'))} | {idle} "
              f"| {fmt(med(s, i, 'event_writes'))} / {fmt(med(s, i, 'idle_event_writes'))} | {len(runs[(s, i)])} |")

def per_round(size, a, b, key):
    ra = {r["round"]: r.get(key) for r in runs.get((size, a), [])}
    rb = {r["round"]: r.get(key) for r in runs.get((size, b), [])}
    return [ra[k] / rb[k] for k in sorted(ra) if k in rb and isinstance(ra[k], (int, float)) and isinstance(rb[k], (int, float)) and rb[k] > 0]

if any((s, "ours") in runs and (s, "go") in runs for s in sizes):
    print()
    print("| N | ours / go | ratio of medians | per-round ratios |")
    print("|---:|---|---:|---|")
    for s in sizes:
        if (s, "ours") not in runs or (s, "go") not in runs:
            continue
        for key, what in [("converge_ms", "wall time to converge"), ("cpu_ms", "CPU to converge"),
                          ("idle_cpu_ms", "idle CPU"), ("peak_rss_kb", "peak RSS"),
                          ("apiserver_cpu_ms", "apiserver CPU to converge")]:
            a, b = med(s, "ours", key), med(s, "go", key)
            ratio = "-" if a is None or not b else f"**{a / b:.2f}**"
            print(f"| {s} | {what} | {ratio} | {' '.join(f'{x:.2f}' for x in per_round(s, 'ours', 'go', key))} |")

print()
print("API requests (kube-apiserver's apiserver_request_total, median per run; WATCH not counted):")
print()
kinds = sorted({k for rs in runs.values() for r in rs for k in (r.get("requests") or {})} |
               {k for rs in runs.values() for r in rs for k in (r.get("idle_requests") or {})},
               key=lambda k: (k == "other", k.split(" ")[-1], k))
print("| N | impl | " + " | ".join(kinds) + " |")
print("|---:|---|" + "---:|" * len(kinds))
for s in sizes:
    for i in impls:
        for phase, field in [("converge", "requests"), ("idle", "idle_requests")]:
            rs = [r.get(field) for r in runs.get((s, i), []) if r.get(field) is not None]
            if not rs:
                continue
            cells = [fmt(statistics.median([r.get(k, 0) for r in rs])) for k in kinds]
            print(f"| {s} | {i} ({phase}) | " + " | ".join(cells) + " |")

bare = [(s, i) for s in sizes for i in ("bare", "bare-unbounded") if (s, i) in runs]
if bare:
    print()
    print("| N | bare client | LIST ms | writes ms (2 per Foo) | writes/s | client CPU ms | apiserver CPU ms | etcd CPU ms |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for s, i in bare:
        children = [r["child"] for r in runs[(s, i)] if r.get("child")]
        lm = statistics.median([c["list_ms"] for c in children]) if children else None
        wm = statistics.median([c["write_ms"] for c in children]) if children else None
        conc = children[0]["concurrency"] if children else "?"
        rate = "-" if not wm else f"{2 * s * 1000 / wm:,.0f}"
        print(f"| {s} | {i} (concurrency {conc or 'N'}) | {fmt(lm)} | {fmt(wm)} | {rate} | {fmt(med(s, i, 'cpu_ms'))} "
              f"| {fmt(med(s, i, 'apiserver_cpu_ms'))} | {fmt(med(s, i, 'etcd_cpu_ms'))} |")

print()
print("Every run, in the order run:")
print()
print("| N | round | impl | load (1 min) | converge ms | CPU ms | idle CPU ms | peak RSS MiB | apiserver CPU ms | etcd CPU ms | idle apiserver / etcd CPU ms |")
print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for line in open(out / "results.jsonl"):
    r = json.loads(line)
    x = r["result"]
    g = lambda k, scale=1, digits=0: fmt(x.get(k) if isinstance(x.get(k), (int, float)) and x.get(k) >= 0 else None, scale, digits)
    idle = "-" if x.get("idle_cpu_ms") is None else f"{g('idle_apiserver_cpu_ms')} / {g('idle_etcd_cpu_ms')}"
    print(f"| {r['size']} | {r['round']} | {x['impl']} | {r['load'].split(',')[0]} | {g('converge_ms')} | {g('cpu_ms')} "
          f"| {g('idle_cpu_ms')} | {g('peak_rss_kb', 1024, 1)} | {g('apiserver_cpu_ms')} | {g('etcd_cpu_ms')} | {idle} |")

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
