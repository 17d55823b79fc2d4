#!/usr/bin/env bash
# What the wire saves the API server on single-object requests, the kind a controller makes
# (issue 34: "the controllers' own requests, where it pays"): per round, N GETs of one
# Deployment and N creates of ConfigMaps (JSON bodies), answered once in JSON and once in
# protobuf (the Accept header; the request bodies are JSON either way, as for patches and
# server-side apply, which have no protobuf form). Prints kube-apiserver's CPU per batch
# (from /proc, 10 ms ticks). curl reuses one connection per batch.
#
#   bash hack/bench/request-wire.sh            # N=400, 3 rounds, a fresh control plane
#   N=1000 bash hack/bench/request-wire.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
D=${STATE_DIR:-$(mktemp -d)/cp}
bash hack/control-plane.sh up --dir $D --nodes 0 >"$D.log" 2>&1
trap 'bash hack/control-plane.sh down $D >/dev/null 2>&1' EXIT
server=$(grep -m1 'server:' $D/kubeconfig | awk '{print $2}')
C=(--cacert $D/pki/ca.crt --cert $D/pki/admin.crt --key $D/pki/admin.key -s -o /dev/null)
apipid=$(pgrep -f "kube-apiserver.*$D" | head -1)
cpu() { awk '{print ($14+$15)*10}' /proc/$apipid/stat; }
curl "${C[@]}" -X POST -H 'Content-Type: application/json' "$server/apis/apps/v1/namespaces/default/deployments" -d '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}}}'
sleep 3
N=${N:-400}
for round in 1 2 3; do
  for wire in application/json application/vnd.kubernetes.protobuf; do
    c0=$(cpu); t0=$(date +%s%N)
    for i in $(seq $N); do echo "url = \"$server/apis/apps/v1/namespaces/default/deployments/web\""; echo "header = \"Accept: $wire\""; echo "output = /dev/null"; done > "$D.curl"
    curl --cacert $D/pki/ca.crt --cert $D/pki/admin.crt --key $D/pki/admin.key -s -K "$D.curl"
    c1=$(cpu); t1=$(date +%s%N)
    echo "round $round GET deployment x$N accept=$wire apiserver_cpu_ms=$((c1-c0)) wall_ms=$(((t1-t0)/1000000))"
    c0=$(cpu)
    for i in $(seq $N); do
      echo "url = \"$server/api/v1/namespaces/default/configmaps\""; echo "request = \"POST\""; echo "header = \"Accept: $wire\""; echo "header = \"Content-Type: application/json\""
      echo "data = \"{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":\\\"ConfigMap\\\",\\\"metadata\\\":{\\\"name\\\":\\\"cm-$round-${wire##*/}-$i\\\",\\\"labels\\\":{\\\"a\\\":\\\"b\\\"}},\\\"data\\\":{\\\"k\\\":\\\"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\\\"}}\""; echo "output = /dev/null"
    done > "$D.curl"
    curl --cacert $D/pki/ca.crt --cert $D/pki/admin.crt --key $D/pki/admin.key -s -K "$D.curl"
    c1=$(cpu)
    echo "round $round POST configmap x$N accept=$wire apiserver_cpu_ms=$((c1-c0))"
  done
done
