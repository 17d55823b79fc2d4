#!/usr/bin/env bash
# The chaos soak (issue 18, docs/reliability.md): replicas of every controller binary
# with leader election under load, while a seeded nemesis overlaps faults (proxy cuts,
# stalls and 429/500/503, kube-apiserver and etcd restarts, compaction + real 410s,
# leader SIGKILL/SIGSTOP, VM driver failures); then every invariant is checked.
#
#   bash hack/chaos.sh              the short run (what hack/test.sh runs): 90 s, 200 Foos
#   DURATION=30m FOOS=1000 VMS=200 MYWEBS=20 bash hack/chaos.sh     a long run
#   SEED=1234 bash hack/chaos.sh    replay a run's schedule (same sizes and DURATION)
#   SKIP_CARGO_BUILD=1 bash hack/chaos.sh   use the binaries already built (in $CARGO_TARGET_DIR/debug)
#
# Every knob is an environment variable (or a flag of `chaos`, see `chaos --help`):
# DURATION, SEED, FOOS, VMS, MYWEBS, REPLICAS, WRITERS, WRITES_PER_SECOND, FAULT_GAP,
# FAULTS (comma-separated kinds), CONVERGENCE_BOUND, INITIAL_CONVERGENCE_BOUND. KEEP_CONTROL_PLANE=1 leaves the
# control plane running at the end (to inspect it; stop it yourself). CHAOS_OUT keeps the
# results (logs, summary.json, summary.txt, seed, plan.json) in a directory of your
# choice; by default they go to target/chaos/<date>-<seed> and the path is printed.
#
# The CRDs are installed as a cluster has them: the VirtualMachine CRD converts v1alpha1 <->
# v1beta1 through vm-controller's webhook, served on loopback for the whole run by a
# vm-controller of its own that the nemesis leaves alone (hack/lib/conversion.sh; its log
# is vm-conversion-webhook.log in the results).
#
# Exit code: 0 pass, 1 invariant violations, 2 the environment broke, 3 could not run.
set -euo pipefail
cd "$(dirname "$0")/.."

export DURATION=${DURATION:-90s} FOOS=${FOOS:-200} VMS=${VMS:-40} MYWEBS=${MYWEBS:-6}
export REPLICAS=${REPLICAS:-2} FAULT_GAP=${FAULT_GAP:-5s} WRITES_PER_SECOND=${WRITES_PER_SECOND:-10}
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
SEED=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
export SEED

log() { printf '[chaos] %s\n' "$*" >&2; }
# serve_vm_conversion, stop_vm_conversion, check_no_lossy_crds: the VirtualMachine CRD's
# conversion webhook (below).
# shellcheck source=hack/lib/conversion.sh
source hack/lib/conversion.sh

command -v curl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq --no-install-recommends curl >/dev/null; }
bash hack/control-plane.sh build >/dev/null
# SKIP_CARGO_BUILD=1: use the binaries as they are (hack/test.sh builds every binary once,
# with the workspace's feature set; a build of these four packages alone would resolve
# other features and rebuild most dependencies).
if [ "${SKIP_CARGO_BUILD:-0}" != 1 ]; then
  cargo build --locked -p chaos -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin
fi

out=${CHAOS_OUT:-target/chaos/$(date +%Y%m%d-%H%M%S)-$SEED}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cp_dir=$out/cp
cleanup() {
  [ -d "$cp_dir/logs" ] && cp -r "$cp_dir/logs" "$out/control-plane-logs" 2>/dev/null
  if [ "${KEEP_CONTROL_PLANE:-0}" = 1 ] && [ -d "$cp_dir" ]; then
    log "control plane kept: KUBECONFIG=$cp_dir/kubeconfig; stop it with: hack/control-plane.sh down $cp_dir"
    [ -n "${VM_CONVERSION_PID:-}" ] &&
      log "and its VirtualMachine conversion webhook (pid $VM_CONVERSION_PID): kill $VM_CONVERSION_PID"
    return
  fi
  stop_vm_conversion || true
  [ -d "$cp_dir" ] && bash hack/control-plane.sh down "$cp_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The soak restarts kube-apiserver and etcd; while the API server is down kwok cannot
# renew its Nodes' Leases. kube-controller-manager's node lifecycle controller would
# then mark the Nodes NotReady and every Pod not Ready, and kwok never makes them Ready
# again: the environment, not the controllers, would break. A grace period longer than
# any run keeps an API server restart from looking like dead Nodes. The API server's own
# compaction is left to the nemesis (compact-410), so it happens at known times.
export KUBE_CONTROLLER_MANAGER_EXTRA_ARGS="--node-monitor-grace-period=24h"
export KUBE_APISERVER_EXTRA_ARGS="--etcd-compaction-interval=0"
bash hack/control-plane.sh up --dir "$cp_dir" >/dev/null
unset KUBE_CONTROLLER_MANAGER_EXTRA_ARGS KUBE_APISERVER_EXTRA_ARGS
kubectl() { "$(bash hack/control-plane.sh bin-dir)/kubectl" --kubeconfig "$cp_dir/kubeconfig" "$@"; }
# More Nodes than `up`'s 2 (kwok gives each 110 Pods; a Foo has at most 2 replicas),
# added here rather than by `up`, which waits only a minute for its Nodes: kwok makes
# twenty of them Ready more slowly than that.
nodes=$(((FOOS * 2 + MYWEBS) / 100 + 2))
for i in $(seq 2 $((nodes - 1))); do
  printf 'apiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-%s\n  labels: {type: kwok, kubernetes.io/hostname: kwok-node-%s, kubernetes.io/os: linux, kubernetes.io/arch: amd64}\n  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}\n---\n' "$i" "$i"
done | kubectl apply -f - >/dev/null
kubectl wait --for=condition=Ready node --all --timeout=600s >/dev/null
kubectl apply --server-side -f deploy/crds/ >/dev/null
# `kubectl wait` fails at once, not waiting, on a CRD whose status has no conditions yet
# (one applied a moment ago: ".status.conditions accessor error: <nil>", seen in CI): retry.
for _ in $(seq 30); do kubectl wait --for condition=established --timeout=5s crd --all >/dev/null 2>&1 && break; sleep 1; done
kubectl wait --for condition=established --timeout=60s crd --all >/dev/null

# The soak restarts the replicas it kills from these copies, so a rebuild of target/
# during a long run does not change the binaries under test.
mkdir -p "$out/bin"
bin=${CARGO_TARGET_DIR:-target}/debug
cp "$bin/chaos" "$bin/sample-controller" "$bin/vm-controller" "$bin/myweb-operator" "$out/bin/"
# The VirtualMachine CRD converts as in a cluster: vm-controller's conversion webhook
# served on loopback for the whole run, outside the nemesis's reach, the CRD pointed at it
# (hack/lib/conversion.sh says why, and why not with the conversion switched off). The
# replicas read and write v1alpha1, the stored version; the garbage collector and the
# namespace controller read the preferred v1beta1 through the webhook.
serve_vm_conversion "$cp_dir" "$out/bin/vm-controller" "$out/vm-conversion-webhook.log" ||
  { log "the VirtualMachine conversion webhook did not come up"; exit 2; }
check_no_lossy_crds "$cp_dir" || exit 2

log "seed $SEED, $DURATION, $FOOS Foos, $VMS VMs, $MYWEBS MyWebs, $REPLICAS replicas each; results in $out"
rc=0
"$out/bin/chaos" --control-plane "$cp_dir" --out "$out" --bin-dir "$out/bin" || rc=$?
log "summary: $out/summary.txt (exit $rc)"
exit $rc
