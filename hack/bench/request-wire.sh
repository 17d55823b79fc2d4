#!/usr/bin/env bash
# What the wire saves the API server on single-object requests, the kind a controller makes
# (issue 34: "the controllers' own requests, where it pays"): per round, N GETs of one
# Deployment answered in JSON and in protobuf, and N creates of ConfigMaps three ways:
# JSON body answered in JSON, JSON body answered in protobuf (what a patch or a
# server-side apply is: they have no protobuf form), and protobuf body answered in protobuf
# (what gentype::Client and client-go's typed clients send for a create or an update; the
# bodies are encoded here by a few lines of Python, the same bytes protowire writes).
# Prints kube-apiserver's CPU per batch (from /proc, 10 ms ticks). curl reuses one
# connection per batch.
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
# The end of one transfer in a curl config: its credentials, its status code on stdout,
# and `next`, so that options such as the body do not pile up across transfers (without
# it curl joins every `data` of the file into one body). The connection is still reused.
transfer_end() {
  echo "cacert = \"$D/pki/ca.crt\""; echo "cert = \"$D/pki/admin.crt\""; echo "key = \"$D/pki/admin.key\""
  echo "output = /dev/null"; echo "write-out = \"%{http_code}\\n\""; echo "next"
}
curl "${C[@]}" -X POST -H 'Content-Type: application/json' "$server/apis/apps/v1/namespaces/default/deployments" -d '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}}}'
sleep 3
N=${N:-400}
for round in 1 2 3; do
  for wire in application/json application/vnd.kubernetes.protobuf; do
    c0=$(cpu); t0=$(date +%s%N)
    for i in $(seq $N); do
      echo "url = \"$server/apis/apps/v1/namespaces/default/deployments/web\""; echo "header = \"Accept: $wire\""
      transfer_end
    done > "$D.curl"
    sed -i '$d' "$D.curl" # no `next` after the last transfer
    codes=$(curl -s -K "$D.curl" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
    c1=$(cpu); t1=$(date +%s%N)
    echo "round $round GET deployment x$N accept=$wire apiserver_cpu_ms=$((c1-c0)) wall_ms=$(((t1-t0)/1000000)) answers (count code):$codes"
  done
  # The order rotates every round: later batches find more objects in etcd.
  variants=(json:application/json json:application/vnd.kubernetes.protobuf protobuf:application/vnd.kubernetes.protobuf)
  for k in 0 1 2; do
    body=${variants[$(((k + round - 1) % 3))]}
    kind=${body%%:*}; wire=${body#*:}
    python3 - "$D.bodies" "$round-$kind-${wire##*/}" "$N" "$kind" <<'PY'
import os, sys
out, tag, n, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
os.makedirs(out, exist_ok=True)
def varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7f) | 0x80); v >>= 7
    b.append(v); return bytes(b)
def field(num, payload):  # a length-delimited field
    return varint(num << 3 | 2) + varint(len(payload)) + payload
def entry(num, k, v):
    return field(num, field(1, k.encode()) + field(2, v.encode()))
value = "v" * 52
for i in range(1, n + 1):
    name = f"cm-{tag}-{i}"
    if kind == "json":
        body = ('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","labels":{"a":"b"}},"data":{"k":"%s"}}' % (name, value)).encode()
    else:
        meta = field(1, name.encode()) + entry(11, "a", "b")
        raw = field(1, meta) + entry(2, "k", value)
        body = b"k8s\x00" + field(1, field(1, b"v1") + field(2, b"ConfigMap")) + field(2, raw) + field(3, b"") + field(4, b"")
    open(f"{out}/{i}", "wb").write(body)
PY
    content_type=application/json; [ "$kind" = protobuf ] && content_type=application/vnd.kubernetes.protobuf
    for i in $(seq $N); do
      echo "url = \"$server/api/v1/namespaces/default/configmaps\""; echo "request = \"POST\""
      echo "header = \"Accept: $wire\""; echo "header = \"Content-Type: $content_type\""
      echo "data-binary = \"@$D.bodies/$i\""
      transfer_end
    done > "$D.curl"
    sed -i '$d' "$D.curl" # no `next` after the last transfer
    c0=$(cpu)
    codes=$(curl -s -K "$D.curl" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
    c1=$(cpu)
    echo "round $round POST configmap x$N body=$kind accept=$wire apiserver_cpu_ms=$((c1-c0)) answers (count code):$codes"
  done
done
