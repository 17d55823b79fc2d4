#!/usr/bin/env bash
# Points the VirtualMachine CRD's conversion webhook at a vm-controller serving /convert on
# loopback, with the local control plane's CA, and prints the vm-controller flags that serve
# it there (README, "Running the controllers"):
#
#   hack/local-conversion.sh [ADDR]        ADDR: 127.0.0.1:PORT, localhost:PORT or PORT
#                                          (default 127.0.0.1:9443)
#   cargo run -p vm-controller-bin -- ... $(hack/local-conversion.sh 127.0.0.1:9443)
#
# stdout is only the flags, `--webhook-bind-address ADDR --webhook-cert-dir DIR`, so the line
# above splices them in; what it did goes to stderr. It applies this checkout's CRD
# (deploy/crds/cloudnative.tw_virtualmachines.yaml) with that conversion, server-side and as
# `kubectl apply --server-side` does (field manager kubectl, taking the conversion over from
# whoever set it): `kubectl apply --server-side -f deploy/crds/` afterwards puts the in-cluster
# Service back (run this again then), where a `kubectl patch` of the url would have made that
# apply fail (a CRD naming both a url and a Service).
#
# Why: the CRD stores v1alpha1 and serves v1beta1, the preferred version, so `kubectl get vm`
# and `kubectl delete vm` go through the API server's call to vm-controller's /convert.
# deploy/crds names the in-cluster Service (cert-manager injects its CA); a local control
# plane has neither, so without this every v1beta1 read or write fails (`service
# "vm-controller-webhook-service" not found`). Switching the conversion off (`strategy:
# None`) is no substitute: a write through v1beta1 would store the VM as `spec: {}`
# (hack/lib/conversion.sh says more). This sets `strategy: Webhook` with `url:
# https://ADDR/convert` and `caBundle:` the cluster CA; `hack/control-plane.sh up` made a
# serving certificate for 127.0.0.1 and localhost, signed by that CA, in the directory the
# flags name. Until vm-controller serves there, v1beta1 requests fail and v1alpha1 ones
# (the controller's own) work: nothing is lost.
#
# The control plane: CONTROL_PLANE_DIR if set, else the state dir of $KUBECONFIG (the
# export line `up` prints points it there), else the last one `up` started.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CRD=virtualmachines.cloudnative.tw

die() { echo "local-conversion: $*" >&2; exit 1; }

case "${1:-}" in
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -le 1 ] || die "usage: $0 [ADDR]"
addr=${1:-127.0.0.1:9443}
[[ $addr =~ ^[0-9]+$ ]] && addr=127.0.0.1:$addr
[[ $addr =~ ^(127\.0\.0\.1|localhost):([0-9]+)$ ]] ||
  die "ADDR must be 127.0.0.1:PORT, localhost:PORT or PORT (the serving certificate is for those): $addr"
port=${BASH_REMATCH[2]}
if [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then die "no such port: $port"; fi

dir=${CONTROL_PLANE_DIR:-}
if [ -z "$dir" ] && [ -n "${KUBECONFIG:-}" ] && [ -f "$(dirname "$KUBECONFIG")/env" ]; then
  dir=$(dirname "$KUBECONFIG")
fi
if [ -z "$dir" ]; then
  dir=$(cat "${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}/current" 2>/dev/null || true)
fi
[ -f "${dir:-/nonexistent}/env" ] ||
  die "no local control plane found: start one with hack/control-plane.sh up and run its export line (or set CONTROL_PLANE_DIR)"
env_of() { sed -n "s/^$1=//p" "$dir/env"; }
kubeconfig=$(env_of KUBECONFIG)
kubectl=$(env_of KUBECTL)
cert_dir=$(env_of WEBHOOK_CERT_DIR)
ca=$(env_of WEBHOOK_CA)
{ [ -f "$cert_dir/tls.crt" ] && [ -f "$cert_dir/tls.key" ] && [ -f "$ca" ]; } ||
  die "$dir has no webhook serving certificate (made by hack/control-plane.sh up): $cert_dir, $ca"
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

# The whole conversion stanza, so a CRD found with `strategy: None` converts again.
conversion="{\"strategy\":\"Webhook\",\"webhook\":{\"conversionReviewVersions\":[\"v1\"],\
\"clientConfig\":{\"url\":\"https://$addr/convert\",\"caBundle\":\"$(base64 -w0 "$ca")\"}}}"
crd=$(k patch --local -f "$REPO_ROOT/deploy/crds/cloudnative.tw_virtualmachines.yaml" --type=json \
  -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion\",\"value\":$conversion}]" -o yaml) ||
  die "could not rewrite the conversion of deploy/crds/cloudnative.tw_virtualmachines.yaml"
k apply --server-side --force-conflicts -f - <<<"$crd" >/dev/null || die "could not apply the CRD $CRD"
url=$(k get crd "$CRD" -o 'jsonpath={.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.url}')
[ "$url" = "Webhook https://$addr/convert" ] || die "the CRD says '$url' after the patch"

case "$cert_dir" in *[[:space:]]*)
  die "the certificate directory's path has a blank, which \$(...) would split: $cert_dir" ;;
esac
flags="--webhook-bind-address $addr --webhook-cert-dir $cert_dir"
echo "local-conversion: $CRD converts through https://$addr/convert (CA $ca); serve it with: vm-controller $flags" >&2
echo "$flags"
