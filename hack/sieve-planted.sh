#!/usr/bin/env bash
# `kcr sieve` must catch the classic controller bugs in a generated reconciler (issue 57):
# three bugs planted, one at a time, in testdata/project's Memcached controller (the
# `--image` template), each caught by the perturbation or oracle meant for it.
#
#   bash hack/sieve-planted.sh            by hand (a pass per bug, about a minute each
#                                         once built); docs/reliability.md has the figures
#   PLANTS="edge" bash hack/sieve-planted.sh   one of: edge, duplicate, port, minimum
#
# | plant     | the bug                                                 | caught by                 | the report must say |
# |-----------|---------------------------------------------------------|---------------------------|---------------------|
# | edge      | an edge-triggered create: the Deployment only for the   | unobserved state (the     | missing: Deployment memcached-sample |
# |           | first version (generation 1) of the Memcached           | ADDED withheld)           |                     |
# | duplicate | a create without an existence check: the first          | intermediate state (a     | extra: Deployment memcached-sample-* |
# |           | reconcile (no status yet) creates with generateName     | crash after the create)   |                     |
# | port      | a spec field not propagated on update: an existing      | the differential oracle   | .spec.template.spec.containers[0].ports[0].containerPort |
# |           | Deployment keeps its container port                     |                           |                     |
# | minimum   | a validation gap: `size` without its minimum, so a      | the complaints oracle     | a Warning Event after step 3 (spec.size: negative |
# |           | negative size is stored, then refused by the controller | (Warning Event, Ready=False) |                  |
#
# The last is the template as it was before finding 18 (docs/reliability.md).
# KCR: the kcr binary (default: the one build's). Exit 0: every plant caught as it must be.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO_ROOT"
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$CACHE_ROOT/cargo-target}
KCR=${KCR:-$CARGO_TARGET_DIR/debug/kcr}
PLANTS=${PLANTS:-edge duplicate port minimum}
log() { printf '[sieve-planted] %s\n' "$*" >&2; }
[ -x "$KCR" ] || { log "no kcr binary at $KCR (cargo build -p kcr, or set KCR)"; exit 3; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sieve-planted.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
rc=0
for plant in $PLANTS; do
  project=$work/$plant/guestbook
  bash testdata/generate.sh "$KCR" "$project" "$REPO_ROOT" 2>"$work/$plant.kcr.log"
  cp Cargo.lock "$project/Cargo.lock"
  # The Memcached sample only: the plants are in its controller.
  rm "$project/deploy/samples/webapp_v1_guestbook.yaml"
  python3 - "$project/src" "$plant" <<'PY'
import sys
root, plant = sys.argv[1], sys.argv[2]
path = root + ("/api/memcached_v1alpha1.rs" if plant == "minimum" else "/controller/memcached.rs")
src = open(path).read()
def plant_at(anchor, code, before=True):
    global src
    assert anchor in src, f"the anchor of {plant} is gone: {anchor!r}"
    src = src.replace(anchor, code + anchor if before else anchor + code, 1)
if plant == "edge":
    plant_at("        // 3. The Deployment. A failure is reported, then retried with backoff.\n",
        "        // PLANTED BUG (edge-triggered create): only the first version makes one.\n"
        "        if memcached.metadata.generation != Some(1)\n"
        "            && self.deployments.get(request.namespace_or_empty(), &request.name).is_err()\n"
        "        {\n            return Ok(Action::Done);\n        }\n")
elif plant == "duplicate":
    plant_at("        let written = match self.deployments.get(&namespace, &name) {\n",
        "        // PLANTED BUG (a create without an existence check): the first reconcile\n"
        "        // (no status yet) creates, under a generated name, whatever exists.\n"
        "        if memcached.status.is_none() {\n"
        "            let mut first = desired.clone();\n"
        "            first.metadata.name = None;\n"
        "            first.metadata.generate_name = Some(format!(\"{name}-\"));\n"
        "            let created = api\n"
        "                .create(&PostParams::default(), &first)\n"
        "                .await\n"
        "                .map_err(|e| ApiError::new(\"create Deployment\", &namespace, &name, e))?;\n"
        "            return Ok(Some(created));\n"
        "        }\n")
elif plant == "port":
    plant_at("                desired.metadata.uid = current.metadata.uid.clone();\n",
        "                // PLANTED BUG (a spec field not propagated on update): an existing\n"
        "                // Deployment keeps its container port.\n"
        "                let port = |d: &Deployment| {\n"
        "                    d.spec.template.spec.as_ref()?.containers.first()?.ports.as_ref()?.first().map(|p| p.container_port)\n"
        "                };\n"
        "                if let Some(port) = port(&current)\n"
        "                    && let Some(pod) = desired.spec.template.spec.as_mut()\n"
        "                    && let Some(ports) = pod.containers[0].ports.as_mut()\n"
        "                {\n                    ports[0].container_port = port;\n                }\n",
        before=False)
elif plant == "minimum":
    anchor = "    #[schemars(range(min = 0))]\n    pub size: i32,\n"
    assert anchor in src, f"the anchor of {plant} is gone: {anchor!r}"
    src = src.replace(anchor, "    // PLANTED BUG (a validation gap): no minimum.\n    pub size: i32,\n", 1)
else:
    sys.exit(f"unknown plant {plant}")
open(path, "w").write(src)
PY
  updates=1 # size comes after containerPort in the schema: the minimum plant needs 2
  case $plant in
    edge) only=unobserved want='missing: Deployment memcached-sample' ;;
    duplicate) only=intermediate want='extra: Deployment memcached-sample-\*' ;;
    port) only=none want='ports\[0\]\.containerPort' ;;
    minimum) only=none want='Warning Event after step 3 (spec.size: negative' updates=2 ;;
  esac
  log "$plant: kcr sieve --only $only (the Memcached sample; results in $project/target/sieve)"
  status=0
  (cd "$project" && cargo run --quiet --bin manifests >/dev/null &&
    "$KCR" sieve --max-updates "$updates" --only "$only" --stop-at-first-failure \
      $([ "$plant" = port ] || echo --no-differential) >"$work/$plant.txt" 2>"$work/$plant.log") || status=$?
  report=$project/target/sieve/report.md
  if [ "$status" = 1 ] && grep -q "$want" "$report"; then
    log "$plant: caught, as it must be ($want)"
  else
    log "$plant: NOT caught (kcr sieve exit $status, want 1 and '$want' in $report)"
    tail -20 "$work/$plant.log" >&2
    rc=1
  fi
done
exit $rc
