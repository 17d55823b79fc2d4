# Shared by hack/chaos.sh and hack/sieve.sh (source it): the VirtualMachine CRD as a
# cluster has it, converted by vm-controller's webhook (issue 58).
#
# The CRD stores v1alpha1 (spec.resource) and serves v1beta1 (spec.compute, spec.rootDisk),
# the preferred version. deploy/crds points its conversion at the in-cluster Service, whose
# CA cert-manager injects; a local control plane has neither. Switching the conversion off
# (strategy None) is no substitute: the API server then only relabels apiVersion, and every
# write through v1beta1 (a label from kubectl, the deletionTimestamp of `kubectl delete` or
# of the namespace controller) prunes the object to v1beta1's schema and stores spec: {},
# which the controller's v1alpha1 informer cannot decode. So, as hack/demo.sh and envtest
# do: vm-controller, the binary that serves /convert in a cluster, serves it on 127.0.0.1
# with the serving certificate `hack/control-plane.sh up` made (signed by the cluster CA),
# and the CRD's conversion webhook is pointed at it by url + caBundle.
#
# That vm-controller is there to serve the webhook: its controller watches a namespace
# nothing is created in (vm-conversion-webhook), without leader election, with the fake
# driver. It talks to kube-apiserver directly, so what a harness does to its own
# controllers (the soak's proxy faults and kills, sieve's crashes) does not reach it: the
# webhook stays up as a cluster's would behind its Service.
#
#   serve_vm_conversion CP_DIR VM_CONTROLLER LOG
#       starts it (the binary VM_CONTROLLER, its output in LOG), points the CRD at it and
#       returns once the API server converts through it: a v1beta1 VirtualMachine created
#       as a dry run (converted to v1alpha1 to be stored, and back; nothing is stored).
#       Sets VM_CONVERSION_PID (and VM_CONVERSION_METRICS, its /metrics URL). Exit status
#       1, with the reason and LOG's tail on stderr, if that fails within
#       VM_CONVERSION_TIMEOUT_S (default 120) seconds.
#   stop_vm_conversion
#       says on stderr how many ConversionReviews it answered, by HTTP status (its
#       controller_runtime_webhook_requests_total for /convert), and stops it. Call it
#       before `hack/control-plane.sh down`.
#   check_no_lossy_crds CP_DIR
#       exit status 1, naming them, if the cluster has a CRD with versions of different
#       schemas that does not convert by webhook (what crates/controllers/apis/tests/
#       lossy_crds.rs forbids in the repository, checked on the cluster itself).

# shellcheck source=hack/lib/host.sh
source "$(dirname "${BASH_SOURCE[0]}")/host.sh"

# conversion_env CP_DIR NAME: the value of NAME in CP_DIR/env (`hack/control-plane.sh up`).
conversion_env() { sed -n "s/^$2=//p" "$1/env"; }

serve_vm_conversion() {
  local cp_dir=$1 vm_controller=$2 log=$3
  local kubeconfig kubectl port metrics_port client out deadline
  kubeconfig=$(conversion_env "$cp_dir" KUBECONFIG)
  kubectl=$(conversion_env "$cp_dir" KUBECTL)
  read -r port metrics_port <<<"$(free_ports 2)"
  "$vm_controller" --kubeconfig "$kubeconfig" --namespace vm-conversion-webhook \
    --vm-driver fake --health-probe-bind-address=0 \
    --metrics-secure=false --metrics-bind-address "127.0.0.1:$metrics_port" \
    --webhook-bind-address "127.0.0.1:$port" \
    --webhook-cert-dir "$(conversion_env "$cp_dir" WEBHOOK_CERT_DIR)" >"$log" 2>&1 &
  VM_CONVERSION_PID=$!
  VM_CONVERSION_METRICS=http://127.0.0.1:$metrics_port/metrics
  client="{\"url\":\"https://127.0.0.1:$port/convert\",\"caBundle\":\"$(base64 -w0 "$(conversion_env "$cp_dir" WEBHOOK_CA)")\"}"
  "$kubectl" --kubeconfig "$kubeconfig" patch crd virtualmachines.cloudnative.tw --type=json \
    -p "[{\"op\":\"replace\",\"path\":\"/spec/conversion/webhook/clientConfig\",\"value\":$client}]" >/dev/null ||
    { echo "serve_vm_conversion: could not point the VirtualMachine CRD at the webhook" >&2; return 1; }
  deadline=$((SECONDS + ${VM_CONVERSION_TIMEOUT_S:-120}))
  local probe='apiVersion: cloudnative.tw/v1beta1
kind: VirtualMachine
metadata: {name: conversion-probe, namespace: default}
spec: {compute: {cpus: 1, memory: 64Mi}, rootDisk: {size: 1Gi}}'
  until out=$(printf '%s\n' "$probe" |
    "$kubectl" --kubeconfig "$kubeconfig" create --dry-run=server -o name -f - 2>&1); do
    if ! kill -0 "$VM_CONVERSION_PID" 2>/dev/null; then
      echo "serve_vm_conversion: vm-controller (the conversion webhook) exited; $log:" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "serve_vm_conversion: the API server does not convert through https://127.0.0.1:$port/convert: $out" >&2
      tail -n 20 "$log" >&2
      return 1
    fi
    sleep 1
  done
}

stop_vm_conversion() {
  [ -n "${VM_CONVERSION_PID:-}" ] || return 0
  local answered="(not counted: no curl)"
  # controller_runtime_webhook_requests_total{webhook="/convert",code="200"} 42 -> 200=42
  if command -v curl >/dev/null 2>&1; then
    answered=$(curl -fsS --max-time 5 "$VM_CONVERSION_METRICS" 2>/dev/null |
      grep '^controller_runtime_webhook_requests_total{.*webhook="/convert"' |
      sed -n 's|.*code="\([0-9]*\)".* \([0-9.e+]*\)$|\1=\2|p' | tr '\n' ' ') || true
  fi
  echo "the VirtualMachine conversion webhook answered, by HTTP status: ${answered:-nothing}" >&2
  kill "$VM_CONVERSION_PID" 2>/dev/null || true
  wait "$VM_CONVERSION_PID" 2>/dev/null || true
  VM_CONVERSION_PID=
}

check_no_lossy_crds() {
  local cp_dir=$1 lossy
  lossy=$("$(conversion_env "$cp_dir" KUBECTL)" --kubeconfig "$(conversion_env "$cp_dir" KUBECONFIG)" \
    get crd -o json | jq -r '.items[]
      | select((.spec.versions | length) > 1
          and (.spec.versions | map(.schema) | unique | length) > 1
          and (.spec.conversion.strategy // "") != "Webhook")
      | .metadata.name')
  if [ -n "$lossy" ]; then
    echo "check_no_lossy_crds: versions of different schemas without a conversion webhook (a write through one prunes the other's fields): ${lossy//$'\n'/ }" >&2
    return 1
  fi
}
