#!/usr/bin/env bash
# Runs a command with one control plane for every test binary it starts:
#
#   bash hack/with-control-plane.sh cargo test --workspace
#   K8S_VERSION=oldest bash hack/with-control-plane.sh bash -c 'run_test_binaries ...'
#
# Starts `hack/control-plane.sh up --foreground` (K8S_VERSION picks the release), waits
# until it is ready, runs the command with TESTENV_KUBECONFIG and TESTENV_KUBECTL set, so
# that testenv's `ControlPlane::shared()` in each test binary uses this control plane
# instead of starting its own (crates/dev/testenv), then stops it and exits with the
# command's status.
#
# Why: a test binary's own control plane costs about 20 s of CPU to start (kube-apiserver
# filling its caches and building its OpenAPI specs, kube-controller-manager, etcd, kwok),
# and `hack/test.sh` runs some twenty e2e test binaries; on 2 cores that CPU was the
# largest part of the run left to cut (docs/testing.md). Test binaries run one after
# another, and their tests already share a control plane within a binary (each in its own
# namespace, webhooks selected by namespace, random names for cluster-scoped objects), so
# sharing it across binaries adds no new kind of overlap. Tests that need a control plane
# of their own (restarting kube-apiserver, feature gates, timing its start) still start
# one with `ControlPlane::start`.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/shared-plane.XXXXXX")
log_file="$dir.log"
# --foreground: the components die with this `up` (parent-death signal), so stopping it
# (or this script dying) leaves nothing behind.
bash hack/control-plane.sh up --foreground --dir "$dir/cp" >"$log_file" 2>&1 </dev/null &
up=$!
stop() {
  kill -TERM "$up" 2>/dev/null || true
  wait "$up" 2>/dev/null || true
  rm -rf "$dir" "$log_file"
}
trap stop EXIT

until [ -e "$dir/cp/ready" ]; do
  if ! kill -0 "$up" 2>/dev/null; then
    echo "[with-control-plane] the control plane did not start; its log:" >&2
    cat "$log_file" >&2
    exit 1
  fi
  sleep 0.5
done
# shellcheck disable=SC1091
source "$dir/cp/env"
echo "[with-control-plane] one control plane for every test binary: $KUBECONFIG (ready after ${READY_SECONDS}s)" >&2

export TESTENV_KUBECONFIG=$KUBECONFIG TESTENV_KUBECTL=$KUBECTL
unset KUBECONFIG
status=0
"$@" || status=$?
# A failed command leaves the control plane's side of the story: its Nodes (kwok's fake
# Nodes stop being Ready when kwok's heartbeats stall, and new Pods then never run) and
# every component's log, kept after the state dir is removed.
if [ "$status" != 0 ]; then
  kept=$(mktemp -d "${TMPDIR:-/tmp}/shared-plane-logs.XXXXXX")
  cp -r "$dir/cp/logs/." "$kept/" 2>/dev/null || true
  {
    echo "[with-control-plane] the command failed (exit $status); the control plane's logs are kept in $kept"
    KUBECONFIG=$TESTENV_KUBECONFIG "$TESTENV_KUBECTL" get nodes -o wide 2>&1 || true
    KUBECONFIG=$TESTENV_KUBECONFIG "$TESTENV_KUBECTL" get pods -A --field-selector=status.phase!=Running 2>&1 | head -20 || true
    for f in "$kept"/*.log; do
      [ -e "$f" ] || continue
      echo "--- the last lines of $(basename "$f")"
      tail -n 12 "$f"
    done
  } >&2
fi
exit "$status"
