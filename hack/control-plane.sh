#!/usr/bin/env bash
# A real, local Kubernetes control plane for e2e tests and the demo:
# etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok
# (fake Nodes whose Pods become Running/Ready), all on 127.0.0.1, free ports.
#
# Usage:
#   hack/control-plane.sh build [--real-node]   ensure the binaries (build with Go if missing);
#                                               --real-node: also kubelet, kube-proxy, containerd
#   hack/control-plane.sh up [--dir D] [--nodes N] [--foreground] [--advertise-address IP]
#                                               (--nodes 0: no kwok at all)
#                                               start; prints KUBECONFIG, an export line and
#                                               WEBHOOK_CERT_DIR=... WEBHOOK_CA=... (see below)
#   hack/control-plane.sh status [DIR]          process and /readyz status
#   hack/control-plane.sh down [DIR]            stop every process, remove the state dir
#   hack/control-plane.sh restart-apiserver [DIR]
#                                               restart kube-apiserver only (same ports, data)
#   hack/control-plane.sh restart-etcd [DIR]    restart etcd only (same ports, data; not with
#                                               --foreground)
#   hack/control-plane.sh restart-controller-manager [DIR]
#                                               restart kube-controller-manager only (not with
#                                               --foreground)
#   hack/control-plane.sh client-kubeconfig DIR NAME SUBJECT
#                                               a client certificate for SUBJECT (e.g.
#                                               /O=system:nodes/CN=system:node:n1) and
#                                               DIR/NAME.kubeconfig using it
#   hack/control-plane.sh bin-dir               print where the binaries are cached
#   hack/control-plane.sh bin-path NAME         print the path of one binary (kubelet, ctr, ...)
#   hack/control-plane.sh version               print the Kubernetes version selected
#
# KUBE_APISERVER_EXTRA_ARGS: extra kube-apiserver flags, split on whitespace (e.g.
# "--feature-gates=ListFromCacheSnapshot=false"). Read by `up`, kept in the state dir
# ($DIR/kube-apiserver.extra-args) so a restart keeps them; `restart-apiserver` with the
# variable set (even to "") replaces them.
#
# KUBE_CONTROLLER_MANAGER_EXTRA_ARGS: extra kube-controller-manager flags, split on
# whitespace, appended to the defaults (a repeated list flag such as --controllers adds to
# the list; a repeated scalar flag such as --node-monitor-grace-period=1h wins). The chaos
# soak (hack/chaos.sh) uses it so restarting the API server does not look like dead Nodes.
#
# READY_TIMEOUT_S (default 180): how long `up` and the restart-* commands wait for a
# component to answer (/readyz, /health, /healthz). A started kube-apiserver fills its
# caches and builds its OpenAPI specs before /readyz says ok: 14 s on an idle machine,
# over 60 s in CI's last phase, where four control planes share 2 cores (a warm run
# failed there at the old 60 s bound).
#
# K8S_VERSION picks the Kubernetes release (default: newest):
#   newest        hack/tools/control-plane/go.mod         (the suite's default)
#   oldest        hack/tools/control-plane/oldest/go.mod  (oldest release we support)
#   next          hack/tools/control-plane/next/go.mod    (the next release's newest
#                 pre-release the module proxy serves: by hand, issue 59; it needs Go
#                 1.27, fetched as the go1.27.3 toolchain from the module proxy)
#   v1.37.2, 1.37 the module pinning that version (an error if none does)
# Each release is cached in its own k8s-<version>/bin, so both live side by side.
#
# Binaries: KUBEBUILDER_ASSETS (controller-runtime's envtest convention) wins for
# every binary it contains; the rest come from
#   ${KUBE_CONTROLLERS_CACHE_DIR:-~/.cache/kube-controllers-rs}/k8s-<version>/bin (kwok:
#   kwok-<version>/bin)
# built from the Go modules in hack/tools/control-plane (versions pinned there).
#
# --foreground (used by crates/dev/testenv): components are children of this shell
# with PR_SET_PDEATHSIG=KILL (setpriv), the shell waits, and SIGTERM/exit tears
# everything down and removes the state dir. "$DIR/ready" appears once usable.
#
# --advertise-address IP (used by hack/node.sh, the real node): kube-apiserver binds to IP
# instead of 127.0.0.1 and publishes it as the `kubernetes` Service's endpoint, so Pods
# on a real node reach it through 10.0.0.1:443; IP must be an address of this machine
# that only the node's own bridge routes (hack/node.sh gives it to its bridge first).
# The kubeconfigs then point at IP. kube-apiserver calls the kubelet with the admin
# identity (logs, exec).
#
# Admission webhooks: `up` also writes a serving certificate for 127.0.0.1/localhost,
# signed by the cluster CA, as $DIR/webhook-certs/tls.crt + tls.key (and ca.crt), and
# the CA as $DIR/webhook-ca.crt. Run a controller with
#   --webhook-bind-address 127.0.0.1:<port> --webhook-cert-dir $DIR/webhook-certs
# and register it with a WebhookConfiguration whose clientConfig is
#   url: https://127.0.0.1:<port><path>, caBundle: $(base64 -w0 $DIR/webhook-ca.crt)
# Both paths are in $DIR/env (WEBHOOK_CERT_DIR, WEBHOOK_CA) and printed by `up`.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/host.sh
source "$REPO_ROOT/hack/lib/host.sh"
TOOLS_ROOT=$REPO_ROOT/hack/tools/control-plane
KWOK_DIR=$TOOLS_ROOT/kwok

# pinned_version DIR: the k8s.io/kubernetes version DIR/go.mod pins.
pinned_version() { awk '$1 == "k8s.io/kubernetes" { print $2 }' "$1/go.mod"; }

# select_release: TOOLS_DIR and K8S_VERSION from the K8S_VERSION knob.
select_release() {
  local want=${K8S_VERSION:-newest} d v
  case "$want" in
  newest) TOOLS_DIR=$TOOLS_ROOT ;;
  oldest) TOOLS_DIR=$TOOLS_ROOT/oldest ;;
  next) TOOLS_DIR=$TOOLS_ROOT/next ;;
  *)
    TOOLS_DIR=""
    want=v${want#v}
    for d in "$TOOLS_ROOT" "$TOOLS_ROOT/oldest" "$TOOLS_ROOT/next"; do
      v=$(pinned_version "$d")
      if [ "$v" = "$want" ] || [ "${v%.*}" = "$want" ]; then TOOLS_DIR=$d; fi
    done
    [ -n "$TOOLS_DIR" ] || {
      printf '[control-plane] error: K8S_VERSION=%s: no module under %s pins it (newest: %s, oldest: %s)\n' \
        "${K8S_VERSION}" "$TOOLS_ROOT" "$(pinned_version "$TOOLS_ROOT")" "$(pinned_version "$TOOLS_ROOT/oldest")" >&2
      exit 1
    }
    ;;
  esac
  K8S_VERSION=$(pinned_version "$TOOLS_DIR")
}
select_release
KWOK_VERSION=$(awk '$1 == "sigs.k8s.io/kwok" && $2 ~ /^v/ { print $2 }' "$KWOK_DIR/go.mod")
READY_TIMEOUT_S=${READY_TIMEOUT_S:-180}
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
BIN_DIR=$CACHE_ROOT/k8s-$K8S_VERSION/bin
# kwok does not depend on the Kubernetes release: one build serves every release.
KWOK_BIN_DIR=$CACHE_ROOT/kwok-$KWOK_VERSION/bin
K8S_BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl)
ALL_BINARIES=("${K8S_BINARIES[@]}" kwok)
# The real node (hack/node.sh; `build --real-node`): kubelet and kube-proxy from the same
# k8s.io/kubernetes pin as the control plane, in the same bin dir; containerd 2.x, its
# runc shim and ctr from hack/tools/node (their own module: containerd pins its own
# dependency versions, which must not move kube-apiserver's).
NODE_TOOLS_DIR=$REPO_ROOT/hack/tools/node
CONTAINERD_VERSION=$(awk '$1 == "github.com/containerd/containerd/v2" { print $2 }' "$NODE_TOOLS_DIR/go.mod")
CONTAINERD_BIN_DIR=$CACHE_ROOT/containerd-$CONTAINERD_VERSION/bin
NODE_BINARIES=(kubelet kube-proxy)
CONTAINERD_BINARIES=(containerd containerd-shim-runc-v2 ctr)
# Service CIDR: the kubernetes Service gets its first IP (in the serving cert).
SERVICE_CIDR=10.0.0.0/24
KUBERNETES_SERVICE_IP=10.0.0.1

now_ms() { echo $(($(date +%s%N) / 1000000)); }
# elapsed START_MS: seconds since START_MS, e.g. 4.213
elapsed() {
  local ms=$(($(now_ms) - $1))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
log() { printf '[control-plane] %s\n' "$*" >&2; }
die() { printf '[control-plane] error: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------------ binaries --

# bin_path NAME: KUBEBUILDER_ASSETS/NAME if executable there, else the cache.
bin_path() {
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$1" ]; then
    echo "$KUBEBUILDER_ASSETS/$1"
  else
    echo "$(group_dir "$(group_of "$1")")/$1"
  fi
}

# group_of NAME: the build group a binary belongs to.
group_of() {
  case $1 in
  kwok) echo kwok ;;
  kubelet | kube-proxy) echo node ;;
  containerd | containerd-shim-runc-v2 | ctr) echo containerd ;;
  *) echo k8s ;;
  esac
}
# group_dir GROUP: where the cached binaries of GROUP live.
group_dir() {
  case $1 in
  kwok) echo "$KWOK_BIN_DIR" ;;
  containerd) echo "$CONTAINERD_BIN_DIR" ;;
  *) echo "$BIN_DIR" ;;
  esac
}
# group_src GROUP: the Go module GROUP is built from.
group_src() {
  case $1 in
  kwok) echo "$KWOK_DIR" ;;
  containerd) echo "$NODE_TOOLS_DIR" ;;
  *) echo "$TOOLS_DIR" ;;
  esac
}
# group_names GROUP: its binaries.
group_names() {
  case $1 in
  kwok) echo kwok ;;
  node) echo "${NODE_BINARIES[*]}" ;;
  containerd) echo "${CONTAINERD_BINARIES[*]}" ;;
  *) echo "${K8S_BINARIES[*]}" ;;
  esac
}
# group_pkgs GROUP: the Go packages that build its binaries.
group_pkgs() {
  case $1 in
  kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
  node) echo k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy ;;
  containerd)
    local c=github.com/containerd/containerd/v2/cmd
    echo $c/containerd $c/containerd-shim-runc-v2 $c/ctr
    ;;
  *)
    echo go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
    ;;
  esac
}
# group_tags GROUP: Go build tags. containerd without the snapshotters that need cgo
# (btrfs, devmapper, zfs): the node uses overlayfs, and CGO_ENABLED=0 builds static binaries.
group_tags() { if [ "$1" = containerd ]; then echo no_btrfs,no_devmapper,no_zfs; fi; }

# stamp GROUP: identifies what the cached binaries of a group were built from:
# the pins (go.mod without comments or the module line, go.sum) and the flags.
stamp() {
  local dir tags
  dir=$(group_src "$1")
  tags=$(group_tags "$1")
  cat <(grep -v -e '^//' -e '^module ' "$dir/go.mod") "$dir/go.sum" <(echo "flags=$(ldflags "$1") $GCFLAGS${tags:+ tags=$tags}") |
    sha256sum | cut -d' ' -f1
}

# No DWARF from the compiler: the linker strips it anyway (-s -w), and generating it
# costs compile time in every one of the thousands of packages a release builds.
GCFLAGS="all=-dwarf=false"

ldflags() {
  local v=k8s.io/component-base/version minor=${K8S_VERSION#v1.}
  minor=${minor%%.*}
  if [ "$1" = k8s ] || [ "$1" = node ]; then
    echo "-s -w -X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  elif [ "$1" = containerd ]; then
    echo "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
  else
    echo "-s -w"
  fi
}

# group_missing GROUP: true if a binary of GROUP must be (re)built.
group_missing() {
  local names b p
  read -r -a names <<<"$(group_names "$1")"
  local dir
  dir=$(group_dir "$1")
  for b in "${names[@]}"; do
    p=$(bin_path "$b")
    [ -x "$p" ] || return 0
    if [ "$p" = "$dir/$b" ] && [ "$(cat "$dir/.stamp-$1" 2>/dev/null)" != "$(stamp "$1")" ]; then
      return 0
    fi
  done
  return 1
}

build_group() {
  local group=$1 dir out pkgs tmp start
  out=$(group_dir "$group")
  dir=$(group_src "$group")
  read -r -a pkgs <<<"$(group_pkgs "$group")"
  mkdir -p "$out"
  tmp=$(mktemp -d "$out/.build.XXXXXX")
  start=$(date +%s)
  log "building ${group} binaries (${pkgs[*]}) into $out; a cold build takes a long time, see docs/testing.md"
  # -mod=readonly: the pins in go.mod/go.sum are the truth, never rewritten here.
  # GOCACHE/GOMODCACHE stay the user's (shared, persistent) Go caches.
  # GOGC=400: the compiler collects garbage a quarter as often (10 % less CPU building
  # client-go cold, docs/testing.md) for more memory (0.6 GB instead of 0.35 at peak).
  # A module that needs a newer Go than the machine's (the next release's: go 1.27) builds
  # with the approved toolchain, which the go command takes from the module proxy.
  local toolchain=${GOTOOLCHAIN:-}
  if grep -q '^go 1\.27' "$dir/go.mod"; then toolchain=go1.27.3; fi
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=readonly" GOGC="${GOGC:-400}" \
    env ${toolchain:+GOTOOLCHAIN=$toolchain} \
    go build -trimpath -tags "$(group_tags "$group")" -gcflags "$GCFLAGS" -ldflags "$(ldflags "$group")" \
      -o "$tmp/" "${pkgs[@]}") ||
    { rm -rf "$tmp"; die "go build of ${group} binaries failed"; }
  [ -f "$tmp/server" ] && mv "$tmp/server" "$tmp/etcd" # go.etcd.io/etcd/server/v3 builds "server"
  local f
  for f in "$tmp"/*; do mv -f "$f" "$out/"; done
  rmdir "$tmp"
  stamp "$group" >"$out/.stamp-$group"
  log "built ${group} binaries in $(($(date +%s) - start))s"
}

cmd_build() {
  local groups=() g wanted=(k8s kwok) names=("${ALL_BINARIES[@]}")
  if [ "${1:-}" = --real-node ]; then
    wanted+=(node containerd)
    names+=("${NODE_BINARIES[@]}" "${CONTAINERD_BINARIES[@]}")
  fi
  ensure_openssl # needed by `up`; installed here so CI's build step gets it
  for g in "${wanted[@]}"; do group_missing "$g" && groups+=("$g"); done
  if [ ${#groups[@]} -gt 0 ]; then
    if ! command -v go >/dev/null 2>&1; then
      die "missing binaries (${ALL_BINARIES[*]}) and 'go' is not installed.
  Either install Go >= 1.26 (https://go.dev/dl/) and re-run '$0 build' (it builds Kubernetes $K8S_VERSION,
  its etcd and kwok $KWOK_VERSION into $BIN_DIR and $KWOK_BIN_DIR), or set KUBEBUILDER_ASSETS to a directory holding
  executables named: ${ALL_BINARIES[*]}."
    fi
    mkdir -p "$CACHE_ROOT"
    # Serialise concurrent builds (parallel test binaries, two shells).
    exec 9>"$CACHE_ROOT/build.lock"
    flock 9
    for g in "${groups[@]}"; do
      group_missing "$g" && build_group "$g"
    done
    flock -u 9
  fi
  for g in "${names[@]}"; do
    [ -x "$(bin_path "$g")" ] || die "binary $g missing after build: $(bin_path "$g")"
  done
}

# --------------------------------------------------------------------- certs --

ensure_openssl() {
  command -v openssl >/dev/null 2>&1 && return 0
  log "installing openssl with apt-get"
  apt_install openssl || die "openssl is required; install it with your package manager"
}

# new_cert NAME SUBJECT EXTENSIONS: EC P-256 key (PKCS#8) + cert signed by the CA.
new_cert() {
  local pki=$STATE/pki
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/$1.key" 2>/dev/null
  openssl req -new -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$3" >"$pki/$1.ext"
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
    -days 30 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
}

gen_pki() {
  local pki=$STATE/pki
  mkdir -p "$pki"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=kube-controllers-rs-ca" -days 30 -out "$pki/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
  new_cert apiserver "/CN=kube-apiserver" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$API_ADDRESS,DNS:localhost,IP:$KUBERNETES_SERVICE_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # Client identities. Bootstrap RBAC grants system:kube-controller-manager and
  # system:kube-scheduler exactly what those components need; admin and kwok
  # (which writes Node and Pod status like a kubelet) are in system:masters.
  new_cert admin "/O=system:masters/CN=kube-controllers-rs-admin" "extendedKeyUsage=clientAuth"
  new_cert kube-controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  new_cert kube-scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  new_cert kwok "/O=system:masters/CN=kwok-controller" "extendedKeyUsage=clientAuth"
  # ServiceAccount token signing key pair.
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key" 2>/dev/null
  openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
}

# gen_webhook_certs: a serving certificate for admission webhook servers on this machine
# (IP 127.0.0.1, DNS localhost), signed by the cluster CA, laid out like a
# kubernetes.io/tls Secret in $STATE/webhook-certs (tls.crt, tls.key as PKCS#8, ca.crt):
# what `--webhook-cert-dir` reads. The CA is also $STATE/webhook-ca.crt, the caBundle of
# WebhookConfigurations that call such a server by `url:`.
gen_webhook_certs() {
  local pki=$STATE/pki dir=$STATE/webhook-certs
  new_cert webhook "/CN=kube-controllers-rs-webhook" "extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
  mkdir -p "$dir"
  cp "$pki/webhook.crt" "$dir/tls.crt"
  install -m 600 "$pki/webhook.key" "$dir/tls.key"
  cp "$pki/ca.crt" "$dir/ca.crt"
  cp "$pki/ca.crt" "$STATE/webhook-ca.crt"
}

# write_kubeconfig FILE IDENTITY: self-contained kubeconfig (embedded PEM data).
write_kubeconfig() {
  local pki=$STATE/pki
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-controllers-rs
  cluster:
    server: https://$API_ADDRESS:$API_PORT
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$pki/$2.crt")
    client-key-data: $(base64 -w0 "$pki/$2.key")
contexts:
- name: kube-controllers-rs
  context:
    cluster: kube-controllers-rs
    user: $2
    namespace: default
current-context: kube-controllers-rs
EOF
}

# ----------------------------------------------------------------- processes --

# start NAME CMD...: start a component, log to $STATE/logs/NAME.log, record its pid.
start() {
  local name=$1
  shift
  if [ "$FOREGROUND" = 1 ] && command -v setpriv >/dev/null 2>&1; then
    setpriv --pdeathsig KILL -- "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  else
    setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  fi
  echo $! >"$STATE/pids/$name.pid"
  COMPONENT_PIDS+=("$!")
}

# start_apiserver: start kube-apiserver from the command line saved in the state dir,
# plus the extra flags saved there (KUBE_APISERVER_EXTRA_ARGS).
start_apiserver() {
  local args=() extra=()
  mapfile -t args <"$STATE/kube-apiserver.args"
  [ -f "$STATE/kube-apiserver.extra-args" ] && mapfile -t extra <"$STATE/kube-apiserver.extra-args"
  start kube-apiserver "${args[@]}" "${extra[@]}"
}

# start_component_from_args NAME: start NAME from the command line saved in the state
# dir ($STATE/NAME.args, one argument a line).
start_component_from_args() {
  local args=()
  mapfile -t args <"$STATE/$1.args"
  start "$1" "${args[@]}"
}

# save_apiserver_extra_args: KUBE_APISERVER_EXTRA_ARGS, one flag a line, into the state dir.
save_apiserver_extra_args() {
  local extra=()
  read -r -a extra <<<"${KUBE_APISERVER_EXTRA_ARGS:-}"
  if [ ${#extra[@]} -gt 0 ]; then
    printf '%s\n' "${extra[@]}" >"$STATE/kube-apiserver.extra-args"
    log "extra kube-apiserver flags: ${extra[*]}"
  else
    rm -f "$STATE/kube-apiserver.extra-args"
  fi
}

# restart_apiserver: stop kube-apiserver, start it again with the same command line,
# wait for /readyz, then bump $STATE/apiserver-generation (what `restart-apiserver`
# waits for). etcd and every other component keep running.
restart_apiserver() {
  local pid i
  pid=$(cat "$STATE/pids/kube-apiserver.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local kept=()
  for i in "${COMPONENT_PIDS[@]}"; do [ "$i" = "$pid" ] || kept+=("$i"); done
  COMPONENT_PIDS=("${kept[@]}")
  start_apiserver
  wait_until "$READY_TIMEOUT_S" "kube-apiserver /readyz after restart" \
    kubectl_admin get --raw=/readyz --request-timeout=2s || return 1
  echo $(($(cat "$STATE/apiserver-generation" 2>/dev/null || echo 0) + 1)) >"$STATE/apiserver-generation"
  log "kube-apiserver restarted (pid $(cat "$STATE/pids/kube-apiserver.pid"))"
}

# healthz PORT: the component's /healthz is ok (or, without curl, its port is open).
healthz() {
  if command -v curl >/dev/null 2>&1; then
    [ "$(curl -ksS --max-time 2 "https://127.0.0.1:$1/healthz")" = ok ]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
  fi
}

kubectl_admin() { "$(bin_path kubectl)" --kubeconfig="$STATE/kubeconfig" "$@"; }

# wait_until TIMEOUT_S WHAT CMD...: poll CMD every 0.2 s.
wait_until() {
  local timeout=$1 deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      # The logs first, the reason last: callers that keep only the tail of stderr
      # (the chaos soak's fault records) keep the reason.
      tail -n 20 "$STATE"/logs/*.log >&2 || true
      log "timed out after $timeout s waiting for $what; logs in $STATE/logs"
      return 1
    fi
    check_alive
    sleep 0.2
  done
}

check_alive() {
  local f
  for f in "$STATE"/pids/*.pid; do
    [ -e "$f" ] || continue
    if ! alive "$(cat "$f")"; then
      local n
      n=$(basename "$f" .pid)
      log "$n exited early; last log lines:"
      tail -n 30 "$STATE/logs/$n.log" >&2 || true
      return 1
    fi
  done
}

# alive PID: the process exists and is not a zombie (reparented daemons may
# stay <defunct> when PID 1 does not reap).
alive() {
  [ -r "/proc/$1/stat" ] || return 1
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# stop_dir DIR: TERM every component (reverse start order), KILL stragglers, remove DIR.
stop_dir() {
  local dir=$1 n pid i
  [ -f "$dir/.kube-controllers-rs-control-plane" ] || die "$dir is not a control-plane state dir"
  for n in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    [ -f "$dir/pids/$n.pid" ] && kill -TERM "$(cat "$dir/pids/$n.pid")" 2>/dev/null || true
  done
  for i in $(seq 1 50); do
    local alive=0
    for n in "$dir"/pids/*.pid; do
      [ -e "$n" ] && alive "$(cat "$n")" && alive=1
    done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  for n in "$dir"/pids/*.pid; do
    [ -e "$n" ] && kill -KILL "$(cat "$n")" 2>/dev/null || true
  done
  # SIGKILL is asynchronous: wait until the killed ones are really gone (their ports
  # closed), so "stopped" means stopped to whoever called us.
  for i in $(seq 1 50); do
    local alive=0
    for n in "$dir"/pids/*.pid; do
      [ -e "$n" ] && alive "$(cat "$n")" && alive=1
    done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  rm -rf "$dir"
}

cmd_up() {
  FOREGROUND=0
  local nodes=2 dir=""
  API_ADDRESS=127.0.0.1
  while [ $# -gt 0 ]; do
    case $1 in
    --foreground) FOREGROUND=1 ;;
    --dir) dir=$2; shift ;;
    --nodes) nodes=$2; shift ;;
    --advertise-address) API_ADDRESS=$2; shift ;;
    *) die "unknown flag for up: $1" ;;
    esac
    shift
  done
  cmd_build
  ensure_openssl
  local t0
  t0=$(now_ms)
  STATE=${dir:-$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-rs-cp.XXXXXX")}
  mkdir -p "$STATE"/{logs,pids,etcd}
  touch "$STATE/.kube-controllers-rs-control-plane"
  COMPONENT_PIDS=()
  if [ "$FOREGROUND" = 1 ]; then
    trap 'trap - EXIT TERM INT HUP; stop_dir "$STATE"; exit 143' TERM INT HUP
    trap 'stop_dir "$STATE"' EXIT
  else
    trap '[ -f "$STATE/ready" ] || { log "startup failed, tearing down"; stop_dir "$STATE"; }' EXIT
  fi
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT < <(free_ports 5)
  gen_pki
  gen_webhook_certs
  local pki=$STATE/pki
  write_kubeconfig "$STATE/kubeconfig" admin
  for c in kube-controller-manager kube-scheduler kwok; do write_kubeconfig "$STATE/$c.kubeconfig" "$c"; done

  # Kept in the state dir so `restart-etcd` can start the same etcd again.
  printf '%s\n' "$(bin_path etcd)" --name=default --data-dir="$STATE/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level=warn >"$STATE/etcd.args"
  start_component_from_args etcd
  # The apiserver's command line is kept in the state dir so `restart-apiserver`
  # can start the same server again (same ports, certificates and etcd).
  # --endpoint-reconciler-type=none: since 1.37 the apiserver refuses to publish a
  # loopback address as the `kubernetes` Service's endpoints; nothing here reaches
  # the API server through that Service (no real Pods run), so none is published.
  # With --advertise-address (a real node), the default reconciler publishes it.
  local endpoints=(--endpoint-reconciler-type=none)
  [ "$API_ADDRESS" = 127.0.0.1 ] || endpoints=(--kubelet-client-certificate="$pki/admin.crt"
    --kubelet-client-key="$pki/admin.key" --kubelet-preferred-address-types=InternalIP)
  printf '%s\n' "$(bin_path kube-apiserver)" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$API_ADDRESS" --advertise-address="$API_ADDRESS" "${endpoints[@]}" --secure-port="$API_PORT" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC --allow-privileged=true \
    --profiling=false --v=1 >"$STATE/kube-apiserver.args"
  save_apiserver_extra_args
  start_apiserver
  wait_until "$READY_TIMEOUT_S" "kube-apiserver /readyz" kubectl_admin get --raw=/readyz --request-timeout=2s
  local t_readyz
  t_readyz=$(elapsed "$t0")

  local kcm_extra=()
  # kwok's fake Nodes: kwok 0.7 patches their status about once a minute and renews no
  # Lease, while the node lifecycle controller's grace period is 50 s: every minute both
  # Nodes went NotReady for a few seconds (kube-controller-manager's log: "all Nodes are
  # not-Ready. Entering master disruption mode" at 56 s intervals), their Pods were marked
  # not Ready, and under load kwok failed to make them Ready again (its "failed to apply
  # stage"): Deployments stayed unavailable and e2e tests timed out. Fake Nodes never die,
  # so a grace period longer than any run.
  # Only when the caller's flags do not set it (kube-controller-manager exited at once
  # when chaos.sh's own copy came twice).
  if [ "$nodes" -gt 0 ] && [[ "${KUBE_CONTROLLER_MANAGER_EXTRA_ARGS:-}" != *node-monitor-grace-period* ]]; then
    kcm_extra=(--node-monitor-grace-period=24h)
  fi
  local kcm_more=()
  read -r -a kcm_more <<<"${KUBE_CONTROLLER_MANAGER_EXTRA_ARGS:-}"
  kcm_extra+=("${kcm_more[@]}")
  [ ${#kcm_extra[@]} -eq 0 ] || log "extra kube-controller-manager flags: ${kcm_extra[*]}"
  # Kept in the state dir so `restart-controller-manager` can start it again.
  printf '%s\n' "$(bin_path kube-controller-manager)" --kubeconfig="$STATE/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$STATE/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="$STATE/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" --use-service-account-credentials=true \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --controllers='*' --profiling=false --v=1 "${kcm_extra[@]}" >"$STATE/kube-controller-manager.args"
  start_component_from_args kube-controller-manager
  start kube-scheduler "$(bin_path kube-scheduler)" --kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$STATE/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false --profiling=false --v=1
  # kwok only with fake Nodes: it would take over a real node's Pods too (--manage-all-nodes).
  if [ "$nodes" -gt 0 ]; then
    printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions: {}\n' >"$STATE/kwok.yaml"
    # Default stages: Nodes get Ready + heartbeats (leases), Pods Running/Ready.
    # --node-port=0 and no --server-address: kwok binds no port.
    start kwok "$(bin_path kwok)" --kubeconfig="$STATE/kwok.kubeconfig" --config="$STATE/kwok.yaml" \
      --manage-all-nodes=true --node-port=0 --node-ip=127.0.0.1
  fi

  local i manifest=""
  for i in $(seq 0 $((nodes - 1))); do
    manifest+="apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  labels: {type: kwok, kubernetes.io/hostname: kwok-node-$i, kubernetes.io/os: linux, kubernetes.io/arch: amd64}
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: \"0\"}
---
"
  done
  if [ "$nodes" -gt 0 ]; then
    printf '%s' "$manifest" | kubectl_admin apply -f - >/dev/null
    wait_until 60 "kwok Nodes Ready" kubectl_admin wait --for=condition=Ready node --all --timeout=1s
  fi
  wait_until 60 "ServiceAccount default/default (kube-controller-manager)" kubectl_admin get serviceaccount default -n default
  wait_until 30 "kube-controller-manager healthz" healthz "$KCM_PORT"
  wait_until 30 "kube-scheduler healthz" healthz "$SCHED_PORT"

  cat >"$STATE/env" <<EOF
KUBECONFIG=$STATE/kubeconfig
KUBECTL=$(bin_path kubectl)
APISERVER=https://$API_ADDRESS:$API_PORT
API_ADDRESS=$API_ADDRESS
API_PORT=$API_PORT
ETCD=http://127.0.0.1:$ETCD_PORT
READYZ_SECONDS=$t_readyz
READY_SECONDS=$(elapsed "$t0")
WEBHOOK_CERT_DIR=$STATE/webhook-certs
WEBHOOK_CA=$STATE/webhook-ca.crt
EOF
  touch "$STATE/ready"
  log "kube-apiserver /readyz ok after ${t_readyz}s, Nodes Ready and controllers healthy after $(elapsed "$t0")s (state: $STATE)"
  echo "KUBECONFIG=$STATE/kubeconfig"
  echo "export KUBECONFIG=$STATE/kubeconfig PATH=$(dirname "$(bin_path kubectl)"):\$PATH"
  # Not on the export line: WEBHOOK_CERT_DIR is also the env var of a controller flag.
  echo "WEBHOOK_CERT_DIR=$STATE/webhook-certs WEBHOOK_CA=$STATE/webhook-ca.crt"
  if [ "$FOREGROUND" = 1 ]; then
    # Wait for any component to die (or a signal): then tear everything down.
    # SIGUSR1 (sent by `restart-apiserver`) restarts kube-apiserver instead.
    # The trap before the pid file: `restart-apiserver` signals as soon as it finds the
    # file, and an untrapped SIGUSR1 ends a shell.
    RESTART_REQUESTED=0
    trap 'RESTART_REQUESTED=1' USR1
    echo $$ >"$STATE/foreground.pid"
    while true; do
      wait -n "${COMPONENT_PIDS[@]}" || true
      if [ "$RESTART_REQUESTED" = 1 ]; then
        RESTART_REQUESTED=0
        # Said before the teardown, in the log `restart-apiserver`'s caller reads
        # (testenv puts its tail into the error).
        restart_apiserver || { log "the kube-apiserver restart failed: tearing down"; break; }
        continue
      fi
      break
    done
    check_alive || true
    exit 1
  fi
  mkdir -p "$CACHE_ROOT"
  echo "$STATE" >"$CACHE_ROOT/current"
  echo "# stop with: $0 down $STATE"
}

state_arg() {
  local dir=${1:-${CONTROL_PLANE_DIR:-}}
  [ -n "$dir" ] || dir=$(cat "$CACHE_ROOT/current" 2>/dev/null || true)
  [ -n "$dir" ] && [ -d "$dir" ] || die "no running control plane found (pass its state dir)"
  echo "$dir"
}

cmd_status() {
  STATE=$(state_arg "${1:-}")
  local f rc=0
  echo "state: $STATE"
  for f in "$STATE"/pids/*.pid; do
    local s=running
    alive "$(cat "$f")" || { s=DEAD; rc=1; }
    printf '  %-24s pid %-8s %s\n' "$(basename "$f" .pid)" "$(cat "$f")" "$s"
  done
  local readyz
  readyz=$(kubectl_admin get --raw=/readyz --request-timeout=5s 2>&1) || rc=1
  echo "readyz: $readyz"
  kubectl_admin get nodes 2>&1 || rc=1
  echo "export KUBECONFIG=$STATE/kubeconfig"
  return $rc
}

# restart-apiserver [DIR]: stop and start kube-apiserver (same ports, certificates,
# etcd data); returns once it is ready again. Informers see their watches break,
# connections refused, then a fresh server with an empty watch cache.
cmd_restart_apiserver() {
  STATE=$(state_arg "${1:-}")
  local before fg i
  before=$(cat "$STATE/apiserver-generation" 2>/dev/null || echo 0)
  fg=$(cat "$STATE/foreground.pid" 2>/dev/null || true)
  [ -n "${KUBE_APISERVER_EXTRA_ARGS+set}" ] && save_apiserver_extra_args
  if [ -n "$fg" ] && alive "$fg"; then
    # A foreground `up` owns the processes: ask it to do the restart.
    kill -USR1 "$fg"
    for i in $(seq 1 $((READY_TIMEOUT_S * 10 + 50))); do
      [ "$(cat "$STATE/apiserver-generation" 2>/dev/null || echo 0)" -gt "$before" ] && return 0
      alive "$fg" || die "the control plane exited during the restart"
      sleep 0.1
    done
    die "kube-apiserver did not come back within $READY_TIMEOUT_S s"
  fi
  FOREGROUND=0
  COMPONENT_PIDS=("$(cat "$STATE/pids/kube-apiserver.pid")")
  restart_apiserver
}

# restart-etcd [DIR]: stop etcd (SIGTERM, SIGKILL after 10 s) and start it again with the
# same command line and data; returns once it answers /health. kube-apiserver keeps
# running and reconnects (its /readyz fails meanwhile). Not for a --foreground `up`.
cmd_restart_etcd() {
  STATE=$(state_arg "${1:-}")
  local fg pid i port
  fg=$(cat "$STATE/foreground.pid" 2>/dev/null || true)
  if [ -n "$fg" ] && alive "$fg"; then die "restart-etcd: not supported for a --foreground control plane"; fi
  FOREGROUND=0
  pid=$(cat "$STATE/pids/etcd.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  COMPONENT_PIDS=()
  start_component_from_args etcd
  port=$(sed -n 's|^--listen-client-urls=http://127.0.0.1:||p' "$STATE/etcd.args")
  wait_until "$READY_TIMEOUT_S" "etcd /health after restart" etcd_healthy "$port"
  log "etcd restarted (pid $(cat "$STATE/pids/etcd.pid"))"
}

# restart-controller-manager [DIR]: stop kube-controller-manager and start it again with
# the same command line (fresh informers, a fresh garbage-collector graph); returns once
# /healthz is ok. Not for a --foreground `up`.
cmd_restart_controller_manager() {
  STATE=$(state_arg "${1:-}")
  local fg pid i port
  fg=$(cat "$STATE/foreground.pid" 2>/dev/null || true)
  if [ -n "$fg" ] && alive "$fg"; then die "restart-controller-manager: not supported for a --foreground control plane"; fi
  FOREGROUND=0
  pid=$(cat "$STATE/pids/kube-controller-manager.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  COMPONENT_PIDS=()
  start_component_from_args kube-controller-manager
  port=$(sed -n 's|^--secure-port=||p' "$STATE/kube-controller-manager.args")
  wait_until "$READY_TIMEOUT_S" "kube-controller-manager healthz after restart" healthz "$port"
  log "kube-controller-manager restarted (pid $(cat "$STATE/pids/kube-controller-manager.pid"))"
}

# etcd_healthy PORT: etcd's /health says true.
etcd_healthy() { curl -sS --max-time 2 "http://127.0.0.1:$1/health" | grep -q '"health":"true"'; }

# client-kubeconfig DIR NAME SUBJECT: a client certificate for SUBJECT signed by the
# cluster CA and a kubeconfig for it, $DIR/NAME.kubeconfig (hack/node.sh: the kubelet's
# system:node identity, kube-proxy's).
cmd_client_kubeconfig() {
  STATE=$(state_arg "${1:-}")
  [ $# -eq 3 ] || die "usage: client-kubeconfig DIR NAME SUBJECT"
  API_ADDRESS=$(sed -n 's/^API_ADDRESS=//p' "$STATE/env")
  API_PORT=$(sed -n 's/^API_PORT=//p' "$STATE/env")
  new_cert "$2" "$3" "extendedKeyUsage=clientAuth"
  write_kubeconfig "$STATE/$2.kubeconfig" "$2"
  echo "$STATE/$2.kubeconfig"
}

cmd_down() {
  local dir
  dir=$(state_arg "${1:-}")
  stop_dir "$dir"
  [ "$(cat "$CACHE_ROOT/current" 2>/dev/null)" = "$dir" ] && rm -f "$CACHE_ROOT/current"
  log "stopped and removed $dir"
}

case ${1:-} in
build) shift; cmd_build "$@" && echo "$BIN_DIR" ;;
up) shift; cmd_up "$@" ;;
down) shift; cmd_down "$@" ;;
restart-apiserver) shift; cmd_restart_apiserver "$@" ;;
restart-etcd) shift; cmd_restart_etcd "$@" ;;
restart-controller-manager) shift; cmd_restart_controller_manager "$@" ;;
status) shift; cmd_status "$@" ;;
client-kubeconfig) shift; cmd_client_kubeconfig "$@" ;;
bin-dir) echo "$BIN_DIR" ;;
bin-path) bin_path "${2:?usage: bin-path NAME}" ;;
version) echo "$K8S_VERSION" ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
