#!/usr/bin/env bash
# Sharding benchmark (issue 31, docs/benchmarks.md "Scaling out"): N Foos reconciled by
# 1, 2 and 3 replicas of sample-controller in one shard group, with the API server's
# ShardedListAndWatch gate on (server-side filtering) and off (client-side).
#
#   bash hack/bench/sharding.sh                       # 5000 Foos, 1 2 3 replicas, gate on and off
#   FOOS=1000 REPLICAS="1 3" GATES=on bash hack/bench/sharding.sh   # smaller
#
# Per gate: a control plane of its own (hack/control-plane.sh up, the gate through
# KUBE_APISERVER_EXTRA_ARGS, kube-controller-manager without its Deployment controller so
# Deployments stay as the controller writes them: no ReplicaSets, no Pods), the Foo CRD,
# FOOS Foos created once. Then, for each replica count R, from no Deployment at all:
#   converge_s      R replicas started together -> every Foo has its Deployment
#   rss_mib         per replica, VmRSS 10 s after convergence; cache_mib = rss_mib minus
#                   the RSS of one replica synced on an empty namespace (the process's
#                   own memory: runtime, client, servers), i.e. what its caches hold
#   cpu_s           per replica, user + system CPU from start to convergence
#   foos_cached     per replica, sharding_cached_objects of its Foo informer
#   join_s, leave_s one more replica joins (until it holds 1/(R+1) and every member sees
#                   R+1), then leaves on SIGTERM (until the others hold everything again)
#   relists         reflector lists the join and the leave cost, all replicas together
# Results: one JSON line per run in $OUT/results.jsonl, and $OUT/summary.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
FOOS="${FOOS:-5000}"
REPLICAS="${REPLICAS:-1 2 3}"
GATES="${GATES:-on off}"
NAMESPACE="${NAMESPACE:-shard-bench}"
BIN="${BIN:-$TARGET_DIR/release/sample-controller}"
OUT="${OUT:-$TARGET_DIR/bench/sharding/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT/logs"
: >"$OUT/results.jsonl"
SCRIPT=sharding.sh
source hack/bench/lib.sh

[ -x "$BIN" ] || { say "building $BIN"; cargo build --release --locked -p sample-controller-bin; }
KUBECTL="$(bash hack/control-plane.sh bin-dir)/kubectl"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

PIDS=()
PORTS=()
# start_replica NAME: one sample-controller in the shard group; appends its pid and port.
start_replica() {
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$BIN" --kubeconfig "$KUBECONFIG" --namespace "$NAMESPACE" --workers 4 --kube-api-qps 0 \
    --shard-group sample-controller --shard-lease-namespace "$NAMESPACE" \
    --shard-lease-duration 6s --shard-renew-deadline 4s --shard-retry-period 1s \
    --metrics-secure=false --metrics-bind-address "127.0.0.1:$port" --health-probe-bind-address 0 --log-format json \
    >"$OUT/logs/$1.log" 2>&1 &
  PIDS+=("$!")
  PORTS+=("$port")
}
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
  PORTS=()
}
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" 'index($0, m) == 1 { s += $NF } END { print s + 0 }'; }
cpu_s() { awk '{ printf "%.1f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
deployments() { k get deployments -n "$NAMESPACE" --no-headers 2>/dev/null | wc -l; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
# members_all N: every replica sees N members.
members_all() {
  local p
  for p in "${PORTS[@]}"; do [ "$(metric "$p" 'sharding_members{')" = "$1" ] || return 1; done
}
# held_sum: the hash space the replicas hold together (1 when all is covered).
held_sum() {
  local p s=0
  for p in "${PORTS[@]}"; do s=$(python3 -c "print($s + $(metric "$p" 'sharding_held_fraction{'))"); done
  echo "$s"
}
lists_total() {
  local p s=0
  for p in "${PORTS[@]}"; do s=$((s + $(metric "$p" 'reflector_lists_total{' | cut -d. -f1))); done
  echo "$s"
}

for gate in $GATES; do
  say "gate $gate: control plane"
  extra=""
  [ "$gate" = on ] && extra="--feature-gates=ShardedListAndWatch=true"
  up_out=$(KUBE_APISERVER_EXTRA_ARGS="$extra" KUBE_CONTROLLER_MANAGER_EXTRA_ARGS="--controllers=-deployment-controller" \
    bash hack/control-plane.sh up --nodes 1 2>"$OUT/control-plane-$gate.log")
  KUBECONFIG=$(printf '%s\n' "$up_out" | sed -n 's/^KUBECONFIG=//p' | head -n 1)
  export KUBECONFIG
  CP_DIR=$(dirname "$KUBECONFIG")
  trap 'stop_all; bash hack/control-plane.sh down "$CP_DIR" >/dev/null 2>&1 || true' EXIT
  k apply --server-side -f deploy/crds/ >/dev/null
  k create namespace "$NAMESPACE" >/dev/null
  k wait --for condition=established crd/foos.samplecontroller.k8s.io >/dev/null

  # One replica on the empty namespace: the process's own memory.
  start_replica empty
  sleep 15
  base=$(rss "${PIDS[0]}")
  stop_all
  k delete leases -n "$NAMESPACE" --all >/dev/null
  say "baseline RSS (empty namespace): $base MiB"

  say "creating $FOOS Foos"
  python3 - "$FOOS" >"$OUT/foos.yaml" <<'EOF'
import sys
n = int(sys.argv[1])
print("apiVersion: v1\nkind: List\nitems:")
for i in range(n):
    print(f"- apiVersion: samplecontroller.k8s.io/v1alpha1\n  kind: Foo\n  metadata: {{name: foo-{i:05d}}}\n  spec: {{deploymentName: foo-{i:05d}, replicas: 1}}")
EOF
  k create -n "$NAMESPACE" -f "$OUT/foos.yaml" >/dev/null

  for r in $REPLICAS; do
    # One DELETE of the collection (kubectl delete --all sends one request per object).
    k delete --raw "/apis/apps/v1/namespaces/$NAMESPACE/deployments" >/dev/null 2>&1 || true
    until [ "$(deployments)" = 0 ]; do sleep 1; done
    k delete leases -n "$NAMESPACE" --all >/dev/null 2>&1 || true
    sleep 3
    say "gate $gate, $r replicas: converge"
    t0=$(now)
    for i in $(seq 1 "$r"); do start_replica "g$gate-r$r-$i"; done
    until [ "$(deployments)" -ge "$FOOS" ]; do sleep 1; done
    converge=$(since "$t0")
    cpus=() ; for p in "${PIDS[@]}"; do cpus+=("$(cpu_s "$p")"); done
    sleep 10
    rsss=() caches=() cached=()
    for i in "${!PIDS[@]}"; do
      rsss+=("$(rss "${PIDS[$i]}")")
      caches+=("$(python3 -c "print(round(${rsss[$i]} - $base, 1))")")
      cached+=("$(metric "${PORTS[$i]}" "sharding_cached_objects{informer=\"Foo in $NAMESPACE")")
    done
    # A join, then a leave.
    lists0=$(lists_total)
    t0=$(now)
    start_replica "g$gate-r$r-join"
    until members_all $((r + 1)) && python3 -c "import sys; sys.exit(0 if abs($(held_sum) - 1) < 1e-3 and abs($(metric "${PORTS[-1]}" 'sharding_held_fraction{') - 1/$((r + 1))) < 1e-3 else 1)"; do sleep 0.5; done
    join=$(since "$t0")
    join_relists=$(($(lists_total) - lists0))
    newcomer=${PIDS[-1]}
    t0=$(now)
    kill -TERM "$newcomer"; wait "$newcomer" 2>/dev/null || true
    unset 'PIDS[-1]' 'PORTS[-1]'
    PIDS=("${PIDS[@]}"); PORTS=("${PORTS[@]}")
    # The leave's relists are the remaining replicas' (the newcomer's counts are gone),
    # counted from right after the SIGTERM (a rebalance takes a retry period at least).
    lists1=$(lists_total)
    until members_all "$r" && python3 -c "import sys; sys.exit(0 if abs($(held_sum) - 1) < 1e-3 else 1)"; do sleep 0.5; done
    leave=$(since "$t0")
    lists2=$(lists_total)
    line=$(printf '{"gate":"%s","foos":%s,"replicas":%s,"converge_s":%s,"cpu_s":[%s],"rss_mib":[%s],"cache_mib":[%s],"foos_cached":[%s],"join_s":%s,"leave_s":%s,"join_relists":%s,"leave_relists":%s,"base_rss_mib":%s,"load":"%s"}' \
      "$gate" "$FOOS" "$r" "$converge" "$(IFS=,; echo "${cpus[*]}")" "$(IFS=,; echo "${rsss[*]}")" \
      "$(IFS=,; echo "${caches[*]}")" "$(IFS=,; echo "${cached[*]}")" "$join" "$leave" \
      "$join_relists" "$((lists2 - lists1))" "$base" "$(load)")
    echo "$line" | tee -a "$OUT/results.jsonl"
    stop_all
  done
  bash hack/control-plane.sh down "$CP_DIR" >/dev/null 2>&1 || true
  trap - EXIT
done

python3 - "$OUT/results.jsonl" >"$OUT/summary.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| gate | replicas | converge s | cache MiB per replica | largest / one replica's | Foos cached | CPU s per replica | join s | leave s | relists join/leave |")
print("|---|---|---|---|---|---|---|---|---|---|")
one = {r["gate"]: max(r["cache_mib"]) for r in rows if r["replicas"] == 1}
for r in rows:
    ratio = max(r["cache_mib"]) / one[r["gate"]] if one.get(r["gate"]) else float("nan")
    print(f'| {r["gate"]} | {r["replicas"]} | {r["converge_s"]} | {", ".join(map(str, r["cache_mib"]))} | {ratio:.2f} (1/N = {1/r["replicas"]:.2f}) | {", ".join(str(int(c)) for c in r["foos_cached"])} | {", ".join(map(str, r["cpu_s"]))} | {r["join_s"]} | {r["leave_s"]} | {r["join_relists"]}/{r["leave_relists"]} |')
EOF
cat "$OUT/summary.md"
echo "results: $OUT"
