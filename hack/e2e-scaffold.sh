#!/usr/bin/env bash
# The scaffold, end to end: what a developer does with `kcr`, run for real.
#
#   hack/e2e-scaffold.sh [build|test|all] [DIR]     (default: all, in a temp dir)
#
#   build   steps 1-3 into DIR/guestbook, its binary copied to DIR/bin/guestbook
#           (hack/e2e-real-node.sh runs it on the real node: SCAFFOLD_PROJECT, SCAFFOLD_BIN)
#   test    steps 4-5 on DIR/guestbook as `build` left it
# KCR: the kcr binary (default: the one build's).
#
#  1. testdata/generate.sh in a temp dir: kcr init, create api (Guestbook), create api
#     --image (Memcached), create webhook (Guestbook), on this checkout's runtime crates
#     (path dependencies, as --runtime-path writes them);
#  2. the project builds, sharing this workspace's cargo target directory and lock file
#     (`kcr init` copies the runtime checkout's Cargo.lock: the same versions, so the
#     dependencies are not built again);
#  3. its `cargo run --bin manifests` writes exactly testdata/project's CRDs and
#     ClusterRole (the golden manifests; UPDATE_GOLDEN=1 rewrites them); then a fourth,
#     cluster-scoped kind (`kcr create api --namespaced false`) is added beside them;
#  3b. a new user's first edits, in a second project (DIR/first-hour, issue 57's "first
#     hour"): a field added to a plain kind's spec and to an --image kind's, a plain
#     kind's example fields replaced, a webhook on each plain kind (the example rules on
#     the first, empty ones on the changed one); then `cargo run -- --help` (the README's
#     `cargo run` picks the manager), every target built, clippy -D warnings, the unit
#     and doc tests;
#  4. its own hack/test.sh passes, as a user runs it: fmt, clippy -D warnings, manifests
#     --check, `kcr envtest`, the unit tests (fake API) and the e2e tests on a real control
#     plane (a Guestbook becomes Ready, a Memcached gets its Deployment, a bad Guestbook
#     is refused by the webhook through kube-apiserver);
#  5. `kubectl apply -k deploy/ --dry-run=server`: kube-apiserver accepts every object of
#     deploy/ as generated (cert-manager's Certificate and Issuer CRDs installed from its
#     Go module first, as hack/e2e-real-node.sh does);
#  6. the Makefile's lifecycle: `make install`; `make run-webhooks` (its certificate and
#     webhook configurations, the built manager for `cargo run --`): kube-apiserver calls
#     the manager on this machine, a bad Guestbook is refused with the validator's
#     message, an empty one comes back defaulted, and once it is stopped its
#     configurations are gone; `make deploy IMG=...` (the Deployment runs IMG) and
#     `make undeploy` (the namespace and the CRDs gone).
# Steps 4 to 6 share one control plane (hack/with-control-plane.sh).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$CACHE_ROOT/cargo-target}
KCR=${KCR:-$CARGO_TARGET_DIR/debug/kcr}
CERT_MANAGER_VERSION=v1.18.2
T0=$SECONDS
log() { printf '[e2e-scaffold %3ds] %s\n' $((SECONDS - T0)) "$*" >&2; }
fail() { printf '[e2e-scaffold] FAIL: %s\n' "$*" >&2; exit 1; }

what=${1:-all}
case $what in build | test | all) ;; *) fail "usage: $0 [build|test|all] [DIR]" ;; esac
[ -x "$KCR" ] || fail "no kcr binary at $KCR (cargo build -p kcr, or set KCR)"
if [ -n "${2:-}" ]; then
  work=$2
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/e2e-scaffold.XXXXXX")
  [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
project=$work/guestbook

build() {

# --- 1. the scaffold ----------------------------------------------------------------------
rm -rf "$project"
bash testdata/generate.sh "$KCR" "$project" "$REPO_ROOT" 2>"$work/kcr.log" ||
  { cat "$work/kcr.log" >&2; fail "testdata/generate.sh"; }
log "scaffolded $project"

# --- 2., 3. build, and the manifests against the golden ones ----------------------------------
cmp -s Cargo.lock "$project/Cargo.lock" || fail "kcr init did not copy the runtime's Cargo.lock"
(cd "$project" && cargo build --bins && cargo run --quiet --bin manifests) ||
  fail "cargo build, cargo run --bin manifests"
log "built; manifests written"
golden=testdata/project
stale=()
for f in $(cd "$project" && find deploy/crd deploy/rbac/role.yaml -name '*.yaml' ! -name kustomization.yaml | sort); do
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$(dirname "$golden/$f")"
    cp "$project/$f" "$golden/$f"
  elif ! cmp -s "$project/$f" "$golden/$f"; then
    stale+=("$f")
  fi
done
[ ${#stale[@]} = 0 ] || fail "the project's manifests differ from $golden (UPDATE_GOLDEN=1 to accept): ${stale[*]}"
log "manifests equal $golden's"
# A cluster-scoped kind beside the golden ones (its controller, unit and e2e tests are the
# `--namespaced false` variants), so step 4 builds and runs them too.
(cd "$project" && "$KCR" create api --group policy --version v1beta1 --kind ClusterPolicy \
  --namespaced false 2>>"$work/kcr.log" && cargo build --bins && cargo run --quiet --bin manifests) ||
  fail "a cluster-scoped kind: kcr create api --namespaced false, build, manifests"
log "a cluster-scoped kind added (ClusterPolicy)"
first_edits
# The binary as built now, out of the shared target dir (another project named guestbook
# built later would overwrite it there): hack/e2e-real-node.sh's SCAFFOLD_BIN.
install -D -m 755 "$CARGO_TARGET_DIR/debug/guestbook" "$work/bin/guestbook"

}

# Step 3b: what a new user edits first keeps compiling (no control plane needed).
first_edits() {
first=$work/first-hour
rm -rf "$first"
mkdir -p "$first"
(
  cd "$first"
  "$KCR" init --domain my.domain --repo my.domain/first-hour --runtime-path "$REPO_ROOT"
  "$KCR" create api --group webapp --version v1 --kind Blog
  "$KCR" create api --group webapp --version v1 --kind Post
  "$KCR" create api --group cache --version v1alpha1 --kind Memcached --image memcached:1.6-alpine
) 2>>"$work/kcr.log" || fail "first edits: the scaffold"
# A field added to Blog's spec and to Memcached's; Post's example fields replaced.
add_field() { # FILE STRUCT FIELD-LINE
  awk -v s="pub struct $2 {" -v f="$3" '{ print } $0 == s { print "    /// A field the user added."; print "    " f }' \
    "$first/$1" >"$first/$1.new" && mv "$first/$1.new" "$first/$1"
  grep -qF "$3" "$first/$1" || fail "first edits: no $2 in $1"
}
add_field src/api/blog_v1.rs BlogSpec "pub theme: Option<String>,"
add_field src/api/memcached_v1alpha1.rs MemcachedSpec "pub log_level: Option<String>,"
awk '$0 == "pub struct PostSpec {" { print; print "    /// The text of the post."; print "    pub body: String,"; skip = 1; next }
  skip && $0 == "}" { skip = 0 } !skip { print }' "$first/src/api/post_v1.rs" >"$first/post.rs" &&
  mv "$first/post.rs" "$first/src/api/post_v1.rs"
grep -q "max_entries" "$first/src/api/post_v1.rs" && fail "first edits: PostSpec still has the example fields"
(
  cd "$first"
  for kind in Blog Post; do
    "$KCR" create webhook --group webapp --version v1 --kind $kind --defaulting --programmatic-validation
  done
) 2>>"$work/kcr.log" || fail "first edits: kcr create webhook"
grep -q "max_entries" "$first/src/webhook/blog.rs" || fail "first edits: Blog's webhook lacks the example rules"
! grep -v '^ *//' "$first/src/webhook/post.rs" | grep -q "max_entries" ||
  fail "first edits: Post's webhook reads an example field its spec no longer has"
(
  cd "$first"
  cargo run --quiet --bin manifests &&
    cargo run --quiet -- --help >/dev/null &&
    cargo build --all-targets &&
    cargo clippy --all-targets -- -D warnings &&
    cargo test --lib &&
    cargo test --doc
) || fail "first edits: a project with a field added, a spec changed and webhooks on both does not build, lint or pass its unit tests"
log "first edits build, lint and pass their unit tests ($first)"
}

# Step 6's checks: kube-apiserver calls the local manager's webhooks.
local_webhooks_answer() {
  local bad='{"apiVersion": "webapp.my.domain/v1", "kind": "Guestbook", "metadata": {"name": "bad", "namespace": "default"}, "spec": {"maxEntries": 0}}'
  local refused="" defaulted i
  for i in $(seq 60); do
    refused=$(echo "$bad" | kubectl create --dry-run=server -f - 2>&1) && break
    case $refused in *"spec.maxEntries: Invalid value: 0"*) break ;; esac
    sleep 1
  done
  case $refused in
    *"spec.maxEntries: Invalid value: 0: must be between 1 and 1000"*) ;;
    *) echo "the local validator did not refuse a bad Guestbook ($i tries): $refused" >&2; return 1 ;;
  esac
  defaulted=$(echo '{"apiVersion": "webapp.my.domain/v1", "kind": "Guestbook", "metadata": {"name": "empty", "namespace": "default"}, "spec": {}}' |
    kubectl create --dry-run=server -o jsonpath='{.spec.maxEntries} {.spec.title}' -f -)
  [ "$defaulted" = "100 empty" ] || { echo "the local defaulter did not default: $defaulted" >&2; return 1; }
}

# Step 6, inside the control plane's shell: the Makefile's lifecycle on a real API server.
# `make install`, then `make run-webhooks` (hack/run-webhooks.sh; the manager as built) until
# the local webhooks answer, stopped: its webhook configurations must be gone; then `make
# deploy IMG=...` (the manager's Deployment runs IMG) and `make undeploy` (the namespace and
# the CRDs gone). No node runs the image here: the real-node e2e does.
lifecycle() {
  set -euo pipefail
  cd "$PROJECT_DIR"
  kubectl() { "$TESTENV_KUBECTL" "$@"; }
  make install KUBECTL="$TESTENV_KUBECTL" >/dev/null
  kubectl get crd guestbooks.webapp.my.domain memcacheds.cache.my.domain >/dev/null
  MANAGER="$MANAGER_BIN" KUBECTL="$TESTENV_KUBECTL" \
    bash hack/run-webhooks.sh --health-probe-bind-address 0 >"$PROJECT_DIR/local-manager.log" 2>&1 &
  local pid=$! status=0 i
  # The script applies its configurations in the background: until then a bad Guestbook
  # is simply created (the first CI run of this step checked too early).
  for i in $(seq 120); do
    kubectl get mutatingwebhookconfiguration guestbook-mutating-webhook-configuration >/dev/null 2>&1 &&
      kubectl get validatingwebhookconfiguration guestbook-validating-webhook-configuration >/dev/null 2>&1 &&
      break
    kill -0 "$pid" 2>/dev/null || { cat "$PROJECT_DIR/local-manager.log" >&2; return 1; }
    sleep 0.5
  done
  local_webhooks_answer || status=$?
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  if [ "$status" != 0 ]; then
    cat "$PROJECT_DIR/local-manager.log" >&2
    return "$status"
  fi
  local left
  left=$(kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -o name)
  [ -z "$left" ] || { echo "make run-webhooks left its configurations behind: $left" >&2; return 1; }
  echo "[e2e-scaffold] make install; make run-webhooks: a bad Guestbook refused, an empty one defaulted, its configurations removed on stop" >&2
  make deploy IMG=example.com/guestbook:e2e KUBECTL="$TESTENV_KUBECTL" >/dev/null
  local image
  image=$(kubectl -n guestbook-system get deployment guestbook-controller-manager \
    -o jsonpath='{.spec.template.spec.containers[0].image}')
  [ "$image" = example.com/guestbook:e2e ] || { echo "make deploy: the manager runs $image" >&2; return 1; }
  make undeploy KUBECTL="$TESTENV_KUBECTL" >/dev/null
  if kubectl get namespace guestbook-system crd/guestbooks.webapp.my.domain >/dev/null 2>&1; then
    echo "make undeploy left the namespace or the CRDs" >&2
    return 1
  fi
  echo "[e2e-scaffold] make deploy IMG=example.com/guestbook:e2e; make undeploy: the namespace and the CRDs gone" >&2
}

test_project() {
[ -f "$project/deploy/rbac/role.yaml" ] || fail "$project is not built: run $0 build first"
# --- 4., 5. its own test script; deploy/ against the real API server --------------------------
CM_DIR=$(cd hack/tools/node && go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | jq -r .Dir)
export -f lifecycle local_webhooks_answer
PROJECT_DIR=$project KCR=$KCR CM_DIR=$CM_DIR MANAGER_BIN=$CARGO_TARGET_DIR/debug/guestbook \
  bash hack/with-control-plane.sh bash -c '
  set -euo pipefail
  cd "$PROJECT_DIR"
  echo "[e2e-scaffold] the project'"'"'s own hack/test.sh" >&2
  KCR=$KCR bash hack/test.sh
  export KUBECONFIG=$TESTENV_KUBECONFIG
  k() { "$TESTENV_KUBECTL" "$@"; }
  for crd in certificates issuers; do sed "/{{/d" "$CM_DIR/deploy/crds/crd-$crd.yaml"; echo ---; done |
    k apply -f - >/dev/null
  k wait --for=condition=Established crd/certificates.cert-manager.io crd/issuers.cert-manager.io --timeout=60s >/dev/null
  # A dry run creates nothing, so the objects in the new namespace need it to exist.
  k create namespace guestbook-system >/dev/null
  echo "[e2e-scaffold] kubectl apply -k deploy/ --dry-run=server" >&2
  k apply -k deploy/ --dry-run=server
  echo "[e2e-scaffold] the Makefile'"'"'s lifecycle: install, run-webhooks, deploy, undeploy" >&2
  lifecycle
' || fail "the generated project's tests, its deploy/ dry run or its Makefile's lifecycle"
log "passed: the project's hack/test.sh, kubectl apply -k deploy/ --dry-run=server, make install, run-webhooks, deploy, undeploy"
}

case $what in
build) build ;;
test) test_project ;;
all) build && test_project ;;
esac
