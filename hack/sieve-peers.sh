#!/usr/bin/env bash
# Sieve's perturbations and Acto's schema-derived workloads on two operators nobody here
# wrote (issue 57, docs/reliability.md "Operators nobody here wrote"): kubebuilder's
# deploy-image Memcached operator (Go, controller-runtime) and kube-rs's
# configmapgen_controller example (Rust, kube-runtime). By hand only, never in CI: it
# builds both from source (Go modules from the module proxy, crates from crates.io).
#
# The sources are not fetched here: give the extracted trees.
#
#   KUBEBUILDER_SRC=<dir>   kubebuilder's testdata project with the deploy-image plugin
#                           (testdata/project-v4-with-plugins of a kubebuilder tag, e.g.
#                           `git archive v4.15.0 testdata/project-v4-with-plugins`), or a
#                           kubebuilder tree that has it
#   KUBE_RS_SRC=<dir>       a kube-rs tree (kube/, examples/configmapgen_controller*),
#                           e.g. `git archive 4.2.0`
#
#   KUBEBUILDER_SRC=... KUBE_RS_SRC=... bash hack/sieve-peers.sh
#   TARGETS=memcached KUBEBUILDER_SRC=... bash hack/sieve-peers.sh      one target
#   FULL=1 ...               also the full derived workloads (`sieve derive --full`)
#   SKIP_CARGO_BUILD=1       use the sieve binary already built (CARGO_TARGET_DIR/debug/sieve)
#   SIEVE_OUT=dir            where everything goes (default target/sieve-peers/<date>)
#   PEERS_CARGO_TARGET_DIR   the kube-rs example's own target dir (default
#                            $SIEVE_OUT/kube-target; never this repository's)
#   MEMCACHED_JOBS=2         plans side by side for the Memcached operator (it watches only
#                            WATCH_NAMESPACE, set to the run's namespace); the kube-rs
#                            example watches every namespace and always runs with 1
#   MEMCACHED_IMAGE          the operand image written into the Deployment (never pulled:
#                            kwok's nodes run no containers)
#   KEEP_CONTROL_PLANE=1     leave the control planes running
#
# TARGETS (default all three), each on a control plane of its own:
#   memcached           kubebuilder's Memcached operator, its CRDs from config/crd/bases
#                       (Busybox and Wordpress too: the same manager runs their controllers)
#   configmapgen        kube-rs's example with the CRD it ships
#                       (examples/configmapgen_controller_crd.yaml: `content` not required)
#   configmapgen-typed  the same binary with the CRD generated from the example's own Rust
#                       type (`ConfigMapGenerator::crd()`: `content` required): the control
#                       that tells the shipped CRD's findings from the controller's
#
# Workloads per target: `short` (`sieve derive`: one change per spec field, delete,
# recreate), `update` (by hand, written here: updates only, no delete, so the differential
# oracle compares the state reached through updates with a fresh object at the final spec;
# a derived workload ends with a recreate at the sample's spec, which leaves that oracle
# nothing to compare), and with FULL=1 `full` (`sieve derive --full`). Each runs as
# `sieve test --command ... --capture <owned kinds> --differential`, with no --ignore rule:
# the defaults only.
#
# The operators' commands (what sieve starts for each plan):
#   memcached     env MEMCACHED_IMAGE=... ENABLE_WEBHOOKS=false WATCH_NAMESPACE={namespace}
#                 <out>/bin/memcached-manager --kubeconfig {kubeconfig}
#                 --metrics-bind-address=0 --health-probe-bind-address=0 --leader-elect=false
#                 (its Memcached validating webhook validates nothing; ENABLE_WEBHOOKS=false
#                 is kubebuilder's switch for running without one)
#   configmapgen  env KUBECONFIG={kubeconfig} <out>/bin/configmapgen_controller
#                 (the example file unchanged, built against the tree's kube crate)
#
# Reports: SIEVE_OUT/<target>-<workload>/report.md (JSON beside it, each plan's replay
# command in it); sieve's output in SIEVE_OUT/<target>-<workload>.{txt,log}. Exit code: 0
# every plan passed (or was not reached), 1 a plan failed or a learning run was not clean
# (findings about the peers, to be judged by reading their code), 3 a run could not be
# carried out.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
TARGETS=${TARGETS:-memcached configmapgen configmapgen-typed}
MEMCACHED_JOBS=${MEMCACHED_JOBS:-2}
MEMCACHED_IMAGE=${MEMCACHED_IMAGE:-memcached:1.6.26-alpine3.19}

log() { printf '[sieve-peers] %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 3
}

bash hack/control-plane.sh build >/dev/null
if [ "${SKIP_CARGO_BUILD:-0}" != 1 ]; then
  cargo build --locked -p sieve
fi
sieve=$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)/sieve
[ -x "$sieve" ] || die "no sieve binary at $sieve"
kube_bin=$(bash hack/control-plane.sh bin-dir)

out=${SIEVE_OUT:-target/sieve-peers/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/bin" "$out/workloads"
out=$(cd "$out" && pwd)

cp_dirs=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  local d
  for d in "${cp_dirs[@]}"; do
    if [ "${KEEP_CONTROL_PLANE:-0}" = 1 ]; then
      log "control plane kept: KUBECONFIG=$d/kubeconfig; stop it with: hack/control-plane.sh down $d"
    else
      bash hack/control-plane.sh down "$d" >/dev/null 2>&1 || true
    fi
  done
}
trap cleanup EXIT

# --- building the peers --------------------------------------------------------------

# kubebuilder's testdata project: copied (its go.sum is not in the tree: -mod=mod records
# what the build resolves from the module proxy), the manager built from cmd/.
memcached_src=
build_memcached() {
  local src=${KUBEBUILDER_SRC:?KUBEBUILDER_SRC: kubebuilder testdata/project-v4-with-plugins}
  [ -f "$src/cmd/main.go" ] || src=$src/testdata/project-v4-with-plugins
  [ -f "$src/internal/controller/memcached_controller.go" ] ||
    die "KUBEBUILDER_SRC has no deploy-image Memcached project (internal/controller/memcached_controller.go)"
  memcached_src=$out/memcached-src
  rm -rf "$memcached_src" && cp -r "$src" "$memcached_src" && chmod -R u+w "$memcached_src"
  log "building kubebuilder's Memcached operator from $src"
  (cd "$memcached_src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o "$out/bin/memcached-manager" ./cmd)
}

# kube-rs's example, unchanged, as a package of its own outside this workspace, against
# the tree's kube crate (by path) with the example crate's dependency versions; beside it
# `crdgen`, which prints the CRD of the example's own spec type (the struct cut out of the
# example file, so there is one definition).
configmapgen_src=
build_configmapgen() {
  [ -n "$configmapgen_src" ] && return
  local src=${KUBE_RS_SRC:?KUBE_RS_SRC: a kube-rs tree}
  src=$(cd "$src" && pwd)
  [ -f "$src/examples/configmapgen_controller.rs" ] ||
    die "KUBE_RS_SRC has no examples/configmapgen_controller.rs"
  configmapgen_src=$out/configmapgen-src
  rm -rf "$configmapgen_src" && mkdir -p "$configmapgen_src"
  cp "$src/examples/configmapgen_controller.rs" "$src/examples/configmapgen_controller_crd.yaml" \
    "$src/examples/configmapgen_controller_object.yaml" "$configmapgen_src/"
  {
    printf '%s\n' 'use kube::{CustomResource, CustomResourceExt};' 'use schemars::JsonSchema;' \
      'use serde::{Deserialize, Serialize};'
    sed -n '/^#\[derive(CustomResource/,/^}/p' "$configmapgen_src/configmapgen_controller.rs"
    printf '%s\n' 'fn main() {' \
      '    println!("{}", serde_json::to_string_pretty(&ConfigMapGenerator::crd()).unwrap());' '}'
  } >"$configmapgen_src/crdgen.rs"
  cat >"$configmapgen_src/Cargo.toml" <<TOML
[package]
name = "configmapgen-controller"
version = "0.0.0"
edition = "2024"
publish = false

[[bin]]
name = "configmapgen_controller"
path = "configmapgen_controller.rs"

[[bin]]
name = "crdgen"
path = "crdgen.rs"

[dependencies]
kube = { path = "$src/kube", default-features = false, features = ["client", "rustls-tls", "ring", "runtime", "derive"] }
k8s-openapi = { version = "0.28.0", default-features = false, features = ["latest"] }
anyhow = "1.0.71"
futures = { version = "0.3.17", default-features = false, features = ["async-await"] }
schemars = "1.0.0"
serde = { version = "1.0.221", features = ["derive"] }
serde_json = "1.0.127"
thiserror = "2.0.15"
tokio = { version = "1.35", features = ["full"] }
tracing = "0.1.36"
tracing-subscriber = "0.3.17"

[workspace]
TOML
  log "building kube-rs's configmapgen_controller from $src"
  local target_dir=${PEERS_CARGO_TARGET_DIR:-$out/kube-target}
  (cd "$configmapgen_src" && CARGO_TARGET_DIR=$target_dir cargo build --bins)
  cp "$target_dir/debug/configmapgen_controller" "$target_dir/debug/crdgen" "$out/bin/"
  "$out/bin/crdgen" >"$configmapgen_src/configmapgen_controller_crd.generated.json"
}

# --- the hand workloads ------------------------------------------------------------------

cat >"$out/workloads/memcached-update.yaml" <<'YAML'
# Updates only (hack/sieve-peers.sh): the differential oracle compares the Deployment
# reached through them with the one a fresh Memcached at the final spec gets.
description: >-
  The sample created, its containerPort changed, then scaled to 2: the Deployment must
  carry the port and the replicas of the last spec.
steps:
  - create:
      apiVersion: example.com.testproject.org/v1alpha1
      kind: Memcached
      name: memcached-sample
      spec:
        containerPort: 11211
        size: 1
  - update:
      name: memcached-sample
      patch:
        containerPort: 11212
  - update:
      name: memcached-sample
      patch:
        size: 2
YAML
cat >"$out/workloads/configmapgen-update.yaml" <<'YAML'
# Updates only (hack/sieve-peers.sh): the differential oracle compares the ConfigMap
# reached through them with the one a fresh ConfigMapGenerator at the final spec gets.
description: >-
  The sample created, its content changed twice: the ConfigMap must hold the last content.
steps:
  - create:
      apiVersion: nullable.se/v1
      kind: ConfigMapGenerator
      name: foo
      spec:
        content: Hey!
  - update:
      name: foo
      patch:
        content: Hey!-2
  - update:
      name: foo
      patch:
        content: ""
YAML
cp "$out/workloads/configmapgen-update.yaml" "$out/workloads/configmapgen-typed-update.yaml"

# --- one target on a control plane of its own ------------------------------------------

# Sets the target's CRDs, sample, command, owned kinds and jobs.
describe() {
  case $1 in
    memcached)
      crds=("$memcached_src"/config/crd/bases/*.yaml)
      crd=$memcached_src/config/crd/bases/example.com.testproject.org_memcacheds.yaml
      sample=$memcached_src/config/samples/example.com_v1alpha1_memcached.yaml
      command="env MEMCACHED_IMAGE=$MEMCACHED_IMAGE ENABLE_WEBHOOKS=false WATCH_NAMESPACE={namespace} $out/bin/memcached-manager --kubeconfig {kubeconfig} --metrics-bind-address=0 --health-probe-bind-address=0 --leader-elect=false"
      capture=Deployment.apps/v1
      jobs=$MEMCACHED_JOBS
      ;;
    configmapgen | configmapgen-typed)
      if [ "$1" = configmapgen ]; then
        crd=$configmapgen_src/configmapgen_controller_crd.yaml
      else
        crd=$configmapgen_src/configmapgen_controller_crd.generated.json
      fi
      crds=("$crd")
      sample=$configmapgen_src/configmapgen_controller_object.yaml
      command="env KUBECONFIG={kubeconfig} RUST_LOG=info $out/bin/configmapgen_controller"
      capture=ConfigMap.v1
      jobs=1
      ;;
    *) die "unknown target $1 (memcached, configmapgen, configmapgen-typed)" ;;
  esac
}

rc=0
run_target() {
  local name=$1 cp_dir workload w status started crd_file
  describe "$name"
  cp_dir=$out/cp-$name
  cp_dirs+=("$cp_dir")
  # No compaction: a stale-state plan lists at a resourceVersion of a minute or two ago.
  KUBE_APISERVER_EXTRA_ARGS="--etcd-compaction-interval=0" \
    bash hack/control-plane.sh up --dir "$cp_dir" >/dev/null
  for crd_file in "${crds[@]}"; do
    "$kube_bin/kubectl" --kubeconfig "$cp_dir/kubeconfig" apply --server-side -f "$crd_file" >/dev/null
  done
  "$kube_bin/kubectl" --kubeconfig "$cp_dir/kubeconfig" wait --for condition=established \
    --timeout=60s crd --all >/dev/null

  local workloads=(short update)
  if [ "${FULL:-0}" = 1 ]; then workloads+=(full); fi
  for w in "${workloads[@]}"; do
    workload=$out/workloads/$name-$w.yaml
    case $w in
      short) "$sieve" derive --crd "$crd" --sample "$sample" --out "$workload" ;;
      full) "$sieve" derive --full --crd "$crd" --sample "$sample" --out "$workload" ;;
    esac
    log "$name on $workload (jobs $jobs; results in $out/$name-$w)"
    started=$SECONDS
    status=0
    "$sieve" test --workload "$workload" --controller "$name" --command "$command" \
      --capture "$capture" --jobs "$jobs" --differential --control-plane "$cp_dir" \
      --out "$out/$name-$w" >"$out/$name-$w.txt" 2>"$out/$name-$w.log" || status=$?
    log "$name-$w: exit $status in $((SECONDS - started)) s; report: $out/$name-$w/report.md"
    grep '^|' "$out/$name-$w.txt" >&2 || tail -5 "$out/$name-$w.log" >&2
    rc=$((status > rc ? status : rc))
  done
  if [ "${KEEP_CONTROL_PLANE:-0}" != 1 ]; then
    bash hack/control-plane.sh down "$cp_dir" >/dev/null 2>&1 || true
    unset 'cp_dirs[-1]'
  fi
}

for target in $TARGETS; do
  case $target in
    memcached) build_memcached ;;
    configmapgen | configmapgen-typed) build_configmapgen ;;
    *) die "unknown target $target (memcached, configmapgen, configmapgen-typed)" ;;
  esac
done
for target in $TARGETS; do
  run_target "$target"
done
log "reports: $out/*/report.md (exit $rc)"
exit $rc
