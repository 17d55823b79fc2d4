#!/usr/bin/env bash
# The in-cluster path, for real: the controllers' image built here (hack/image.sh), loaded
# into a real node (hack/node.sh), and deploy/ applied as a user applies it.
#
#   hack/e2e-real-node.sh          (as root; IMAGE_BIN_DIR as in hack/image.sh)
#   SCAFFOLD_PROJECT=DIR hack/e2e-real-node.sh
#                                  also step 9 on the `kcr` project in DIR, as
#                                  `hack/e2e-scaffold.sh build` leaves it (DIR/guestbook);
#                                  its binary is $CARGO_TARGET_DIR/debug/<projectName>
#                                  unless SCAFFOLD_BIN names it
#
# What it shows, in order (each step fails the script with what it saw):
#  1. the three kustomizations (`kubectl apply -k deploy/<binary>`) applied unmodified;
#     the webhook certificates made by this script, as deploy/*/certificate.yaml says to do
#     without cert-manager (what cert-manager does for each Certificate object: a
#     Secret for its dnsNames, and the caBundle patched into the webhook configurations
#     whose inject-ca-from annotation names it); cert-manager's own
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
#     spec.pageContentHtml; a new page rolls the Deployment and curl shows it; then, with
#     Pods running, IP forwarding is off and nothing masquerades the Pods' network (read
#     from /proc and iptables; nothing is sent off the machine);
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
#  9. only with SCAFFOLD_PROJECT: a `kcr` project's operator, as its user deploys it. Its
#     image built without a registry (`hack/image.sh operator`: its one binary on the same
#     root filesystem, named as deploy/ names it, e.g. my.domain/guestbook:dev) and
#     loaded with the others; its deploy/ applied unmodified (`kubectl apply -k`), the
#     webhook certificate made as in 1.; its Deployment Available (readiness probe) and
#     its leader Lease held by its Pod; the Guestbook sample (deploy/samples) Ready=True
#     with the finalizer on it, then deleted (the finalizer removed by the controller); a
#     Memcached's Deployment created; the defaulting webhook through its Service (a
#     Guestbook without spec.title gets its name) and a bad Guestbook (spec.maxEntries:
#     0) refused with the validator's message. On failure, its logs and Events too.
# The node is torn down at the end (also on failure) and hack/node.sh check-clean must pass.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
NS=kube-controllers
# cert-manager's CRDs come from its Go module (the Go module proxy serves the repository's
# deploy/crds); the Helm template lines in them are dropped.
CERT_MANAGER_VERSION=v1.18.2
BINARIES=(sample-controller vm-controller myweb-operator)
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
SCAFFOLD_PROJECT=${SCAFFOLD_PROJECT:-}
# Step 9's operator (set once it is deployed: fail() then shows its logs and Events).
OP_NS='' OP_DEPLOY=''
T0=$SECONDS

log() { printf '[e2e-real-node %3ds] %s\n' $((SECONDS - T0)) "$*" >&2; }
fail() {
  printf '[e2e-real-node] FAIL: %s\n' "$*" >&2
  if [ -n "${KUBECONFIG:-}" ]; then
    "$KUBECTL" get pods -A -o wide >&2 || true
    # A Pod left Pending names no taint ("untolerated taint(s)"): the node's own words.
    "$KUBECTL" get nodes -o jsonpath='{range .items[*]}{.metadata.name}: taints {.spec.taints}{"\n"}{range .status.conditions[*]}  {.type}={.status} {.reason}: {.message}{"\n"}{end}{end}' >&2 || true
    "$KUBECTL" -n "$NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
    for b in "${BINARIES[@]}"; do "$KUBECTL" -n "$NS" logs "deploy/$b" --tail=15 >&2 2>/dev/null || true; done
    if [ -n "$OP_NS" ]; then
      printf '[e2e-real-node] the operator of %s: Events in %s and default, its logs\n' "$SCAFFOLD_PROJECT" "$OP_NS" >&2
      "$KUBECTL" -n "$OP_NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
      "$KUBECTL" -n default get events --sort-by=.lastTimestamp 2>/dev/null | tail -20 >&2 || true
      "$KUBECTL" -n "$OP_NS" logs "deploy/$OP_DEPLOY" --previous --tail=30 >&2 2>/dev/null || true
      "$KUBECTL" -n "$OP_NS" logs "deploy/$OP_DEPLOY" --tail=40 >&2 2>/dev/null || true
    fi
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
# Step 9's image first, so that a missing or wrong binary fails at once. The project's
# name (its PROJECT file) names its binary; deploy/ names the image (the Deployment's
# image after kustomize's `images:`).
OP_ARCHIVES=()
if [ -n "$SCAFFOLD_PROJECT" ]; then
  [ -f "$SCAFFOLD_PROJECT/PROJECT" ] && [ -f "$SCAFFOLD_PROJECT/deploy/rbac/role.yaml" ] ||
    fail "SCAFFOLD_PROJECT=$SCAFFOLD_PROJECT is not a built kcr project (hack/e2e-scaffold.sh build)"
  OP_NAME=$(sed -n 's/^projectName: *//p' "$SCAFFOLD_PROJECT/PROJECT")
  [ -n "$OP_NAME" ] || fail "no projectName in $SCAFFOLD_PROJECT/PROJECT"
  OP_BIN=${SCAFFOLD_BIN:-${CARGO_TARGET_DIR:-$CACHE_ROOT/cargo-target}/debug/$OP_NAME}
  # The target directory is shared: debug/<name> is whichever project of that name was
  # built last. Its dep-info file (<binary>.d) names the sources it was built from.
  if [ -z "${SCAFFOLD_BIN:-}" ]; then
    grep -qF " $(cd "$SCAFFOLD_PROJECT" && pwd -P)/src/main.rs" "$OP_BIN.d" 2>/dev/null ||
      fail "$OP_BIN was not built from $SCAFFOLD_PROJECT (its $OP_BIN.d: $(cut -d' ' -f2 "$OP_BIN.d" 2>/dev/null)...): build it there, or name the binary with SCAFFOLD_BIN"
  fi
  OP_IMAGE=$("$(bash hack/control-plane.sh bin-path kubectl)" kustomize "$SCAFFOLD_PROJECT/deploy" | sed -n 's/^ *image: *//p')
  [ "$(wc -l <<<"$OP_IMAGE")" = 1 ] && [ -n "$OP_IMAGE" ] || fail "$SCAFFOLD_PROJECT/deploy: not one image: $OP_IMAGE"
  log "image: $OP_IMAGE, $OP_BIN (hack/image.sh operator)"
  OP_ARCHIVES=("$(bash hack/image.sh operator "$OP_BIN" "$OP_IMAGE")") || fail "hack/image.sh operator $OP_BIN $OP_IMAGE"
  log "image $OP_IMAGE built: ${OP_ARCHIVES[0]}"
fi
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
bash hack/node.sh load --dir "$NODE_DIR" "$CONTROLLERS_ARCHIVE" "$NGINX_ARCHIVE" "${OP_ARCHIVES[@]}"
log "node $NODE_NAME Ready; images loaded"

# --- 1. deploy/ as it is ----------------------------------------------------------------
CM_DIR=$(cd hack/tools/node && go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | jq -r .Dir)
for crd in certificates issuers; do sed '/{{/d' "$CM_DIR/deploy/crds/crd-$crd.yaml"; echo ---; done | k apply -f - >/dev/null
k apply -f deploy/crds/ >/dev/null
k wait --for=condition=Established crd --all --timeout=60s >/dev/null

# make_webhook_cert NAMESPACE CERTIFICATE: what cert-manager would do for the applied
# Certificate object (certificate.yaml says how without it): a self-signed certificate
# for its spec.dnsNames in the kubernetes.io/tls Secret spec.secretName (the Secret the
# Deployment mounts), and, the cainjector's part, that certificate in the caBundle of
# every webhook of the configurations annotated cert-manager.io/inject-ca-from:
# NAMESPACE/CERTIFICATE.
make_webhook_cert() {
  local ns=$1 cert=$2 secret dns dir san ca kind name patched=0
  secret=$(k -n "$ns" get certificate "$cert" -o jsonpath='{.spec.secretName}')
  dns=$(k -n "$ns" get certificate "$cert" -o jsonpath='{.spec.dnsNames[*]}')
  [ -n "$secret" ] && [ -n "$dns" ] || fail "Certificate $ns/$cert: no secretName or dnsNames"
  # shellcheck disable=SC2086 # one DNS name per word
  san=$(printf 'DNS:%s,' $dns)
  dir=$(mktemp -d)
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -keyout "$dir/tls.key" -out "$dir/tls.crt" \
    -subj "/CN=${dns%% *}" -addext "subjectAltName=${san%,}" 2>/dev/null
  k -n "$ns" create secret tls "$secret" --cert="$dir/tls.crt" --key="$dir/tls.key" >/dev/null
  ca=$(base64 -w0 "$dir/tls.crt")
  rm -rf "$dir"
  for kind in validatingwebhookconfiguration mutatingwebhookconfiguration; do
    for name in $(k get "$kind" -o json | jq -r --arg from "$ns/$cert" \
      '.items[] | select(.metadata.annotations["cert-manager.io/inject-ca-from"] == $from) | .metadata.name'); do
      k get "$kind" "$name" -o json |
        jq -c --arg ca "$ca" '[range(.webhooks | length) | {op: "add", path: "/webhooks/\(.)/clientConfig/caBundle", value: $ca}]' |
        k patch "$kind" "$name" --type=json --patch-file=/dev/stdin >/dev/null
      patched=$((patched + 1))
    done
  done
  [ $patched -gt 0 ] || fail "no webhook configuration is annotated cert-manager.io/inject-ca-from: $ns/$cert"
  # The cainjector does the same for CRDs (their conversion webhook): the VirtualMachine
  # CRD's (deploy/crds) names vm-controller's Certificate.
  for name in $(k get crd -o json | jq -r --arg from "$ns/$cert" \
    '.items[] | select(.metadata.annotations["cert-manager.io/inject-ca-from"] == $from) | .metadata.name'); do
    k patch crd "$name" --type=json \
      -p "[{\"op\":\"add\",\"path\":\"/spec/conversion/webhook/clientConfig/caBundle\",\"value\":\"$ca\"}]" >/dev/null
  done
}

for b in "${BINARIES[@]}"; do
  k apply -k "deploy/$b" >/dev/null || fail "kubectl apply -k deploy/$b"
  make_webhook_cert "$NS" "$b-serving-cert"
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

# leader BINARY [NAMESPACE POD_SELECTOR]: the Pod holding BINARY's Lease (a holder
# identity starts with the Pod's name, the hostname). Default: the Lease in $NS, the
# Pods labelled app.kubernetes.io/name=BINARY.
leader() {
  local holder p ns=${2:-$NS} selector=${3:-app.kubernetes.io/name=$1}
  holder=$(k -n "$ns" get lease -o json | jq -r --arg b "$1" \
    '.items[] | select(.metadata.name | startswith($b)) | .spec.holderIdentity // empty' | head -1)
  [ -n "$holder" ] || return 1
  for p in $(k -n "$ns" get pods -l "$selector" -o jsonpath='{.items[*].metadata.name}'); do
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
# v1alpha1 by name: `virtualmachine` alone is the preferred version, v1beta1 (spec.compute),
# converted by vm-controller's conversion webhook through its Service.
defaulted_memory=$(k get virtualmachines.v1alpha1.cloudnative.tw defaulted-vm -o jsonpath='{.spec.resource.memory}')
[ -n "$defaulted_memory" ] || fail "defaulted-vm has no memory"
[ "$(k get virtualmachine defaulted-vm -o jsonpath='{.spec.compute.memory}')" = "$defaulted_memory" ] ||
  fail "defaulted-vm read as v1beta1 (the conversion webhook) has not the same memory"
log "webhooks via their Services: three refusals, one defaulting (memory $defaulted_memory), one conversion to v1beta1"

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
# Nothing routes off this machine while the node runs (DEVELOPERS.md): with Pods on the
# bridge and a page served through kube-proxy's rules, IP forwarding is still off and no
# rule masquerades the Pods' network. Read from the kernel and the rules; no traffic is sent.
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 0 ] ||
  fail "net.ipv4.ip_forward is $(cat /proc/sys/net/ipv4/ip_forward) while the node runs: a Pod's packet off this machine would be forwarded"
if iptables -t nat -S POSTROUTING | grep -q -- '-s 10.244.0.0/24.*MASQUERADE\|CNI-'; then
  fail "a rule masquerades the Pods' network: $(iptables -t nat -S POSTROUTING | grep -- '10.244.0.0/24\|CNI-')"
fi
log "while the node runs: net.ipv4.ip_forward = 0, no masquerade of 10.244.0.0/24"

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

# --- 9. a kcr project's operator (SCAFFOLD_PROJECT) -------------------------------------------
# Its names are kubebuilder's layout after kustomize's namespace and namePrefix
# (<name>-system, <name>-controller-manager); the Lease is the manager's name.
scaffold_operator() {
  local t9=$SECONDS cert out i
  OP_NS=$OP_NAME-system OP_DEPLOY=$OP_NAME-controller-manager
  k apply -k "$SCAFFOLD_PROJECT/deploy" >/dev/null || fail "kubectl apply -k $SCAFFOLD_PROJECT/deploy"
  k wait --for=condition=Established crd --all --timeout=60s >/dev/null
  for cert in $(k -n "$OP_NS" get certificates -o jsonpath='{.items[*].metadata.name}'); do
    make_webhook_cert "$OP_NS" "$cert"
  done
  log "$SCAFFOLD_PROJECT/deploy applied unmodified; webhook certificate made (Secret $(k -n "$OP_NS" get secrets --field-selector type=kubernetes.io/tls -o jsonpath='{.items[*].metadata.name}'))"
  k -n "$OP_NS" rollout status "deploy/$OP_DEPLOY" --timeout=180s >/dev/null || fail "deployment $OP_NS/$OP_DEPLOY not Available"
  local selector
  selector=$(k -n "$OP_NS" get deploy "$OP_DEPLOY" -o json | jq -r '.spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")')
  eventually 60 "a leader for $OP_NAME" leader "$OP_NAME" "$OP_NS" "$selector"
  log "$OP_DEPLOY Available (readiness probe); leader $(leader "$OP_NAME" "$OP_NS" "$selector")"

  # The sample. The first write through the webhooks may come before kube-proxy routes
  # the Service to the new Pod: retried for a while, the last answer kept.
  for i in $(seq 30); do
    out=$(k -n default apply -f "$SCAFFOLD_PROJECT/deploy/samples/webapp_v1_guestbook.yaml" 2>&1) && break
    [ "$i" -lt 30 ] || fail "the Guestbook sample was not admitted: $out"
    sleep 1
  done
  local sample
  sample=$(k -n default get -f "$SCAFFOLD_PROJECT/deploy/samples/webapp_v1_guestbook.yaml" -o jsonpath='{.metadata.name}')
  k -n default wait --for=condition=Ready "guestbook/$sample" --timeout=60s >/dev/null ||
    fail "Guestbook $sample not Ready=True: $(k -n default get guestbook "$sample" -o jsonpath='{.status}')"
  [ "$(k -n default get guestbook "$sample" -o jsonpath='{.metadata.finalizers}')" = '["webapp.my.domain/finalizer"]' ] ||
    fail "Guestbook $sample has no finalizer: $(k -n default get guestbook "$sample" -o jsonpath='{.metadata.finalizers}')"
  log "Guestbook $sample Ready=True ($(k -n default get guestbook "$sample" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'), observedGeneration $(k -n default get guestbook "$sample" -o jsonpath='{.status.conditions[?(@.type=="Ready")].observedGeneration}')), finalizer on"
  k -n default delete guestbook "$sample" --timeout=60s >/dev/null || fail "Guestbook $sample not deleted (its finalizer stayed)"
  log "Guestbook $sample deleted: the controller removed its finalizer"

  k -n default apply -f "$SCAFFOLD_PROJECT/deploy/samples/cache_v1alpha1_memcached.yaml" >/dev/null || fail "the Memcached sample"
  local memcached
  memcached=$(k -n default get -f "$SCAFFOLD_PROJECT/deploy/samples/cache_v1alpha1_memcached.yaml" -o jsonpath='{.metadata.name}')
  # Its image (memcached:1.6-alpine) cannot be pulled here: the controller's Deployment
  # is what is checked, as for the Foo.
  owned_by_memcached() {
    [ "$(k -n default get deploy "$memcached" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')" = "Memcached/$memcached" ]
  }
  eventually 60 "Memcached $memcached's Deployment, owned by it" owned_by_memcached
  log "Memcached $memcached -> Deployment $memcached (owned by it)"

  # The webhooks through the Service: the defaulter fills spec.title (and maxEntries);
  # the validator refuses maxEntries 0.
  k apply -f - >/dev/null <<'EOF' || fail "a Guestbook without spec.title was not admitted"
apiVersion: webapp.my.domain/v1
kind: Guestbook
metadata: {name: e2e-defaulted, namespace: default}
spec: {}
EOF
  [ "$(k -n default get guestbook e2e-defaulted -o jsonpath='{.spec.title}/{.spec.maxEntries}')" = e2e-defaulted/100 ] ||
    fail "Guestbook e2e-defaulted not defaulted: spec $(k -n default get guestbook e2e-defaulted -o jsonpath='{.spec}')"
  refused 'denied the request: spec.maxEntries: Invalid value: 0: must be between 1 and 1000' k apply -f - <<'EOF'
apiVersion: webapp.my.domain/v1
kind: Guestbook
metadata: {name: e2e-bad, namespace: default}
spec: {title: Bad, maxEntries: 0}
EOF
  log "webhooks via $OP_NAME-webhook-service: e2e-defaulted got spec.title e2e-defaulted, maxEntries 100; maxEntries 0 refused"
  log "step 9 ($OP_NAME) took $((SECONDS - t9)) s"
}
if [ -n "$SCAFFOLD_PROJECT" ]; then scaffold_operator; fi
