#!/usr/bin/env bash
# A REAL single-node cluster on this machine, the way kind builds one: the control plane
# of hack/control-plane.sh plus a node that runs Pods for real (containerd 2.x + runc,
# the kubelet, kube-proxy, a bridge CNI network). kwok's fake Nodes are for the scale
# tests; this node is for the in-cluster path (images, probes, Service routing, NodePorts).
#
#   hack/node.sh up [--dir D]        start (as root); prints KUBECONFIG and an export line
#   hack/node.sh load ARCHIVE... [--dir D]
#                                    import OCI/docker image archives into the node's
#                                    containerd (what `kind load image-archive` does)
#   hack/node.sh down [DIR]          stop everything and undo every change to the host
#   hack/node.sh check-clean         fail if anything of a node is left on the host
#   hack/node.sh packages            install what a node needs from Debian (apt-get)
#
# Everything stays on this machine. The node's network is one bridge, kcr0, with the
# node's address 10.244.0.1/24 (also the address kube-apiserver binds to, so Pods reach it
# through the `kubernetes` Service). Pods get 10.244.0.10-.250 on it; Services 10.0.0.0/24
# exist only in kube-proxy's rules. No NAT to the outside (the bridge plugin's ipMasq is
# off), no route is added, IP forwarding stays as it was (off here): a Pod can talk to the
# node and to other Pods, nothing else. NodePorts answer on 127.0.0.1 only
# (kube-proxy's nodePortAddresses), so `curl http://127.0.0.1:<nodePort>/` reaches a Pod.
#
# What it changes on the host, and `down` undoes (check-clean verifies): the bridge and
# the Pods' veths and network namespaces; kube-proxy's and the kubelet's iptables chains
# (KUBE-*); the sysctls the kubelet and kube-proxy set (saved at `up`, restored); the
# mounts under the state dir (container root filesystems, Secret volumes); the cgroups
# the containers got. One node at a time (the bridge's name is fixed): a lock file.
#
# Needs root, Debian's runc, containernetworking-plugins, iptables and conntrack (installed
# with apt-get when missing), and the binaries of `hack/control-plane.sh build --real-node`
# (kubelet and kube-proxy of the pinned release, containerd of hack/tools/node), built
# when missing. The sandbox (pause) image comes from `hack/image.sh pause`. Only the
# newest release (K8S_VERSION=newest) pins a kubelet.
#
# Why the host is cgroup v1 matters: this machine mounts cgroup v1 controllers (hybrid).
# The kubelet refuses v1 since 1.35 unless its configuration says `failCgroupV1: false`
# (KEP-5573), which this one does; containerd 2.x warns and works.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
CP=$REPO_ROOT/hack/control-plane.sh
# shellcheck source=hack/lib/host.sh
source "$REPO_ROOT/hack/lib/host.sh"
BRIDGE=kcr0
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
NODE_NAME=kcr-node
CNI_BIN_DIR=/usr/lib/cni
# The sysctls the kubelet (protectKernelDefaults: false) and kube-proxy write: saved at
# `up`, written back at `down`.
SYSCTLS=(vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys
  kernel/keys/root_maxbytes net/ipv4/conf/all/route_localnet net/ipv4/ip_forward
  net/bridge/bridge-nf-call-iptables net/bridge/bridge-nf-call-ip6tables)

log() { printf '[node] %s\n' "$*" >&2; }
die() { printf '[node] error: %s\n' "$*" >&2; exit 1; }

ensure_packages() {
  local missing=() p
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  [ -x "$CNI_BIN_DIR/bridge" ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || missing+=(iptables)
  command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
  command -v podman >/dev/null 2>&1 || missing+=(podman) # hack/image.sh
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} with apt-get"
  apt_install "${missing[@]}"
  for p in runc iptables conntrack; do command -v "$p" >/dev/null 2>&1 || die "$p missing after apt-get"; done
}

# bin NAME: the cached binary (kubelet, kube-proxy, kubectl, containerd, ctr, ...).
bin() { bash "$CP" bin-path "$1"; }

# start NAME CMD...: a component in its own session, logging to $STATE/logs/NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name.pid"
}

wait_until() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      log "timed out waiting for $what; last lines of $STATE/logs:"
      tail -n 15 "$STATE"/logs/*.log >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

ctr_() { "$CONTAINERD_BIN/ctr" --address "$STATE/containerd.sock" --namespace k8s.io "$@"; }

write_configs() {
  local ca=$STATE/cp/pki/ca.crt
  mkdir -p "$STATE/cni/net.d" "$STATE/cni/ipam" "$STATE/kubelet" "$STATE/pod-logs"
  cat >"$STATE/containerd.toml" <<EOF
version = 3
root = '$STATE/containerd/root'
state = '$STATE/containerd/state'
[grpc]
  address = '$STATE/containerd.sock'
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
[plugins.'io.containerd.cri.v1.images'.registry]
  # Every registry is 127.0.0.1:9 (nothing listens): a pull fails here, at once, and
  # never leaves the machine. Images are imported (\`hack/node.sh load\`).
  config_path = '$STATE/registry-hosts'
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '$PAUSE_IMAGE'
[plugins.'io.containerd.cri.v1.runtime']
  # Pod network namespaces under the state dir, so \`down\` finds every one.
  netns_mounts_under_state_dir = true
  # This machine refuses a NEGATIVE oom_score_adj even to root, and the kubelet gives
  # the pause container -998: runc then fails with "failed to update
  # /proc/self/oom_score_adj: Permission denied". Restricted, a container's score is
  # never below containerd's own (0 here), as in rootless setups.
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  # runc's container state under the state dir too (default /run/containerd/runc).
  Root = '$STATE/runc'
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['$CNI_BIN_DIR']
  conf_dir = '$STATE/cni/net.d'
EOF
  mkdir -p "$STATE/registry-hosts/_default"
  printf 'server = "http://127.0.0.1:9"\n' >"$STATE/registry-hosts/_default/hosts.toml"
  # The bridge plugin on our bridge; host-local addresses; no masquerade (nothing leaves).
  # Not `isGateway`: the plugin would give the bridge its address (it has it: `up` made
  # it) and switch IP forwarding on for good (its cmdAdd calls enableIPForward), which
  # nothing here needs: host <-> Pod and Pod <-> Pod on the one bridge are not forwarded,
  # Service traffic is DNAT to local addresses. The Pods' default route still points at
  # $NODE_IP (host-local's gateway), so they reach the node and nothing else.
  cat >"$STATE/cni/net.d/10-kcr.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "kcr",
  "plugins": [
    {
      "type": "bridge", "bridge": "$BRIDGE", "isGateway": false, "ipMasq": false, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$STATE/cni/ipam",
        "ranges": [[{ "subnet": "$POD_CIDR", "rangeStart": "10.244.0.10", "rangeEnd": "10.244.0.250", "gateway": "$NODE_IP" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "loopback" }
  ]
}
EOF
  read -r KUBELET_PORT KUBELET_HEALTHZ PROXY_HEALTHZ PROXY_METRICS < <(free_ports 4)
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This host mounts cgroup v1 (see the header of hack/node.sh).
failCgroupV1: false
cgroupDriver: cgroupfs
# No QoS cgroup tree and no node-allocatable enforcement: the node shares the machine
# with the tests; containers still get their own cgroups and memory limits (runc).
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$STATE/containerd.sock
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $ca}
authorization: {mode: AlwaysAllow}
# No cluster DNS and no host resolv.conf: nothing here resolves names off the machine.
resolvConf: ""
podCIDR: $POD_CIDR
podLogsDir: $STATE/pod-logs
failSwapOn: false
maxPods: 40
# The images are imported, never pulled: never garbage-collect them, and evict nothing
# because the shared disk is fuller than a dedicated node's would be. The disk floor is
# absolute: on a large shared disk even 1 % (2.5 GB of 252) was more than was free at
# times, and the kubelet's DiskPressure taint left every Pod Pending ("untolerated
# taint") in two CI runs; `up` refuses to start below MIN_FREE_MB instead.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "256Mi", imagefs.available: "256Mi", nodefs.inodesFree: "1%"}
# Short enough that a rotated projected token or an updated Secret shows up in a test.
syncFrequency: 10s
EOF
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/cp/kube-proxy.kubeconfig}
mode: iptables
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ
metricsBindAddress: 127.0.0.1:$PROXY_METRICS
# NodePorts on loopback only: reachable from this machine, from nothing else.
nodePortAddresses: ["127.0.0.0/8"]
iptables: {localhostNodePorts: true}
# Leave the host's conntrack table size and timeouts alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

save_host_state() {
  local s
  : >"$STATE/host-sysctls"
  for s in "${SYSCTLS[@]}"; do
    [ -r "/proc/sys/$s" ] && printf '%s %s\n' "$s" "$(cat "/proc/sys/$s")" >>"$STATE/host-sysctls"
  done
  nft list tables 2>/dev/null | LC_ALL=C sort >"$STATE/host-nft-tables" || true
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null | LC_ALL=C sort >"$STATE/host-cgroups" || true
  # The shims' sockets and fifos live under /run/containerd whatever the config says.
  [ -e /run/containerd ] || touch "$STATE/remove-run-containerd"
}

# parse_args ARG...: --dir D into DIR, the rest into ARGS.
parse_args() {
  DIR="" ARGS=()
  while [ $# -gt 0 ]; do
    case $1 in
    --dir) DIR=$2; shift ;;
    *) ARGS+=("$1") ;;
    esac
    shift
  done
}

cmd_up() {
  parse_args "$@"
  [ ${#ARGS[@]} -eq 0 ] || die "unknown arguments for up: ${ARGS[*]}"
  local dir=$DIR
  [ "$(id -u)" = 0 ] || die "a real node needs root (network namespaces, mounts, cgroups)"
  ensure_packages
  bash "$CP" build --real-node >/dev/null
  CONTAINERD_BIN=$(containerd_bin)
  local pause_archive
  pause_archive=$(bash "$REPO_ROOT/hack/image.sh" pause)
  PAUSE_IMAGE=$(tar -xOf "$pause_archive" index.json | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')

  mkdir -p "$CACHE_ROOT"
  exec 8>"$CACHE_ROOT/real-node.lock"
  flock -n 8 || die "another real node is up (lock $CACHE_ROOT/real-node.lock; see $(cat "$CACHE_ROOT/real-node" 2>/dev/null))"
  ip link show "$BRIDGE" >/dev/null 2>&1 && die "bridge $BRIDGE exists: a node was not torn down (hack/node.sh down)"

  STATE=${dir:-$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-rs-node.XXXXXX")}
  mkdir -p "$STATE"/{logs,pids}
  # The kubelet taints its node with DiskPressure below its eviction floor (256Mi, in
  # kubelet.yaml): say so now rather than leave every Pod Pending later.
  local free_mb
  free_mb=$(df -Pm "$STATE" | awk 'NR == 2 { print $4 }')
  if [ "${free_mb:-0}" -lt "${MIN_FREE_MB:-1024}" ]; then
    rm -rf "$STATE"
    die "only ${free_mb} MB free on the disk of $STATE (need ${MIN_FREE_MB:-1024}): the kubelet would taint its node with DiskPressure and no Pod would run; free some space (old cargo target directories?)"
  fi
  touch "$STATE/.kube-controllers-rs-node"
  echo "$STATE" >"$CACHE_ROOT/real-node"
  trap '[ -f "$STATE/ready" ] || { log "startup failed, tearing down"; cmd_down "$STATE"; }' EXIT
  save_host_state

  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up

  bash "$CP" up --dir "$STATE/cp" --nodes 0 --advertise-address "$NODE_IP" >/dev/null
  bash "$CP" client-kubeconfig "$STATE/cp" kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" >/dev/null
  bash "$CP" client-kubeconfig "$STATE/cp" kube-proxy "/CN=system:kube-proxy" >/dev/null
  write_configs

  PATH=$CONTAINERD_BIN:$PATH start containerd "$CONTAINERD_BIN/containerd" --config "$STATE/containerd.toml"
  wait_until 30 "containerd" ctr_ version
  ctr_ images import "$pause_archive" >/dev/null
  start kubelet "$(bin kubelet)" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/cp/kubelet.kubeconfig" \
    --root-dir="$STATE/kubelet" --cert-dir="$STATE/kubelet/pki" --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_IP" --v=1
  start kube-proxy "$(bin kube-proxy)" --config="$STATE/kube-proxy.yaml" --v=1
  local kubectl=("$(bin kubectl)" --kubeconfig="$STATE/cp/kubeconfig")
  wait_until 120 "Node $NODE_NAME Ready" "${kubectl[@]}" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
  wait_until 60 "kube-proxy healthz" curl -fsS "http://127.0.0.1:$PROXY_HEALTHZ/healthz"
  cat >"$STATE/env" <<EOF
KUBECONFIG=$STATE/cp/kubeconfig
KUBECTL=$(bin kubectl)
NODE_NAME=$NODE_NAME
NODE_IP=$NODE_IP
CONTAINERD_ADDRESS=$STATE/containerd.sock
CTR=$CONTAINERD_BIN/ctr
EOF
  touch "$STATE/ready"
  log "real node $NODE_NAME Ready (state: $STATE)"
  echo "KUBECONFIG=$STATE/cp/kubeconfig"
  echo "export KUBECONFIG=$STATE/cp/kubeconfig PATH=$(dirname "$(bin kubectl)"):\$PATH"
  echo "# stop with: $0 down $STATE"
}

containerd_bin() { dirname "$(bin containerd)"; }

state_arg() {
  local d=${1:-}
  [ -n "$d" ] || d=$(cat "$CACHE_ROOT/real-node" 2>/dev/null || true)
  [ -n "$d" ] && [ -f "$d/.kube-controllers-rs-node" ] || die "no real node found (pass its state dir)"
  echo "$d"
}

cmd_load() {
  parse_args "$@"
  local archives=("${ARGS[@]}")
  STATE=$(state_arg "$DIR")
  CONTAINERD_BIN=$(containerd_bin)
  local a
  for a in "${archives[@]}"; do
    ctr_ images import "$a" >/dev/null
    log "loaded $a"
  done
}

# kill_pidfile NAME: TERM the component, KILL it after 10 s.
kill_pidfile() {
  local f=$STATE/pids/$1.pid pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_down() {
  STATE=$(state_arg "${1:-}")
  CONTAINERD_BIN=$(containerd_bin)
  kill_pidfile kubelet
  # Every container's process, then its shim, then containerd.
  if [ -S "$STATE/containerd.sock" ]; then
    local t
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    sleep 1
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$t" >/dev/null 2>&1 || true; done
    for t in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers rm "$t" >/dev/null 2>&1 || true; done
  fi
  kill_pidfile containerd
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $STATE/containerd.sock" 2>/dev/null || true
  kill_pidfile kube-proxy
  # kube-proxy's own cleanup of its rules (every mode), then anything named KUBE-/CNI-
  # the kubelet left (its canary chains).
  [ -f "$STATE/kube-proxy.yaml" ] && "$(bin kube-proxy)" --cleanup --config="$STATE/kube-proxy.yaml" >/dev/null 2>&1 || true
  local table
  for table in filter nat mangle; do
    if iptables-save -t "$table" | grep -q -E 'KUBE-|CNI-'; then
      iptables-save -t "$table" | grep -v -E 'KUBE-|CNI-' | iptables-restore -T "$table" 2>/dev/null ||
        iptables-save -t "$table" | grep -v -E 'KUBE-|CNI-' | iptables-restore --noflush
    fi
  done
  if [ -f "$STATE/host-nft-tables" ]; then
    nft list tables 2>/dev/null | LC_ALL=C sort | comm -13 "$STATE/host-nft-tables" - | while read -r _ fam name; do
      nft delete table "$fam" "$name" 2>/dev/null || true
    done
  fi
  # Mounts under the state dir, deepest first: Pod network namespaces, container root
  # filesystems, shm, Secret and token volumes.
  local m
  grep -F " $STATE/" /proc/self/mountinfo | awk '{ print $5 }' | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  if [ -f "$STATE/host-sysctls" ]; then
    local s v
    while read -r s v; do
      [ "$(cat "/proc/sys/$s" 2>/dev/null)" = "$v" ] || echo "$v" >"/proc/sys/$s" 2>/dev/null || true
    done <"$STATE/host-sysctls"
  fi
  if [ -f "$STATE/host-cgroups" ]; then
    find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null | LC_ALL=C sort |
      comm -13 "$STATE/host-cgroups" - | sort -r | while read -r m; do
      find "$m" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
  fi
  [ -f "$STATE/remove-run-containerd" ] && rm -rf /run/containerd
  [ -f "$STATE/cp/.kube-controllers-rs-control-plane" ] && bash "$CP" down "$STATE/cp" >/dev/null 2>&1 || true
  rm -rf "$STATE"
  [ "$(cat "$CACHE_ROOT/real-node" 2>/dev/null)" = "$STATE" ] && rm -f "$CACHE_ROOT/real-node"
  log "stopped and removed $STATE"
}

# check-clean: nothing of a node is left on the host.
cmd_check_clean() {
  local bad=()
  ip link show "$BRIDGE" >/dev/null 2>&1 && bad+=("bridge $BRIDGE exists")
  local n
  n=$(iptables-save 2>/dev/null | grep -c -E 'KUBE-|CNI-' || true)
  [ "$n" = 0 ] || bad+=("$n iptables lines mention KUBE- or CNI-")
  grep -q 'kube-controllers-rs-node' /proc/self/mountinfo && bad+=("mounts under a node state dir remain")
  pgrep -f 'containerd-shim-runc-v2|kube-proxy --config|kubelet --config' >/dev/null && bad+=("node processes remain")
  ip -br link | grep -q '^veth' && bad+=("veth interfaces remain")
  if [ ${#bad[@]} -gt 0 ]; then
    printf '[node] not clean: %s\n' "${bad[@]}" >&2
    return 1
  fi
  log "clean: no bridge, no KUBE-/CNI- rules, no mounts, no node processes"
}

case ${1:-} in
packages) ensure_packages ;;
up) shift; cmd_up "$@" ;;
load) shift; cmd_load "$@" ;;
down) shift; cmd_down "$@" ;;
check-clean) cmd_check_clean ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
