#!/usr/bin/env bash
# README.md's "Running the controllers", run as written (issue 58): the ```sh block of that
# section is taken from the README and run line by line on a fresh local control plane, after
# `hack/control-plane.sh up` and the export line it prints, as a user would; then what the
# lines should have done is checked.
#
#   bash hack/e2e-readme.sh [FILE]      FILE: README.md (default), or another text of it (an
#                                       older README, to see it fail)
#   SKIP_CARGO_BUILD=1 bash hack/e2e-readme.sh   use the binaries as built ($CARGO_TARGET_DIR/debug)
#
# Two substitutions, and only these:
#   - `cargo run -p X-bin --` (or `cargo run -p X-bin`) runs the binary already built,
#     "$CARGO_TARGET_DIR/debug/X": a `cargo run -p` resolves the features of one package and
#     would rebuild most dependencies (hack/test.sh's "ONE cargo build");
#   - the lines run with HOME at a scratch directory whose .kube/config is the control plane's
#     kubeconfig, so a `~/.kube/config` in the text means the control plane and never the
#     user's own.
# A line that starts a binary (`cargo run`) keeps running, as in a terminal of its own: it
# goes to the background with its output in a log, and the next line runs once the binary
# answers /readyz on its --health-probe-bind-address (default :8081), as a user waits for it
# to start. A `kubectl get ... -w` line runs for WATCH_SECONDS (default 20) and must print a
# table with no error. Every other line must exit 0. No line may print `Warning:` (the CRDs'
# schemas are applied without one).
#
# Then: the Foo's Deployment (owned, available), the VirtualMachine Active with a real QEMU
# process, `kubectl get vm` answered through v1beta1 (the conversion webhook), the MyWeb's
# ConfigMap, Deployment and Service, the README's patch in the page and the Deployment's
# template, `kubectl delete vm` through v1beta1 (the finalizer stops QEMU and removes its
# disk), all three binaries still running, and the first line (the CRDs) run again as a
# user running the block twice would. With FILE the default, docs/zh-TW/README.md's
# block must be the same, byte for byte (hack/verify-translations.sh checks that too).
#
# The README's addresses are fixed (its ports, /tmp/vms): runs on one machine take turns (a
# lock in $TMPDIR), and a port of the text already in use fails the run at once, naming
# what holds it. On exit: the VirtualMachines deleted, the binaries stopped, any QEMU of the
# state dir killed by its pidfile, the state dir's servers and the control plane removed.
# About 50 s (docs/testing.md); hack/test.sh runs it beside the demo.
set -euo pipefail
readme=${1:-}
if [ -n "$readme" ]; then
  [ -f "$readme" ] || { echo "e2e-readme: no file $readme" >&2; exit 2; }
  readme=$(realpath "$readme")
fi
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib/host.sh
source hack/lib/host.sh
readme=${readme:-$(realpath README.md)}
WATCH_SECONDS=${WATCH_SECONDS:-20}

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
problems=()
problem() { echo "e2e-readme: PROBLEM: $*" >&2; problems+=("$*"); }
fail() {
  echo "e2e-readme: FAILED: $*" >&2
  dump_logs
  exit 1
}
dump_logs() {
  local log
  for log in "${work:-/nonexistent}"/*.log; do
    [ -f "$log" ] || continue
    echo "--- $(basename "$log") (last 25 lines)" >&2
    grep -m1 '^Error' "$log" >&2 || true
    tail -n 25 "$log" >&2
  done
}
# exit_reason LOG: a binary's `Error: ...` line (a backtrace may follow it), else LOG's last line.
exit_reason() { grep -m1 '^Error' "$1" 2>/dev/null || tail -n 1 "$1" 2>/dev/null; }

# block FILE: the lines of the first ```sh block of the section "## Running the controllers"
# (or its translation's "## 執行控制器"): continuations joined, blank and comment lines left out.
block() {
  python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
heads = ("## Running the controllers", "## 執行控制器")
start = next((i for i, l in enumerate(lines) if l.strip() in heads), None)
if start is None:
    sys.exit(f"{sys.argv[1]}: no section {heads[0]!r}")
i = start + 1
while i < len(lines) and lines[i].strip() != "```sh":
    if lines[i].startswith("## "):
        sys.exit(f"{sys.argv[1]}: no ```sh block in {heads[0]!r}")
    i += 1
out, cur = [], ""
for line in lines[i + 1:]:
    if line.strip() == "```":
        break
    if line.endswith("\\"):
        cur += line[:-1]
        continue
    line = cur + line
    cur = ""
    if line.strip() and not line.lstrip().startswith("#"):
        out.append(line.strip())
else:
    sys.exit(f"{sys.argv[1]}: the ```sh block in {heads[0]!r} never ends")
print("\n".join(out))
PY
}

# The block, before anything is started.
mapfile -t lines < <(block "$readme")
[ ${#lines[@]} -gt 0 ] || fail "no lines in $readme's block"
if [ "$readme" = "$(realpath README.md)" ]; then
  [ "$(block docs/zh-TW/README.md)" = "$(printf '%s\n' "${lines[@]}")" ] ||
    fail "docs/zh-TW/README.md's block differs from README.md's"
fi
say "The block of $readme, as it will run"
printf '  %s\n' "${lines[@]}"

# flag_value LINE FLAG DEFAULT: the value of --FLAG in LINE (`--f v` or `--f=v`), else DEFAULT.
flag_value() {
  local re="(^|[[:space:]])--$2[=[:space:]]+([^[:space:]]+)"
  if [[ $1 =~ $re ]]; then echo "${BASH_REMATCH[2]}"; else echo "$3"; fi
}
# binary_of LINE: X for a line starting `cargo run -p X-bin`, else nothing.
binary_of() { [[ $1 =~ ^cargo\ run\ -p\ ([A-Za-z0-9_-]+)-bin ]] && echo "${BASH_REMATCH[1]}"; }
# port_of ADDR: the port of ":8443", "127.0.0.1:8443"; nothing for "0".
port_of() { [ "$1" = 0 ] || echo "${1##*:}"; }

binaries=() ports=() state_dir="" vm_pid=""
for line in "${lines[@]}"; do
  b=$(binary_of "$line") || continue
  binaries+=("$b")
  metrics_default=:8443
  [[ $line =~ --metrics-secure[=\ ]false ]] && metrics_default=:8080
  for addr in "$(flag_value "$line" metrics-bind-address "$metrics_default")" \
    "$(flag_value "$line" health-probe-bind-address :8081)" "$(flag_value "$line" webhook-bind-address 0)"; do
    p=$(port_of "$addr")
    if [[ $p =~ ^[0-9]+$ ]]; then ports+=("$p"); fi
  done
  # The address hack/local-conversion.sh is given is vm-controller's webhook's.
  if [[ $line =~ local-conversion\.sh[[:space:]]+[^[:space:]\)]*:([0-9]+) ]]; then ports+=("${BASH_REMATCH[1]}"); fi
  if [ "$b" = vm-controller ]; then
    state_dir=$(flag_value "$line" state-dir /var/lib/vm-controller)
  fi
done
[ "${binaries[*]}" = "sample-controller vm-controller myweb-operator" ] ||
  fail "the block should start sample-controller, vm-controller and myweb-operator, in that order; it starts: ${binaries[*]:-nothing}"
[ -n "$state_dir" ] || fail "no --state-dir for vm-controller"

say "Building what it needs"
command -v curl >/dev/null 2>&1 || apt_install curl
command -v ss >/dev/null 2>&1 || apt_install iproute2
bash hack/control-plane.sh build
bash hack/install-qemu.sh
if [ "${SKIP_CARGO_BUILD:-0}" != 1 ]; then
  cargo build --locked -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin
fi
bin=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)
for b in "${binaries[@]}"; do
  [ -x "$bin/$b" ] || fail "$bin/$b missing (SKIP_CARGO_BUILD=1 without a build?)"
done

# Runs on one machine take turns: the README's ports and state dir are the same for all.
lock=${TMPDIR:-/tmp}/kube-controllers-rs-e2e-readme.lock
exec 9>"$lock"
if ! flock -n 9; then
  echo "e2e-readme: another run holds $lock; waiting for it" >&2
  flock -w 1800 9 || fail "another run held $lock for 30 minutes"
fi

for p in $(printf '%s\n' "${ports[@]}" | sort -un); do
  held=$(ss -Hltnp "sport = :$p" 2>/dev/null || true)
  [ -z "$held" ] || fail "port $p, which the block uses, is already in use (the text's ports must be free): $held"
done
# A server directory of the state dir whose QEMU runs is someone's VM: not ours to touch. One
# whose QEMU is gone is what a run killed before its cleanup left: removed.
qemu_pid_of() { # qemu_pid_of SERVER_DIR: the pid of its running QEMU, or nothing
  local pid
  pid=$(cat "$1/qemu.pid" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "qemu-system.*$1" &&
    echo "$pid"
  return 0
}
created_state_dir=0
if [ -d "$state_dir" ]; then
  for d in "$state_dir"/*/; do
    [ -f "$d/server.json" ] || continue
    [ -z "$(qemu_pid_of "${d%/}")" ] || fail "a QEMU runs in ${d%/}: $state_dir, which the block uses, is in use"
    echo "e2e-readme: removing ${d%/}, left by an earlier run (its QEMU is gone)" >&2
    rm -rf "${d%/}"
  done
else
  created_state_dir=1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/e2e-readme.XXXXXX")
pids=() names=()
cleanup() {
  local rc=$? i d pid
  set +e
  if [ -n "${vm_pid:-}" ] && kill -0 "$vm_pid" 2>/dev/null; then
    # Through v1alpha1, the stored version: this needs no conversion webhook. While
    # vm-controller runs, its finalizer stops each QEMU and removes its disk (else the
    # pidfiles below do).
    kubectl delete virtualmachines.v1alpha1.cloudnative.tw --all -A --wait=true --timeout=60s >/dev/null 2>&1
  fi
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for i in $(seq 30); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.5
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  for d in "$state_dir"/*/; do
    [ -f "$d/server.json" ] || continue
    pid=$(qemu_pid_of "${d%/}")
    if [ -n "$pid" ]; then
      echo "e2e-readme: stopping QEMU $pid of ${d%/} (its VirtualMachine was not deleted)" >&2
      kill -TERM "$pid"
      for i in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      kill -KILL "$pid" 2>/dev/null
    fi
    rm -rf "${d%/}"
  done
  [ "$created_state_dir" = 0 ] || rmdir "$state_dir" 2>/dev/null
  [ ! -d "$work/cp" ] || bash hack/control-plane.sh down "$work/cp" >/dev/null 2>&1
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "hack/control-plane.sh up, and its export line"
mkdir -p "$work/cp"
# Not through a pipe: the components it starts keep their stdout. fd 9 is the lock's: not
# for anything that outlives this script.
bash hack/control-plane.sh up --dir "$work/cp" >"$work/up.out" 9>&-
cat "$work/up.out"
export_line=$(grep '^export KUBECONFIG=' "$work/up.out") || fail "control-plane.sh up printed no export line"
echo "\$ $export_line"
eval "$export_line"
# The second substitution: ~/.kube/config is the control plane's.
home=$work/home
mkdir -p "$home/.kube"
cp "$KUBECONFIG" "$home/.kube/config"
export E2E_README_BIN=$bin

# wait_ready NAME PID PORT: until PID answers /readyz on PORT (the listener is PID's own, not
# another binary's on the same port); false, with the reason, if PID exits or 90 s pass.
wait_ready() {
  local name=$1 pid=$2 port=$3 deadline=$((SECONDS + 90))
  while true; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name exited: $(exit_reason "$work/$name.log")"
      return 1
    fi
    if [ -z "$port" ]; then sleep 2; return 0; fi
    if ss -Hltnp "sport = :$port" 2>/dev/null | grep -q "pid=$pid," &&
      curl -fsS --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
      return 0
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$name did not answer /readyz on :$port within 90 s"
      return 1
    fi
    sleep 0.5
  done
}

say "The block, line by line (E2E_README_BIN=$E2E_README_BIN)"
n=0
for line in "${lines[@]}"; do
  n=$((n + 1))
  run=$line
  b=$(binary_of "$line") || true
  if [ -n "$b" ]; then
    # shellcheck disable=SC2016 # expanded by the bash that runs the line
    run=$(sed -E 's#^cargo run -p ([A-Za-z0-9_-]+)-bin( --)?#"$E2E_README_BIN/\1"#' <<<"$line")
    printf '\n[%d] $ %s\n    (as run: %s, in the background; log %s)\n' "$n" "$line" "$run" "$work/$b.log"
    HOME=$home bash -c "exec $run" >"$work/$b.log" 2>&1 9>&- &
    pids+=($!) names+=("$b")
    [ "$b" != vm-controller ] || vm_pid=$!
    if ! why=$(wait_ready "$b" "$!" "$(port_of "$(flag_value "$line" health-probe-bind-address :8081)")"); then
      problem "line $n ($b): $why"
    fi
    continue
  fi
  printf '\n[%d] $ %s\n' "$n" "$line"
  rc=0
  if [[ $line =~ [[:space:]](-w|--watch)([[:space:]]|$) ]]; then
    HOME=$home timeout "$WATCH_SECONDS" bash -c "$line" >"$work/line-$n.out" 2>&1 9>&- || rc=$?
    cat "$work/line-$n.out"
    if [ "$rc" != 124 ] && [ "$rc" != 0 ]; then
      problem "line $n (a watch) exited $rc before ${WATCH_SECONDS}s: $(tail -n 2 "$work/line-$n.out" | tr '\n' ' ')"
    elif grep -qi 'error' "$work/line-$n.out"; then
      problem "line $n (a watch) printed an error: $(grep -i error "$work/line-$n.out" | head -n 2 | tr '\n' ' ')"
    elif [ "$(sed -n '/^NAME /,$p' "$work/line-$n.out" | wc -l)" -lt 2 ]; then
      problem "line $n (a watch) printed no table row in ${WATCH_SECONDS}s"
    fi
  else
    HOME=$home timeout 120 bash -c "$line" >"$work/line-$n.out" 2>&1 9>&- || rc=$?
    cat "$work/line-$n.out"
    [ "$rc" = 0 ] || problem "line $n exited $rc: $(tail -n 2 "$work/line-$n.out" | tr '\n' ' ')"
  fi
  ! grep -q 'Warning:' "$work/line-$n.out" || problem "line $n printed a warning: $(grep 'Warning:' "$work/line-$n.out" | head -n 2 | tr '\n' ' ')"
done

for i in "${!pids[@]}"; do
  kill -0 "${pids[$i]}" 2>/dev/null || problem "${names[$i]} is not running after the block: $(exit_reason "$work/${names[$i]}.log")"
done
if [ ${#problems[@]} -gt 0 ]; then
  fail "$readme's block does not run as written (${#problems[@]} problems above)"
fi

say "What the lines should have done"
# wait_for DESCRIPTION TIMEOUT_SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local what=$1 timeout=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${timeout}s waiting for: $what"
    sleep 1
  done
  echo "ok: $what"
}
is() { # is EXPECTED kubectl-get-args...: the output of `kubectl get ARGS` is EXPECTED
  local expected=$1
  shift
  [ "$(kubectl get "$@")" = "$expected" ]
}

foo=$(kubectl get -f deploy/examples/foo.yaml -o 'jsonpath={.spec.deploymentName}')
wait_for "Deployment $foo owned by the Foo" 60 is Foo deployment "$foo" -o 'jsonpath={.metadata.ownerReferences[0].kind}'
replicas=$(kubectl get -f deploy/examples/foo.yaml -o 'jsonpath={.spec.replicas}')
wait_for "the Foo's AVAILABLE = $replicas" 120 is "$replicas" -f deploy/examples/foo.yaml -o 'jsonpath={.status.availableReplicas}'

vm=$(kubectl get -f deploy/vm-controller/example-vm.yaml -o 'jsonpath={.metadata.name}')
vm_ns=$(kubectl get -f deploy/vm-controller/example-vm.yaml -o 'jsonpath={.metadata.namespace}')
# `kubectl get vm` reads v1beta1, which the API server converts from the stored v1alpha1
# through vm-controller's /convert.
wait_for "VirtualMachine $vm Active, read through v1beta1" 180 \
  is "cloudnative.tw/v1beta1 Active" vm "$vm" -n "$vm_ns" -o 'jsonpath={.apiVersion} {.status.phase}'
qemu=""
for d in "$state_dir"/*/; do
  [ -f "$d/server.json" ] || continue
  qemu+=$(qemu_pid_of "${d%/}")
done
[[ $qemu =~ ^[0-9]+$ ]] || fail "not one running QEMU in $state_dir: '$qemu'"
echo "ok: QEMU $qemu runs the VM: $(tr '\0' ' ' <"/proc/$qemu/cmdline" | cut -c1-120)..."
out=$(kubectl get vm -n "$vm_ns" 2>&1) || fail "kubectl get vm: $out"
echo "$out"
grep -q "^$vm " <<<"$out" || fail "kubectl get vm does not list $vm"

web=$(kubectl get -f deploy/myweb-operator/myweb.yaml -o 'jsonpath={.metadata.name}')
for kind in configmap deployment service; do
  wait_for "$kind $web owned by the MyWeb" 60 is MyWeb "$kind" "$web" -o 'jsonpath={.metadata.ownerReferences[0].kind}'
done
# The page the block's `kubectl patch web` sets.
patch_line=$(printf '%s\n' "${lines[@]}" | grep '^kubectl patch web ') || fail "no kubectl patch web line in the block"
page=$(python3 -c '
import json, shlex, sys
args = shlex.split(sys.argv[1])
print(json.loads(args[args.index("-p") + 1])["spec"]["pageContentHtml"], end="")' "$patch_line")
[ -n "$page" ] || fail "no pageContentHtml in: $patch_line"
wait_for "ConfigMap $web serves the patched page ($page)" 60 is "$page" configmap "$web" -o 'jsonpath={.data.index\.html}'
checksum=$(printf '%s' "$page" | sha256sum | cut -d' ' -f1)
wait_for "Deployment $web's template carries the patched page's checksum" 60 is "$checksum" deployment "$web" \
  -o 'jsonpath={.spec.template.metadata.annotations.operator\.k8s-summit\.org/page-sha256}'

# Deleted through v1beta1 (the deletionTimestamp is a write through the preferred version):
# the finalizer stops QEMU and removes its disk before the object goes.
out=$(kubectl delete vm "$vm" -n "$vm_ns" --wait=true --timeout=90s 2>&1) || fail "kubectl delete vm $vm: $out"
echo "$out"
# Exited: gone, or a zombie until whoever adopted the daemon (init) reaps it.
exited() { [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
exited "$qemu" || fail "QEMU $qemu outlived its VirtualMachine"
for d in "$state_dir"/*/; do
  [ ! -f "$d/server.json" ] || fail "VM state left behind in $state_dir: $(ls "$state_dir")"
done
echo "ok: VirtualMachine $vm, its QEMU and its disk are gone"

for i in "${!pids[@]}"; do
  kill -0 "${pids[$i]}" 2>/dev/null || fail "${names[$i]} exited: $(exit_reason "$work/${names[$i]}.log")"
done
echo "ok: ${names[*]} still running"

# A user who runs the block again on the same control plane starts with the CRDs: applied
# over what hack/local-conversion.sh applied, they must go back to the in-cluster Service
# (a `kubectl patch` of the url instead made this apply fail: a url and a Service).
out=$(HOME=$home bash -c "${lines[0]}" 2>&1 9>&-) || fail "the block's first line, again: $out"
! grep -q 'Warning:' <<<"$out" || fail "the block's first line, again, warns: $out"
echo "ok: the block's first line runs again ($(tr '\n' ' ' <<<"$out"))"
say "$readme's block runs as written ($SECONDS s)"
