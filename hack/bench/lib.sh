# Shared by the bench scripts that run controllers against a local control plane
# (converge.sh, staleness.sh, starvation.sh): `source hack/bench/lib.sh` after setting
# SCRIPT (the script's name, for error messages), OUT (the run's output directory) and
# KEEP_CONTROLLERS, then call bench_control_plane.

say() { printf '\n=== %s\n' "$*"; }
die() { printf '%s: %s\n' "$SCRIPT" "$*" >&2; exit 1; }
load() { uptime | sed 's/.*load average: //'; }
# Whether pid $1 is a live process (not 0, not a zombie).
alive() { [ "$1" != 0 ] && [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# Sets KUBECONFIG, CP_DIR and KUBECTL: the control plane of $BENCH_KUBECONFIG when set
# (its components left as they are), otherwise a new one from hack/control-plane.sh,
# torn down when the script exits. Unless KEEP_CONTROLLERS=1, a new control plane's
# kwok, kube-scheduler and kube-controller-manager are stopped, so the objects the
# controllers under test write stay exactly as they write them (no ReplicaSets, no
# Pods, no status written by anyone else).
bench_control_plane() {
  if [ -n "${BENCH_KUBECONFIG:-}" ]; then
    export KUBECONFIG="$BENCH_KUBECONFIG"
    CP_DIR=$(dirname "$KUBECONFIG")
    say "using the control plane of $KUBECONFIG (its components are left as they are)"
  else
    say "control plane up"
    local up_out
    up_out=$(bash hack/control-plane.sh up --nodes 1 2> >(tee "$OUT/control-plane.log" >&2))
    KUBECONFIG=$(printf '%s\n' "$up_out" | sed -n 's/^KUBECONFIG=//p' | head -n 1)
    [ -n "$KUBECONFIG" ] || die "no KUBECONFIG in the output of control-plane.sh up"
    export KUBECONFIG
    CP_DIR=$(dirname "$KUBECONFIG")
    trap 'say "control plane down"; bash hack/control-plane.sh down "$CP_DIR" || true' EXIT
    if [ "${KEEP_CONTROLLERS:-0}" != 1 ]; then
      local c pid
      for c in kwok kube-scheduler kube-controller-manager; do
        pid=$(cat "$CP_DIR/pids/$c.pid")
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
        echo "stopped $c (pid $pid)"
      done
    fi
  fi
  KUBECTL="$(bash hack/control-plane.sh bin-dir)/kubectl"
}

# The pid of this control plane's component $1 (never another one's on this machine);
# 0 when the kubeconfig is not in a hack/control-plane.sh state dir.
pid_of() { if [ -f "$CP_DIR/pids/$1.pid" ]; then cat "$CP_DIR/pids/$1.pid"; else echo 0; fi; }
running() { if alive "$(pid_of "$1")"; then echo "$1 running"; else echo "$1 not running"; fi; }
rss_mib() { if [ "$1" != 0 ] && [ -r "/proc/$1/status" ]; then awk '/^VmRSS:/ {printf "%.0f MiB", $2 / 1024}' "/proc/$1/status"; else echo "-"; fi; }
