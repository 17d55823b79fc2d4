#!/usr/bin/env bash
# Sieve's three perturbations on this repository's controllers (issue 46,
# docs/reliability.md "Sieve"): for each controller, a learning run of a workload, then
# one run per point it shows (a crash after each write, each watch event withheld, a
# stale restart after each step), each judged against the learning run.
#
#   bash hack/sieve.sh                        what .ci/run runs: the small workloads
#                                             (crates/tools/sieve/workloads/ci/), every plan
#   WORKLOADS=full bash hack/sieve.sh         the full workloads (by hand; docs/reliability.md)
#   CONTROLLERS="sample-controller" bash hack/sieve.sh          one controller
#   CONTROLLERS="sample-controller-shards" bash hack/sieve.sh   two replicas in one shard
#                                             group: a crash after a write hands the
#                                             writer's ranges over (by hand)
#   GO_SAMPLE_CONTROLLER_SRC=/path/to/sample-controller-checkout \
#     CONTROLLERS=go-sample-controller WORKLOADS=full bash hack/sieve.sh
#                                             the Go original, built from its source tree
#                                             (or GO_SAMPLE_CONTROLLER=/path/to/binary)
#   BROKEN_MODES="stale" bash hack/sieve.sh   which modes of the deliberately broken Foo
#                                             controller must be caught (default all three;
#                                             empty: none)
#   SKIP_CARGO_BUILD=1 bash hack/sieve.sh     use the binaries already built
#   SIEVE_OUT=dir                             where the runs and reports go
#                                             (default target/sieve/<date>)
#   KEEP_CONTROL_PLANE=1                      leave the control plane running
#
# Then the tool's own check: a Foo controller that is wrong on purpose
# (crates/tools/sieve/src/bin/sieve-broken-foo.rs, one bug per mode) must be caught by
# the perturbation each mode is named after.
#
# The CRDs are installed as a cluster has them: the VirtualMachine CRD converts v1alpha1 <->
# v1beta1 through vm-controller's webhook, served on loopback for the whole run by a
# vm-controller of its own, apart from the controllers under test (hack/lib/conversion.sh;
# its log is SIEVE_OUT/vm-conversion-webhook.log).
#
# Each controller's report is SIEVE_OUT/<controller>/report.md (JSON beside it); a plan's
# replay command is in it. Exit code: 0 every plan passed (or was not reached) and every
# broken mode was caught, 1 a plan failed or a broken mode was not caught, 3 a run could
# not be carried out.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
WORKLOADS=${WORKLOADS:-ci}
CONTROLLERS=${CONTROLLERS:-sample-controller vm-controller myweb-operator}

log() { printf '[sieve] %s\n' "$*" >&2; }
# serve_vm_conversion, stop_vm_conversion, check_no_lossy_crds: the VirtualMachine CRD's
# conversion webhook (below).
# shellcheck source=hack/lib/conversion.sh
source hack/lib/conversion.sh

bash hack/control-plane.sh build >/dev/null
if [ "${SKIP_CARGO_BUILD:-0}" != 1 ]; then
  cargo build --locked -p sieve -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin
fi
bin=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)

out=${SIEVE_OUT:-target/sieve/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cp_dir=$out/cp
cleanup() {
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

# No compaction: a stale-state plan lists at a resourceVersion of a minute or two ago,
# which compaction (every 5 minutes by default) would make 410 Gone.
export KUBE_APISERVER_EXTRA_ARGS="--etcd-compaction-interval=0"
bash hack/control-plane.sh up --dir "$cp_dir" >/dev/null
unset KUBE_APISERVER_EXTRA_ARGS
kubectl() { "$(bash hack/control-plane.sh bin-dir)/kubectl" --kubeconfig "$cp_dir/kubeconfig" "$@"; }
kubectl apply --server-side -f deploy/crds/ >/dev/null
# `kubectl wait` fails at once, not waiting, on a CRD whose status has no conditions yet
# (one applied a moment ago: ".status.conditions accessor error: <nil>", seen in CI): retry.
for _ in $(seq 30); do kubectl wait --for condition=established --timeout=5s crd --all >/dev/null 2>&1 && break; sleep 1; done
kubectl wait --for condition=established --timeout=60s crd --all >/dev/null
# The VirtualMachine CRD converts as in a cluster: vm-controller's conversion webhook
# served on loopback for the whole run, apart from the controllers sieve crashes and
# restarts, the CRD pointed at it (hack/lib/conversion.sh says why, and why not with the
# conversion switched off). The workloads use v1alpha1, the stored version; the garbage
# collector and the namespace controller read the preferred v1beta1 through the webhook.
serve_vm_conversion "$cp_dir" "$bin/vm-controller" "$out/vm-conversion-webhook.log" ||
  { log "the VirtualMachine conversion webhook did not come up"; exit 3; }
check_no_lossy_crds "$cp_dir" || exit 3

workload_of() {
  local name
  case $1 in
    sample-controller | sample-controller-shards | go-sample-controller) name=foo ;;
    vm-controller) name=vm ;;
    myweb-operator) name=myweb ;;
    *) log "no workload for $1"; exit 3 ;;
  esac
  if [ "$WORKLOADS" = ci ]; then
    echo "crates/tools/sieve/workloads/ci/$name.yaml"
  else
    echo "crates/tools/sieve/workloads/$name.yaml"
  fi
}

# The Go sample-controller from a source tree (GO_SAMPLE_CONTROLLER_SRC: a checkout of
# github.com/kubernetes/sample-controller; its module is not on the Go proxy here): the
# tree copied, its k8s.io modules set to the client-go release our crates are measured
# against (the tag of our minor, v0.37.0-alpha.2, pins the alpha), and built.
if [ -n "${GO_SAMPLE_CONTROLLER_SRC:-}" ] && [ -z "${GO_SAMPLE_CONTROLLER:-}" ]; then
  k8s_version=${K8S_GO_VERSION:-v0.37.2}
  build=$out/go-sample-controller-src
  rm -rf "$build" && cp -r "$GO_SAMPLE_CONTROLLER_SRC" "$build" && chmod -R u+w "$build"
  (cd "$build" && go mod edit -require "k8s.io/api@$k8s_version" -require "k8s.io/apimachinery@$k8s_version" \
      -require "k8s.io/client-go@$k8s_version" -require "k8s.io/code-generator@$k8s_version" &&
    GOFLAGS=-mod=mod go mod tidy && CGO_ENABLED=0 go build -trimpath -o "$out/bin/sample-controller" .)
  GO_SAMPLE_CONTROLLER=$out/bin/sample-controller
  log "built the Go sample-controller from $GO_SAMPLE_CONTROLLER_SRC with k8s.io modules at $k8s_version"
fi

# The controllers run side by side, each in namespaces of its own (ours watch only their
# run's namespace; the Go sample-controller watches all, so it runs alone): most of a
# plan's time is waiting for quiescence, not CPU.
run_one() {
  local controller=$1 workload
  workload=$(workload_of "$controller")
  SIEVE_CONTROL_PLANE=$cp_dir SIEVE_BIN_DIR=$bin SIEVE_GO_SAMPLE_CONTROLLER=${GO_SAMPLE_CONTROLLER:-} \
    "$bin/sieve" test --workload "$workload" --controller "$controller" \
    --out "$out/$controller" >"$out/$controller.txt" 2>"$out/$controller.log"
}
if [[ " $CONTROLLERS " == *" go-sample-controller "* ]] && [ "$(echo $CONTROLLERS)" != go-sample-controller ]; then
  log "go-sample-controller watches every namespace: run it alone (CONTROLLERS=go-sample-controller)"
  exit 3
fi
declare -A pids=()
for controller in $CONTROLLERS; do
  log "$controller on $(workload_of "$controller") (results in $out/$controller)"
  run_one "$controller" &
  pids[$controller]=$!
done
rc=0
for controller in "${!pids[@]}"; do
  status=0
  wait "${pids[$controller]}" || status=$?
  printf '%s\n' "$controller:" >&2
  grep '^|' "$out/$controller.txt" | head -6 >&2 || true
  if [ "$status" != 0 ]; then
    log "$controller: exit $status; report: $out/$controller/report.md; log: $out/$controller.log"
    cat "$out/$controller.txt" >&2
    tail -20 "$out/$controller.log" >&2
    rc=$((status > rc ? status : rc))
  fi
done

# The deliberately broken Foo controller: each mode plants one bug (a non-idempotent
# create, edge triggering, a blind write from a stale cache) that the perturbation of
# its name must catch, so `sieve test --only <mode>` must exit 1 with a failed plan in its
# report. Exit 0 means the tool has gone blind to what it is for. One failed plan is
# enough (--stop-at-first-failure), and the workload is two steps
# (workloads/ci/broken-foo.yaml says why not ci/foo.yaml): a learning run and one plan
# each, the three side by side.
BROKEN_MODES=${BROKEN_MODES-intermediate unobserved stale}
declare -A broken_pids=()
broken_started=$SECONDS
for mode in $BROKEN_MODES; do
  log "broken-foo-$mode must be caught by --only $mode (results in $out/broken-foo-$mode)"
  SIEVE_CONTROL_PLANE=$cp_dir SIEVE_BIN_DIR=$bin \
    "$bin/sieve" test --workload crates/tools/sieve/workloads/ci/broken-foo.yaml \
    --controller "broken-foo-$mode" --only "$mode" --stop-at-first-failure \
    --out "$out/broken-foo-$mode" >"$out/broken-foo-$mode.txt" 2>"$out/broken-foo-$mode.log" &
  broken_pids[$mode]=$!
done
for mode in "${!broken_pids[@]}"; do
  status=0
  wait "${broken_pids[$mode]}" || status=$?
  report=$out/broken-foo-$mode/report.md
  # Exit 1 is also a learning run that is not clean: that is no catch (no report then).
  if [ "$status" = 1 ] && [ -f "$report" ] && grep -q '(Fail)$' "$report"; then
    log "broken-foo-$mode: caught by the $mode perturbation, as it must be:"
    sed -n '/ (Fail)$/,/^replay:/p' "$report" | grep -v '^replay:' >&2
  else
    log "broken-foo-$mode: NOT caught by the $mode perturbation (sieve test exit $status, want 1 with a failed plan): the tool missed the bug it exists to find; report: $report; log: $out/broken-foo-$mode.log"
    tail -20 "$out/broken-foo-$mode.log" >&2
    if [ "$status" = 3 ]; then
      rc=3
    elif [ "$rc" = 0 ]; then
      rc=1
    fi
  fi
done
if [ -n "$BROKEN_MODES" ]; then
  log "broken Foo controller checked in $((SECONDS - broken_started)) s"
fi
# A controller from outside, given to the tool as a user gives theirs: `--command` and
# `--capture`, no preset, no ignore rule (crates/tools/sieve/fixtures/outside-foo: bash,
# kubectl and python, several processes, Deployments with generated names, acting on
# watch edges). Each mode plants one bug; the perturbation of its name must catch it
# *for its own reason*: the first failed plan's end state must show the planted bug (an
# extra Deployment, a missing one, the Foo's spec reverted), not a difference the
# cluster made. Exit 0 would mean the tool is blind outside its presets.
OUTSIDE_MODES=${OUTSIDE_MODES-intermediate unobserved stale}
declare -A outside_pids=()
outside_started=$SECONDS
fixture=$(pwd)/crates/tools/sieve/fixtures/outside-foo
for mode in $OUTSIDE_MODES; do
  log "outside-foo --mode $mode must be caught by --only $mode (results in $out/outside-foo-$mode)"
  PATH="$(bash hack/control-plane.sh bin-dir):$PATH" SIEVE_CONTROL_PLANE=$cp_dir SIEVE_BIN_DIR=$bin \
    "$bin/sieve" test --workload crates/tools/sieve/workloads/ci/broken-foo.yaml \
    --controller "outside-foo-$mode" \
    --command "bash '$fixture/controller.sh' --kubeconfig {kubeconfig} --namespace {namespace} --mode $mode" \
    --capture Deployment.apps/v1 --only "$mode" --stop-at-first-failure \
    --out "$out/outside-foo-$mode" >"$out/outside-foo-$mode.txt" 2>"$out/outside-foo-$mode.log" &
  outside_pids[$mode]=$!
done
for mode in "${!outside_pids[@]}"; do
  status=0
  wait "${outside_pids[$mode]}" || status=$?
  report=$out/outside-foo-$mode/report.json
  case $mode in
    intermediate) want='any(.diff.extra[]; .kind == "Deployment")' ;;
    unobserved) want='any(.diff.missing[]; .kind == "Deployment")' ;;
    stale) want='any(.diff.changed[]; .id.kind == "Foo" and any(.differences[]; .path == ".spec.replicas"))' ;;
  esac
  if [ "$status" = 1 ] && [ -f "$report" ] &&
    jq -e "[.[] | select(.verdict == \"fail\")] | first | $want" "$report" >/dev/null; then
    log "outside-foo-$mode: caught by the $mode perturbation for its planted bug:"
    sed -n '/ (Fail)$/,/^replay:/p' "$out/outside-foo-$mode/report.md" >&2
  else
    log "outside-foo-$mode: NOT caught for its planted bug by the $mode perturbation (sieve test exit $status; want 1 and a first failed plan showing it); report: $out/outside-foo-$mode/report.md; log: $out/outside-foo-$mode.log"
    cat "$out/outside-foo-$mode.txt" >&2 || true
    tail -20 "$out/outside-foo-$mode.log" >&2
    if [ "$status" = 3 ]; then
      rc=3
    elif [ "$rc" = 0 ]; then
      rc=1
    fi
  fi
done
if [ -n "$OUTSIDE_MODES" ]; then
  log "outside Foo controller checked in $((SECONDS - outside_started)) s"
fi
log "reports: $out/*/report.md (exit $rc)"
exit $rc
