#!/usr/bin/env bash
# `make run-webhooks`: the manager on this machine, serving its webhooks to the cluster's
# API server, in one command. `cargo run` alone serves none: the API server must trust
# the webhook server's certificate and know where to call it, and deploy/'s webhook
# configurations send it to the in-cluster Service with the CA cert-manager injects.
#
# So this script:
#   1. makes a serving certificate for ADDRESS (its own CA) in CERT_DIR, once;
#   2. applies deploy/webhook's configurations with `url` (https://ADDRESS:PORT/...) and
#      that `caBundle` instead of the Service and cert-manager's annotation;
#   3. runs the manager (`cargo run`, or MANAGER) serving them on ADDRESS:PORT;
#   4. deletes those configurations when the manager stops (Ctrl-C): with
#      `failurePolicy: Fail` the API server would refuse every write of the kinds while
#      no manager answers.
#
# The API server must reach ADDRESS: 127.0.0.1 for a local control plane (`kcr
# envtest`'s); for kind, this machine's address on kind's network (ADDRESS=172.18.0.1).
#
#   ADDRESS   default 127.0.0.1          PORT      default 9443
#   CERT_DIR  default target/webhook-certs
#   MANAGER   default "cargo run --bin guestbook --"; extra arguments go to it
#   KUBECTL   default kubectl
set -euo pipefail
cd "$(dirname "$0")/.."
ADDRESS=${ADDRESS:-127.0.0.1}
PORT=${PORT:-9443}
CERT_DIR=${CERT_DIR:-target/webhook-certs}
MANAGER=${MANAGER:-cargo run --bin guestbook --}
KUBECTL=${KUBECTL:-kubectl}
log() { printf '[run-webhooks] %s\n' "$*" >&2; }

# 1. The certificate, for the address the API server calls (made again for another
#    address, or a day before it expires).
case $ADDRESS in
  *[!0-9.]*) san="DNS:$ADDRESS" ;;
  *) san="IP:$ADDRESS" ;;
esac
if [ "$(cat "$CERT_DIR/address" 2>/dev/null)" != "$ADDRESS" ] ||
  ! openssl x509 -in "$CERT_DIR/tls.crt" -noout -checkend 86400 >/dev/null 2>&1; then
  mkdir -p "$CERT_DIR"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=$ADDRESS" \
    -addext "subjectAltName=$san" -keyout "$CERT_DIR/tls.key" -out "$CERT_DIR/tls.crt" 2>/dev/null
  echo "$ADDRESS" >"$CERT_DIR/address"
  log "a serving certificate for $ADDRESS in $CERT_DIR (valid 30 days)"
fi

# 2. The configurations, pointed at it.
ca=$(base64 -w0 <"$CERT_DIR/tls.crt")
files=()
for f in deploy/webhook/mutating.yaml deploy/webhook/validating.yaml; do
  [ -f "$f" ] || continue
  out=$CERT_DIR/$(basename "$f")
  awk -v url="https://$ADDRESS:$PORT" -v ca="$ca" '
    /^ +cert-manager.io\/inject-ca-from:/ { next }
    /^ +service:$/ { service = 1; next }
    service && /^ +path:/ { sub(/^ +path: */, ""); print "      url: " url $0
      print "      caBundle: " ca; service = 0; next }
    service { next }
    { print }' "$f" >"$out"
  files+=(-f "$out")
done
if [ ${#files[@]} = 0 ]; then
  log "no webhooks in deploy/webhook (kcr create webhook adds them): the manager alone"
else
  $KUBECTL apply "${files[@]}" >&2
  # 4. ... and gone again when the manager stops, however it stops.
  trap '$KUBECTL delete --ignore-not-found "${files[@]}" >&2 || true' EXIT
fi

# 3. The manager, serving them: in a process group of its own (cargo does not pass a
#    signal on to the binary it runs), stopped with the script.
log "the manager: $MANAGER --webhook-bind-address $ADDRESS:$PORT --webhook-cert-dir $CERT_DIR $*"
setsid $MANAGER --webhook-bind-address "$ADDRESS:$PORT" --webhook-cert-dir "$CERT_DIR" "$@" &
manager=$!
trap 'kill -TERM -- "-$manager" 2>/dev/null; wait "$manager"; exit 130' INT TERM
wait "$manager"
