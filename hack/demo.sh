#!/usr/bin/env bash
# The demo (README's main command): the controllers and the operator against a real local
# control plane.
#
#   bash hack/demo.sh                     run, show, then keep running until Ctrl-C
#   bash hack/demo.sh --non-interactive   run the same checks, then stop and exit 0 (CI)
#   SKIP_CARGO_BUILD=1 bash hack/demo.sh  use the binaries already built (in $CARGO_TARGET_DIR/debug)
#
# On a fresh machine it builds/installs what it needs: the control-plane binaries
# (hack/control-plane.sh build, cached under ~/.cache), QEMU for the VirtualMachine
# controller (hack/install-qemu.sh), and the controller and operator binaries (cargo build).
#
# What it shows:
#   1. etcd + kube-apiserver + kube-controller-manager + scheduler + kwok fake nodes come up;
#   2. the CRDs generated from crates/controllers/apis are installed;
#   3. sample-controller starts; the example Foo gets its Deployment, which reaches
#      AVAILABLE = replicas (kwok's nodes run the Pods);
#   4. the Foo is scaled to 3 and the Deployment follows;
#   5. vm-controller starts with the real QEMU driver, its admission webhooks and the
#      CRD's conversion webhook (v1alpha1 <-> v1beta1: `kubectl get vm` reads v1beta1); the
#      example VirtualMachine goes Active with a real qemu process and usage in its
#      status; a resize is refused by the webhook with its message; then the VM is
#      deleted cleanly (finalizer: the qemu process and its disk are gone before the
#      object is);
#   6. myweb-operator (built with crates/runtime/builder) starts; the example MyWeb gets its
#      ConfigMap (the page), nginx Deployment and NodePort Service, and turns Ready;
#   7. the MyWeb's page is changed and the ConfigMap follows (the Deployment rolls);
#   8. on a REAL node (hack/node.sh: containerd, kubelet, kube-proxy; needs root, so only
#      when run as root; DEMO_REAL_NODE=0 skips it): the controllers' image is built here
#      (hack/image.sh, no registry), loaded into the node, myweb-operator deployed as a user
#      deploys it (kubectl apply -k deploy/myweb-operator), and a MyWeb's nginx Pod serves
#      its page: `curl http://127.0.0.1:<nodePort>/` shows it.
set -euo pipefail
cd "$(dirname "$0")/.."

interactive=1
case "${1:-}" in
  --non-interactive) interactive=0 ;;
  "") ;;
  *) echo "usage: $0 [--non-interactive]" >&2; exit 2 ;;
esac

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
fail() {
  echo "demo: FAILED: $*" >&2
  # The controllers' logs go with the state dir on exit: keep their ends in this log.
  for log in "${state:-/nonexistent}"/*.log; do
    [ -f "$log" ] || continue
    echo "--- $(basename "$log") (last 30 lines)" >&2
    tail -n 30 "$log" >&2
  done
  if [ -n "${real_node_dir:-}" ]; then real_node_dump >&2; fi
  exit 1
}
# real_node_dump: what a failure on the real node needs to be understood afterwards (CI
# keeps only this log): the Pods, the Events, the operator's logs, the kubelet's and
# containerd's last lines.
real_node_dump() {
  set +e
  local -x KUBECONFIG=$real_node_dir/cp/kubeconfig
  echo "demo: the real node at the failure:"
  kubectl get nodes -o wide
  kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}: taints {.spec.taints}{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}'
  kubectl get pods -A -o wide
  kubectl get events -A --sort-by=.lastTimestamp | tail -30
  kubectl -n kube-controllers describe pods | tail -40
  kubectl -n kube-controllers logs deploy/myweb-operator --previous --tail=30
  kubectl -n kube-controllers logs deploy/myweb-operator --tail=40
  for log in kubelet containerd; do
    echo "--- $real_node_dir/logs/$log.log (last 25 lines)"
    tail -n 25 "$real_node_dir/logs/$log.log"
  done
}

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || fail "cargo not found: install Rust with rustup (https://rustup.rs)"

state=$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-demo.XXXXXX")
pids=()
cleanup() {
  set +e
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  if [ -d "$state/cp" ]; then bash hack/control-plane.sh down "$state/cp" >/dev/null 2>&1; fi
  if [ -n "${real_node_dir:-}" ] && [ -d "$real_node_dir" ]; then bash hack/node.sh down "$real_node_dir" >/dev/null 2>&1; fi
  # Whatever the vm-controller left (it should be nothing) goes with the state dir.
  pkill -f "qemu-system.*$state/vms" 2>/dev/null
  rm -rf "$state"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_until DESCRIPTION TIMEOUT_SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_until() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${timeout}s waiting for: $what"
    sleep 1
  done
  echo "ok: $what"
}
jsonpath_is() { # jsonpath_is EXPECTED kubectl-get-args... -o jsonpath=...
  local expected=$1; shift
  [ "$(kubectl get "$@")" = "$expected" ]
}

# real_node_demo: MyWeb in-cluster on a real node, its page over the NodePort.
real_node_demo() {
  say "A real node: the image built without a registry, myweb-operator in a Pod, nginx serving the page"
  IMAGE_BIN_DIR=$bin bash hack/image.sh controllers >"$state/controllers-archive"
  bash hack/image.sh nginx >"$state/nginx-archive"
  local nginx_image
  nginx_image=$(tar -xOf "$(cat "$state/nginx-archive")" index.json |
    jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')
  mkdir -p "$state/node"
  bash hack/node.sh up --dir "$state/node" >/dev/null
  real_node_dir=$state/node
  bash hack/node.sh load --dir "$state/node" "$(cat "$state/controllers-archive")" "$(cat "$state/nginx-archive")"
  local -x KUBECONFIG=$state/node/cp/kubeconfig
  kubectl get nodes -o wide
  kubectl apply -f deploy/crds/operator.k8s-summit.org_mywebs.yaml >/dev/null
  # `kubectl wait` fails at once, not waiting, on a CRD whose status has no conditions yet
  # (one applied a moment ago: ".status.conditions accessor error: <nil>", seen in CI): retry.
  for _ in $(seq 30); do kubectl wait --for condition=established --timeout=5s crd/mywebs.operator.k8s-summit.org >/dev/null 2>&1 && break; sleep 1; done
  kubectl wait --for condition=established --timeout=60s crd/mywebs.operator.k8s-summit.org >/dev/null
  # deploy/myweb-operator as it is, without its admission webhook (its certificate comes
  # from cert-manager; hack/e2e-real-node.sh shows the webhook too).
  kubectl apply -f deploy/myweb-operator/namespace.yaml
  # The Deployment mounts the webhook's Secret; the control plane's webhook certificate
  # fills it (no webhook is registered, so nothing calls it). Made before the Deployment:
  # a Pod whose Secret is missing waits on the kubelet's mount backoff.
  kubectl -n kube-controllers create secret generic myweb-operator-webhook-server-cert \
    --from-file=tls.crt="$WEBHOOK_CERT_DIR/tls.crt" --from-file=tls.key="$WEBHOOK_CERT_DIR/tls.key" >/dev/null
  kubectl apply -f deploy/myweb-operator/rbac.yaml -f deploy/myweb-operator/deployment.yaml
  wait_until "myweb-operator Available on the real node" 180 \
    kubectl -n kube-controllers rollout status deploy/myweb-operator --timeout=2s
  kubectl -n kube-controllers get pods -o wide
  sed -e "s|image: nginx:1.27|image: ${nginx_image#docker.io/library/}|" deploy/myweb-operator/myweb.yaml | kubectl apply -f -
  wait_until "MyWeb myweb-sample's nginx Pod Available on the real node" 180 \
    kubectl rollout status deploy/myweb-sample --timeout=2s
  wait_until "the page on http://127.0.0.1:30080/" 60 curl -fsS --max-time 3 http://127.0.0.1:30080/
  say "curl http://127.0.0.1:30080/ (MyWeb's page, served by nginx in a Pod on the real node)"
  curl -fsS --max-time 3 http://127.0.0.1:30080/ | tee "$state/page.html"
  grep -q 'Hello from MyWeb!' "$state/page.html" || fail "the page over the NodePort is not MyWeb's"
}

say "Building what the demo needs"
if ! command -v curl >/dev/null 2>&1; then # the /readyz and /metrics checks below
  apt-get update -qq && apt-get install -y -qq --no-install-recommends curl >/dev/null
fi
bash hack/control-plane.sh build
bash hack/install-qemu.sh
# SKIP_CARGO_BUILD=1 (hack/test.sh): use the binaries as its one build left them; building
# these three packages alone resolves other features and rebuilds most dependencies.
if [ "${SKIP_CARGO_BUILD:-0}" != 1 ]; then
  cargo build --locked -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin
fi
bin=${CARGO_TARGET_DIR:-target}/debug
for b in sample-controller vm-controller myweb-operator; do
  [ -x "$bin/$b" ] || fail "$bin/$b missing (SKIP_CARGO_BUILD=1 without a build?)"
done

say "Starting the local control plane (state in $state/cp)"
bash hack/control-plane.sh up --dir "$state/cp"
# shellcheck disable=SC1091
source "$state/cp/env"
# The controllers' own servers (metrics, health, the vm-controller's webhooks) on ports
# drawn below the ephemeral range, as the control plane's are: fixed ports collide with
# whatever a soak or an e2e test running beside the demo (CI runs them side by side)
# drew from that range.
source hack/lib/host.sh
read -r sc_metrics sc_health vm_metrics vm_health vm_webhook mw_metrics mw_health <<<"$(free_ports 7)"
export KUBECONFIG
export PATH="$(dirname "$KUBECTL"):$PATH"
kubectl get nodes

say "Installing the CRDs generated from crates/controllers/apis (deploy/crds)"
kubectl apply --server-side -f deploy/crds/
# `kubectl wait` fails at once, not waiting, on a CRD whose status has no conditions yet
# (one applied a moment ago: ".status.conditions accessor error: <nil>", seen in CI): retry.
for _ in $(seq 30); do kubectl wait --for condition=established --timeout=5s crd --all >/dev/null 2>&1 && break; sleep 1; done
kubectl wait --for condition=established --timeout=60s crd --all

say "Starting sample-controller (log: $state/sample-controller.log)"
"$bin/sample-controller" --kubeconfig "$KUBECONFIG" --leader-elect \
  --metrics-secure=false --metrics-bind-address 127.0.0.1:$sc_metrics --health-probe-bind-address 127.0.0.1:$sc_health \
  >"$state/sample-controller.log" 2>&1 &
pids+=($!)

say "Applying the example Foo (deploy/examples/foo.yaml)"
kubectl apply -f deploy/examples/foo.yaml
wait_until "sample-controller ready (/readyz)" 60 curl -sf http://127.0.0.1:$sc_health/readyz
wait_until "Deployment example-foo owned by the Foo" 60 \
  jsonpath_is Foo deployment example-foo -o 'jsonpath={.metadata.ownerReferences[0].kind}'
wait_until "Foo example-foo AVAILABLE = 1" 120 \
  jsonpath_is 1 foo example-foo -o 'jsonpath={.status.availableReplicas}'
kubectl get foo,deploy

say "Scaling the Foo to 3 replicas"
kubectl patch foo example-foo --type merge -p '{"spec":{"replicas":3}}'
wait_until "Deployment example-foo scaled to 3" 60 \
  jsonpath_is 3 deployment example-foo -o 'jsonpath={.spec.replicas}'
wait_until "Foo example-foo AVAILABLE = 3" 120 \
  jsonpath_is 3 foo example-foo -o 'jsonpath={.status.availableReplicas}'
kubectl get foo,deploy
kubectl get events --field-selector involvedObject.kind=Foo

say "sample-controller's /metrics (excerpt)"
curl -s http://127.0.0.1:$sc_metrics/metrics | grep -E '^(workqueue_adds_total|controller_runtime_reconcile_total|leader_election_master_status)' || true

say "Starting vm-controller with the QEMU driver (log: $state/vm-controller.log)"
# With its admission webhooks on loopback, serving the certificate control-plane.sh
# made for 127.0.0.1 (signed by the cluster CA in $WEBHOOK_CA).
"$bin/vm-controller" --kubeconfig "$KUBECONFIG" --vm-driver qemu --state-dir "$state/vms" \
  --usage-period 5s --leader-elect \
  --metrics-secure=false --metrics-bind-address 127.0.0.1:$vm_metrics --health-probe-bind-address 127.0.0.1:$vm_health \
  --webhook-bind-address 127.0.0.1:$vm_webhook --webhook-cert-dir "$WEBHOOK_CERT_DIR" \
  >"$state/vm-controller.log" 2>&1 &
pids+=($!)

wait_until "vm-controller ready (/readyz)" 60 curl -sf http://127.0.0.1:$vm_health/readyz
# The CRD serves v1alpha1 (stored) and v1beta1, and `kubectl get vm` asks for v1beta1: the
# API server converts through vm-controller's /convert. deploy/crds names the in-cluster
# Service (cert-manager injects its CA); here it is a url and the cluster CA, as envtest does.
say "Pointing the VirtualMachine CRD's conversion webhook at vm-controller (url + caBundle)"
conversion_client="{\"url\":\"https://127.0.0.1:$vm_webhook/convert\",\"caBundle\":\"$(base64 -w0 "$WEBHOOK_CA")\"}"
kubectl patch crd virtualmachines.cloudnative.tw --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":$conversion_client}]"
say "Applying the example VirtualMachine (deploy/vm-controller/example-vm.yaml)"
kubectl apply -f deploy/vm-controller/example-vm.yaml
vm=$(kubectl get -f deploy/vm-controller/example-vm.yaml -o 'jsonpath={.metadata.name}')
wait_until "VirtualMachine $vm Active" 120 \
  jsonpath_is Active vm "$vm" -o 'jsonpath={.status.phase}'
pgrep -af qemu-system | grep -F "$state/vms" || fail "no qemu process for $vm"
wait_until "VirtualMachine $vm reports memory usage" 60 \
  bash -c "[ -n \"\$(kubectl get vm $vm -o 'jsonpath={.status.server.usage.memory}')\" ]"
kubectl get vm -o wide

say "Registering vm-controller's admission webhooks (url + caBundle, as envtest does)"
ca_bundle=$(base64 -w0 "$WEBHOOK_CA")
webhook_config() { # webhook_config KIND WEBHOOK-NAME PATH OPERATIONS
  cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: $1
metadata:
  name: demo-vm-controller
webhooks:
  - name: $2
    clientConfig:
      url: https://127.0.0.1:$vm_webhook$3
      caBundle: $ca_bundle
    rules:
      - apiGroups: ["cloudnative.tw"]
        apiVersions: ["v1alpha1"]
        resources: ["virtualmachines"]
        operations: $4
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: ["v1"]
    timeoutSeconds: 5
EOF
}
{
  webhook_config MutatingWebhookConfiguration mvirtualmachine.cloudnative.tw \
    /mutate-cloudnative-tw-v1alpha1-virtualmachine '["CREATE"]'
  echo ---
  webhook_config ValidatingWebhookConfiguration vvirtualmachine.cloudnative.tw \
    /validate-cloudnative-tw-v1alpha1-virtualmachine '["CREATE", "UPDATE"]'
} | kubectl apply -f -
# A v1alpha1 patch (`kubectl patch vm` would send it as v1beta1, where spec.resource is
# spec.compute).
resize='{"spec":{"resource":{"cpu":"2"}}}'
vm_v1alpha1=virtualmachines.v1alpha1.cloudnative.tw
wait_until "the API server calls the webhook (a dry-run resize is refused)" 60 \
  bash -c "! kubectl patch $vm_v1alpha1 $vm --type merge -p '$resize' --dry-run=server >/dev/null 2>&1"
say "Resizing the VirtualMachine: refused at the door, with the webhook's message"
if refused=$(kubectl patch "$vm_v1alpha1" "$vm" --type merge -p "$resize" 2>&1); then
  fail "the resize was admitted: $refused"
fi
echo "$refused"
grep -q "denied the request: spec.resource: Forbidden: cannot be changed" <<<"$refused" ||
  fail "the refusal does not carry the webhook's message: $refused"

say "Deleting the VirtualMachine: the finalizer removes the qemu process and disk first"
kubectl delete vm "$vm" --wait=true --timeout=60s
if pgrep -f "qemu-system.*$state/vms" >/dev/null; then fail "a qemu process outlived its VirtualMachine"; fi
[ -z "$(ls -A "$state/vms" 2>/dev/null)" ] || fail "VM state left behind: $(ls "$state/vms")"
echo "ok: VirtualMachine $vm, its qemu process and its disk are gone"

say "Starting myweb-operator (log: $state/myweb-operator.log)"
"$bin/myweb-operator" --kubeconfig "$KUBECONFIG" --leader-elect \
  --metrics-secure=false --metrics-bind-address 127.0.0.1:$mw_metrics --health-probe-bind-address 127.0.0.1:$mw_health \
  >"$state/myweb-operator.log" 2>&1 &
pids+=($!)

wait_until "myweb-operator ready (/readyz)" 60 curl -sf http://127.0.0.1:$mw_health/readyz
say "Applying the example MyWeb (deploy/myweb-operator/myweb.yaml)"
kubectl apply -f deploy/myweb-operator/myweb.yaml
web=$(kubectl get -f deploy/myweb-operator/myweb.yaml -o 'jsonpath={.metadata.name}')
for kind in configmap deployment service; do
  wait_until "$kind $web owned by the MyWeb" 60 \
    jsonpath_is MyWeb "$kind" "$web" -o 'jsonpath={.metadata.ownerReferences[0].kind}'
done
wait_until "Service $web on node port 30080" 30 \
  jsonpath_is 30080 service "$web" -o 'jsonpath={.spec.ports[0].nodePort}'
wait_until "MyWeb $web Ready" 120 \
  jsonpath_is True web "$web" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
kubectl get web,cm,deploy,svc

say "Changing the page: the ConfigMap follows and the Deployment rolls its pods"
page='<h1>Hello again from MyWeb!</h1>'
kubectl patch web "$web" --type merge -p "{\"spec\":{\"pageContentHtml\":\"$page\"}}"
wait_until "ConfigMap $web serves the new page" 60 \
  jsonpath_is "$page" configmap "$web" -o 'jsonpath={.data.index\.html}'
# The page's SHA-256 in the pod template is what rolls the pods.
checksum=$(printf '%s' "$page" | sha256sum | cut -d' ' -f1)
wait_until "Deployment $web rolled to the new page (pod template checksum)" 60 \
  jsonpath_is "$checksum" deployment "$web" \
  -o 'jsonpath={.spec.template.metadata.annotations.operator\.k8s-summit\.org/page-sha256}'
generation=$(kubectl get web "$web" -o 'jsonpath={.metadata.generation}')
wait_until "MyWeb $web Ready for generation $generation" 120 \
  jsonpath_is "True $generation" web "$web" \
  -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.observedGeneration}'
kubectl get web,cm,deploy,svc
kubectl get events --field-selector involvedObject.kind=MyWeb

say "myweb-operator's /metrics (excerpt)"
curl -s http://127.0.0.1:$mw_metrics/metrics | grep -E '^(controller_runtime_reconcile_total|leader_election_master_status)' || true

# 8. The tutorial's last step for real: a browser (here curl) on the node's port.
if [ "${DEMO_REAL_NODE:-1}" != 0 ] && [ "$(id -u)" = 0 ]; then
  real_node_demo
elif [ "${DEMO_REAL_NODE:-1}" != 0 ]; then
  say "Skipping the real-node step: it needs root (network namespaces, mounts, cgroups)"
fi

say "Demo checks passed"
if [ "$interactive" = 0 ]; then
  exit 0
fi
cat <<EOF

The controllers and the operator keep running against the local control plane. In another
terminal:

  export KUBECONFIG=$KUBECONFIG PATH=$(dirname "$KUBECTL"):\$PATH
  kubectl get foo,deploy
  kubectl patch foo example-foo --type merge -p '{"spec":{"replicas":5}}'
  kubectl apply -f deploy/vm-controller/example-vm.yaml && kubectl get vm -w
  kubectl get web,cm,deploy,svc
  kubectl patch web myweb-sample --type merge -p '{"spec":{"pageContentHtml":"<h1>Hi</h1>"}}'
  kubectl scale deploy myweb-sample --replicas 3   # the operator puts it back to 1
  tail -f $state/*.log

Press Ctrl-C to stop everything (the control plane and its state are removed).
EOF
wait
