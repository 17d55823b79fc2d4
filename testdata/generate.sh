#!/usr/bin/env bash
# The commands that make testdata/project (kubebuilder's testdata/project-v4): the
# golden output of `kcr` for fixed inputs, committed so every reader sees what the
# scaffold writes and every change to it is reviewed.
#
#   testdata/generate.sh KCR DIR RUNTIME_PATH
#
# cmd/kcr/tests/golden.rs runs it with RUNTIME_PATH=../.. (so testdata/project builds in
# place) and compares DIR with testdata/project (UPDATE_GOLDEN=1 rewrites it);
# hack/e2e-scaffold.sh runs it with an absolute RUNTIME_PATH and builds, tests and
# deploys the result.
set -euo pipefail
KCR=$1 DIR=$2 RUNTIME_PATH=$3
mkdir -p "$DIR"
cd "$DIR"
"$KCR" init --domain my.domain --repo my.domain/guestbook --project-name guestbook \
  --runtime-path "$RUNTIME_PATH"
"$KCR" create api --group webapp --version v1 --kind Guestbook
"$KCR" create api --group cache --version v1alpha1 --kind Memcached \
  --image memcached:1.6-alpine --image-container-port 11211
"$KCR" create webhook --group webapp --version v1 --kind Guestbook \
  --defaulting --programmatic-validation
