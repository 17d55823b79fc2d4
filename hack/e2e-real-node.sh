#!/usr/bin/env bash
# The in-cluster path, for real: the controllers' image built here (hack/image.sh), loaded
# into a real node (hack/node.sh), and deploy/ applied as a user applies it.
#
#   hack/e2e-real-node.sh          (as root; IMAGE_BIN_DIR as in hack/image.sh)
#
# What it shows, in order (each step fails the script with what it saw):
#  1. the three kustomizations (`kubectl apply -k deploy/<binary>`) applied unmodified;
#     the webhook certificates made by this script, as deploy/*/certificate.yaml says to do
#     without cert-manager (a Secret, and the caBundle patched in); cert-manager's own
#     Certificate and Issuer CRDs, from its Go module, so the kustomizations' Certificate
#     objects are accepted (nothing acts on them);
#  2. every Deployment Available: the Pods became Ready through their readiness probes;
#     each binary elected a leader (its Lease has a holder that is one of its Pods);
#  3. a Foo, a VirtualMachine (the fake driver, as deploy/ runs it) and a MyWeb reconciled
#     by the in-cluster Pods (Deployment owned by the Foo; the VM Active; the MyWeb's
#     ConfigMap, Deployment and NodePort Service, its nginx Pod Ready);
#  4. admission through the Services: the API server calls each webhook via its Service
#     and a bad Foo, a bad VirtualMachine and a MyWeb on a taken node port are refused;
#  5. MyWeb's page over its NodePort: `curl http://127.0.0.1:<nodePort>/` returns
#     spec.pageContentHtml; a new page rolls the Deployment and curl shows it;
#  6. the leader Pod of myweb-operator deleted: the standby takes the Lease over;
#  7. liveness: sample-controller's process stopped (SIGSTOP from the host: the image has
#     no shell to kill from inside) -> its /healthz stops answering -> the kubelet
#     restarts the container (restartCount goes up) and it becomes Ready again.
#  8. only with E2E_TOKEN_ROTATION=1 (about 11 more minutes, so by hand, not in CI): the
#     kubelet ROTATING a projected token and the controller re-reading it. Automounted
#     tokens (3607 s; kube-apiserver refuses a --service-account-max-token-expiration
#     under 1 hour) first rotate after about 48 minutes, so sample-controller runs in a Pod
#     of its own whose token volume asks for the minimum, 600 s: the kubelet rotates it at
#     80 % (480 s); once the OLD token has expired (kube-apiserver answers 401 to it), a new
#     Foo must still get its Deployment, which only a controller that re-read the file can
#     create (docs/testing.md, "The real node").
# The node is torn down at the end (also on failure) and hack/node.sh check-clean must pass.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
NS=kube-controllers
# cert-manager's CRDs come from its Go module (the Go module proxy serves the repository's
# deploy/crds); the Helm template lines in them are dropped.
CERT_MANAGER_VERSION=v1.18.2
BINARIES=(sample-controller vm-controller myweb-operator)
T0=$SECONDS

log() { printf '[e2e-real-node %3ds] %s\n' $((SECONDS - T0)) "$*" >&2; }
fail() {
  printf '[e2e-real-node] FAIL: %s\n' "$*" >&2
  if [ -n "${KUBECONFIG:-}" ]; then
    "$KUBECTL" get pods -A -o wide >&2 || true
    "$KUBECTL" -n "$NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
    for b in "${BINARIES[@]}"; do "$KUBECTL" -n "$NS" logs "deploy/$b" --tail=15 2>/dev/null >&2 || true; done
  fi
  exit 1
}
k() { "$KUBECTL" "$@"; }

# eventually TIMEOUT_S WHAT CMD...: retry CMD every second until it succeeds.
eventually() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out after $1 s: $what"
    sleep 1
  done
}

# --- images and the node --------------------------------------------------------------
log "images: kube-controllers-rs, nginx-debian, pause (hack/image.sh)"
CONTROLLERS_ARCHIVE=$(bash hack/image.sh controllers)
NGINX_ARCHIVE=$(bash hack/image.sh nginx)
NGINX_IMAGE=$(tar -xOf "$NGINX_ARCHIVE" index.json | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')
NGINX_IMAGE=${NGINX_IMAGE#docker.io/library/}
bash hack/verify-image.sh

NODE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-rs-node.XXXXXX")
cleanup() {
  local rc=$?
  log "tearing the node down"
  bash hack/node.sh down "$NODE_DIR" || rc=1
  bash hack/node.sh check-clean || rc=1
  [ $rc = 0 ] && log "PASS" || log "FAILED (exit $rc)"
  exit $rc
}
trap cleanup EXIT
bash hack/node.sh up --dir "$NODE_DIR" >/dev/null
# shellcheck disable=SC1091
. "$NODE_DIR/env"
export KUBECONFIG
bash hack/node.sh load --dir "$NODE_DIR" "$CONTROLLERS_ARCHIVE" "$NGINX_ARCHIVE"
log "node $NODE_NAME Ready; images loaded"

# --- 1. deploy/ as it is ----------------------------------------------------------------
CM_DIR=$(cd hack/tools/node && go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | jq -r .Dir)
for crd in certificates issuers; do sed '/{{/d' "$CM_DIR/deploy/crds/crd-$crd.yaml"; echo ---; done | k apply -f - >/dev/null
k apply -f deploy/crds/ >/dev/null
k wait --for=condition=Established crd --all --timeout=60s >/dev/null

# make_webhook_cert BINARY: what certificate.yaml says to do without cert-manager.
make_webhook_cert() {
  local b=$1 svc dir
  svc=$b-webhook-service.$NS.svc
  dir=$(mktemp -d)
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$dir/tls.key" -out "$dir/tls.crt" \
    -subj "/CN=$svc" -addext "subjectAltName=DNS:$svc,DNS:$svc.cluster.local" 2>/dev/null
  k -n "$NS" create secret tls "$b-webhook-server-cert" --cert="$dir/tls.crt" --key="$dir/tls.key" >/dev/null
  local kind name n i
  for kind in validatingwebhookconfiguration mutatingwebhookconfiguration; do
    for name in $(k get "$kind" -l "app.kubernetes.io/name=$b" -o name); do
      n=$(k get "$name" -o jsonpath='{.webhooks[*].name}' | wc -w)
      for i in $(seq 0 $((n - 1))); do
        k patch "$name" --type=json \
          -p "[{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$(base64 -w0 "$dir/tls.crt")\"}]" >/dev/null
      done
    done
  done
  rm -rf "$dir"
}

for b in "${BINARIES[@]}"; do
  k apply -k "deploy/$b" >/dev/null || fail "kubectl apply -k deploy/$b"
  make_webhook_cert "$b"
done
log "deploy/{$(
  IFS=,
  echo "${BINARIES[*]}"
)} applied unmodified; webhook certificates made"

# --- 2. Available, leaders ------------------------------------------------------------------
for b in "${BINARIES[@]}"; do
  k -n "$NS" rollout status "deploy/$b" --timeout=180s >/dev/null || fail "deployment $b not Available"
done
log "every Deployment Available (readiness probes passed)"

# leader BINARY: the Pod holding BINARY's Lease (a holder identity starts with the Pod's
# name, the hostname).
leader() {
  local holder p
  holder=$(k -n "$NS" get lease -o json | jq -r --arg b "$1" \
    '.items[] | select(.metadata.name | startswith($b)) | .spec.holderIdentity // empty' | head -1)
  [ -n "$holder" ] || return 1
  for p in $(k -n "$NS" get pods -l "app.kubernetes.io/name=$1" -o jsonpath='{.items[*].metadata.name}'); do
    case $holder in "$p"*) echo "$p"; return 0 ;; esac
  done
  return 1
}
for b in "${BINARIES[@]}"; do eventually 60 "a leader for $b" leader "$b"; done
log "leaders: $(for b in "${BINARIES[@]}"; do printf '%s=%s ' "$b" "$(leader "$b")"; done)"

# --- 3. reconciled by the Pods ---------------------------------------------------------
# sample-controller's Deployments run nginx:latest, which this node cannot pull (every
# registry is a closed local port, hack/node.sh): its Pod waits in ImagePullBackOff; the
# controller's work (the owned Deployment) is what is checked.
k apply -f - >/dev/null <<'EOF'
apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata: {name: e2e-foo, namespace: default}
spec: {deploymentName: e2e-foo-deploy, replicas: 1}
EOF
owned_by_foo() {
  [ "$(k get deploy e2e-foo-deploy -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" = Foo/e2e-foo ]
}
eventually 60 "the Foo's Deployment, owned by it" owned_by_foo
k apply -f deploy/vm-controller/example-vm.yaml >/dev/null
vm_active() { [ "$(k get virtualmachine test-vm -o jsonpath='{.status.phase}')" = Active ]; }
eventually 90 "VirtualMachine test-vm Active" vm_active
PAGE1='<h1>MyWeb on a real node</h1>'
myweb() {
  k apply -f - >/dev/null <<EOF
apiVersion: operator.k8s-summit.org/v1
kind: MyWeb
metadata: {name: $1, namespace: default}
spec: {image: "$NGINX_IMAGE", nodePortNumber: $2, pageContentHtml: "$3"}
EOF
}
myweb e2e-web 30080 "$PAGE1"
eventually 120 "MyWeb e2e-web's Deployment Available" k rollout status deploy/e2e-web --timeout=2s
log "reconciled in-cluster: Foo -> Deployment, VirtualMachine Active, MyWeb -> ConfigMap + Deployment + Service"

# --- 4. webhooks through their Services --------------------------------------------------
refused() { # refused PATTERN CMD...: CMD fails and says PATTERN
  local out
  if out=$("${@:2}" 2>&1); then fail "not refused: ${*:2}"; fi
  grep -q -- "$1" <<<"$out" || fail "refused, but not by our webhook: $out"
}
refused 'denied the request: spec.deploymentName' k apply -f - <<'EOF'
apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata: {name: bad-foo, namespace: default}
spec: {deploymentName: Not_A_Name, replicas: 1}
EOF
refused 'denied the request: spec.resource.cpu: Invalid value: "128": must be at most 64' k apply -f - <<'EOF'
apiVersion: cloudnative.tw/v1alpha1
kind: VirtualMachine
metadata: {name: bad-vm, namespace: default}
spec: {resource: {cpu: "128", memory: 64Mi, rootDisk: 1Gi}}
EOF
refused 'denied the request' myweb e2e-web-2 30080 "<p>taken</p>"
# The mutating webhook: sizes left out are filled in before the schema requires them.
k apply -f - >/dev/null <<'EOF' || fail "a VirtualMachine with only cpu was not defaulted by the mutating webhook"
apiVersion: cloudnative.tw/v1alpha1
kind: VirtualMachine
metadata: {name: defaulted-vm, namespace: default}
spec: {resource: {cpu: "2"}}
EOF
[ -n "$(k get virtualmachine defaulted-vm -o jsonpath='{.spec.resource.memory}')" ] || fail "defaulted-vm has no memory"
log "webhooks via their Services: three refusals, one defaulting (memory $(k get virtualmachine defaulted-vm -o jsonpath='{.spec.resource.memory}'))"

# --- 5. the page over the NodePort -----------------------------------------------------------
page_is() { [ "$(curl -fsS --max-time 3 http://127.0.0.1:30080/)" = "$1" ]; }
# page_stable PAGE: five requests in a row get PAGE. While endpoints change, kube-proxy's
# rules may still send some connections to a Pod that is gone (they time out) or to the
# old page: one good answer proves little.
page_stable() {
  local i
  for i in 1 2 3 4 5; do page_is "$1" || return 1; done
}
eventually 60 "curl http://127.0.0.1:30080/ returns the page" page_stable "$PAGE1"
log "curl http://127.0.0.1:30080/ -> $PAGE1 (5 requests in a row)"
PAGE2='<h1>MyWeb changed its page</h1>'
gen=$(k get deploy e2e-web -o jsonpath='{.metadata.generation}')
myweb e2e-web 30080 "$PAGE2"
eventually 120 "the changed page over the NodePort" page_is "$PAGE2"
rolled() { [ "$(k get deploy e2e-web -o jsonpath='{.metadata.generation}')" -gt "$gen" ]; }
eventually 30 "Deployment e2e-web rolled (a new generation)" rolled
k rollout status deploy/e2e-web --timeout=120s >/dev/null || fail "Deployment e2e-web did not finish rolling"
# The old Pod's endpoint leaves kube-proxy's rules a moment after the rollout ends: for
# that moment the port refuses (no endpoint), as it would for any client.
eventually 30 "the changed page over the NodePort after the rollout" page_stable "$PAGE2"
log "after the change (Deployment generation $gen -> $(k get deploy e2e-web -o jsonpath='{.metadata.generation}')): curl -> $PAGE2 (5 requests in a row)"

# --- 6. leader Pod deleted -> takeover ------------------------------------------------------
old=$(leader myweb-operator)
k -n "$NS" delete pod "$old" --wait=false >/dev/null
new_leader() { local l; l=$(leader myweb-operator) && [ "$l" != "$old" ]; }
eventually 90 "a new myweb-operator leader after deleting $old" new_leader
log "leader $old deleted -> $(leader myweb-operator) took over"

# --- 7. liveness ------------------------------------------------------------------------
pod=$(k -n "$NS" get pods -l app.kubernetes.io/name=sample-controller -o jsonpath='{.items[0].metadata.name}')
restarts() { k -n "$NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
before=$(restarts)
cid=$(k -n "$NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
cid=${cid#containerd://}
pid=$("$CTR" --address "$CONTAINERD_ADDRESS" -n k8s.io tasks ls 2>/dev/null | awk -v c="$cid" '$1 == c { print $2 }')
[ -n "$pid" ] || fail "no process for container $cid"
kill -STOP "$pid"
log "sample-controller (pid $pid in $pod) stopped; waiting for the liveness probe to restart it"
# Once the kubelet has decided (its Killing event: "failed liveness probe, will be
# restarted"), the process is continued so that it handles the SIGTERM at once: a stopped
# process would only die at the end of terminationGracePeriodSeconds (30 s of waiting
# that shows nothing more).
killing() { k -n "$NS" get events --field-selector "involvedObject.name=$pod,reason=Killing" -o name | grep -q .; }
eventually 120 "the kubelet's liveness verdict on the wedged container (event Killing)" killing
log "kubelet: $(k -n "$NS" get events --field-selector "involvedObject.name=$pod,reason=Killing" \
  -o jsonpath='{.items[0].message}')"
kill -CONT "$pid" 2>/dev/null || true
restarted() { [ "$(restarts)" -gt "$before" ]; }
eventually 60 "the kubelet restarting the wedged container" restarted
eventually 120 "$pod Ready again" k -n "$NS" wait --for=condition=Ready "pod/$pod" --timeout=2s
log "liveness: restartCount $before -> $(restarts), Ready again"

# --- 8. token rotation (E2E_TOKEN_ROTATION=1) -------------------------------------------
# jwt_exp TOKEN: the token's exp claim (seconds since the epoch).
jwt_exp() {
  local p
  p=$(cut -d. -f2 <<<"$1" | tr '_-' '/+')
  while [ $((${#p} % 4)) -ne 0 ]; do p+='='; done
  base64 -d <<<"$p" | jq -r .exp
}
token_rotation() {
  # This Pod is the only sample-controller left. It serves no webhook, so the Foo
  # webhook's registration goes too: with failurePolicy Fail and no endpoint behind its
  # Service, every Foo create would be refused (the webhooks were shown above).
  k -n "$NS" scale deploy/sample-controller --replicas=0 >/dev/null
  k delete validatingwebhookconfiguration sample-controller-validating-webhook-configuration >/dev/null
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: token-rotation, namespace: $NS}
spec:
  serviceAccountName: sample-controller
  automountServiceAccountToken: false
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532}
  containers:
    - name: controller
      image: kube-controllers-rs:dev
      imagePullPolicy: IfNotPresent
      command: ["/usr/local/bin/sample-controller"]
      args: ["--workers=1"]
      volumeMounts: [{name: token, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}]
  volumes:
    - name: token
      projected:
        sources:
          - serviceAccountToken: {path: token, expirationSeconds: 600}
          - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
          - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
EOF
  k -n "$NS" wait --for=condition=Ready pod/token-rotation --timeout=120s >/dev/null || fail "token-rotation Pod not Ready"
  local uid file old new exp
  uid=$(k -n "$NS" get pod token-rotation -o jsonpath='{.metadata.uid}')
  file=$NODE_DIR/kubelet/pods/$uid/volumes/kubernetes.io~projected/token/token
  old=$(cat "$file")
  exp=$(jwt_exp "$old")
  log "token-rotation runs with a 600 s token (exp $(date -u -d "@$exp" +%T)); waiting for the kubelet to rotate it"
  rotated() { [ "$(cat "$file")" != "$old" ]; }
  eventually 600 "the kubelet rotating the projected token" rotated
  new=$(cat "$file")
  log "rotated: the new token expires $(date -u -d "@$(jwt_exp "$new")" +%T); waiting for the old one to expire"
  # kube-apiserver validates exp with go-jose's default leeway of one minute.
  while [ "$(date +%s)" -le $((exp + 65)) ]; do sleep 5; done
  local api
  api=$(sed -n 's/^APISERVER=//p' "$NODE_DIR/cp/env")
  [ "$(curl -sk -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $old" "$api/api")" = 401 ] ||
    fail "the old token is still accepted after its exp"
  k apply -f - >/dev/null <<'EOF'
apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata: {name: after-rotation, namespace: default}
spec: {deploymentName: after-rotation, replicas: 1}
EOF
  owned() { [ "$(k get deploy after-rotation -o jsonpath='{.metadata.ownerReferences[0].name}')" = after-rotation ]; }
  eventually 90 "a Foo created after the old token expired gets its Deployment" owned
  log "token rotation: the old token answers 401, the controller re-read the new one and created Deployment after-rotation"
}
if [ "${E2E_TOKEN_ROTATION:-0}" = 1 ]; then token_rotation; fi
