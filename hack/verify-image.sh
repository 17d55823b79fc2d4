#!/usr/bin/env bash
# The Dockerfile and hack/image.sh must make the same image: the same files, user and
# entrypoint. Nobody here can `docker build` (no registry, no Docker engine), so:
#
#  1. statically: the Dockerfile's last stage and hack/image/Containerfile are the same
#     instructions (after mapping `--from=build /rootfs/` to `rootfs/` and `/out/` to
#     `bin/`), the Dockerfile runs hack/image/rootfs.sh with its default packages, and
#     it installs exactly the binaries hack/image.sh copies;
#  2. on the built image (podman, the image hack/image.sh made): user 65532:65532, the
#     entrypoint, and the file list equal to what rootfs.sh makes plus the three binaries
#     in /usr/local/bin, with no shell and no setuid file.
#
#   hack/verify-image.sh [IMAGE]     (default docker.io/library/kube-controllers-rs:dev;
#                                     step 2 is skipped with a notice when podman has no
#                                     such image)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMAGE=${1:-docker.io/library/kube-controllers-rs:dev}
fail() { printf '[verify-image] FAIL: %s\n' "$*" >&2; exit 1; }
log() { printf '[verify-image] %s\n' "$*" >&2; }

# instructions FILE: the non-comment, non-empty lines of the last stage.
last_stage() { awk '/^FROM /{ buf="" } !/^#/ && NF { buf = buf $0 "\n" } END { printf "%s", buf }' "$1"; }

docker_stage=$(last_stage "$REPO_ROOT/Dockerfile" | sed -e 's|COPY --from=build /rootfs/ /|COPY rootfs/ /|' \
  -e 's|COPY --from=build /out/ /usr/local/bin/|COPY bin/ /usr/local/bin/|')
containerfile=$(last_stage "$REPO_ROOT/hack/image/Containerfile")
[ "$docker_stage" = "$containerfile" ] || fail "the Dockerfile's last stage and hack/image/Containerfile differ:
--- Dockerfile (mapped)
$docker_stage
--- hack/image/Containerfile
$containerfile"
grep -qx 'RUN bash hack/image/rootfs.sh /rootfs' "$REPO_ROOT/Dockerfile" ||
  fail "the Dockerfile does not run 'bash hack/image/rootfs.sh /rootfs' (default packages)"
script_bins=$(sed -n 's/^CONTROLLER_BINARIES=(\(.*\))$/\1/p' "$REPO_ROOT/hack/image.sh" | tr ' ' '\n' | sort)
docker_bins=$(grep -o 'install -D target/release/[a-z-]* /out/[a-z-]*' "$REPO_ROOT/Dockerfile" |
  awk '{ split($3, a, "/"); split($4, b, "/"); if (a[3] != b[3]) print "MISMATCH"; else print a[3] }' | sort)
[ -n "$script_bins" ] && [ "$script_bins" = "$docker_bins" ] ||
  fail "binaries differ: hack/image.sh has [$(echo $script_bins)], the Dockerfile installs [$(echo $docker_bins)]"
log "ok: the Dockerfile's last stage = hack/image/Containerfile; same rootfs script; binaries: $(echo $script_bins)"

if ! command -v podman >/dev/null 2>&1 || ! podman image exists "$IMAGE" 2>/dev/null; then
  log "no podman image $IMAGE: the built image was not checked (run hack/image.sh first)"
  exit 0
fi
user=$(podman image inspect "$IMAGE" --format '{{.Config.User}}')
entry=$(podman image inspect "$IMAGE" --format '{{json .Config.Entrypoint}}')
[ "$user" = 65532:65532 ] || fail "image user is '$user', want 65532:65532"
want_entry=$(sed -n 's/^ENTRYPOINT //p' "$REPO_ROOT/hack/image/Containerfile" | tr -d ' ')
[ "$(echo "$entry" | tr -d ' ')" = "$want_entry" ] || fail "entrypoint $entry, want $want_entry"

work=$(mktemp -d)
trap 'rm -rf "$work"; podman rm -f verify-image-$$ >/dev/null 2>&1 || true' EXIT
podman create -q --name "verify-image-$$" "$IMAGE" >/dev/null
podman export "verify-image-$$" | tar -t | sed -e 's|^\./||' -e 's|/$||' | grep -v '^$' | LC_ALL=C sort -u >"$work/image"
bash "$REPO_ROOT/hack/image/rootfs.sh" "$work/rootfs" 2>/dev/null
mkdir -p "$work/rootfs/usr/local/bin"
for b in $script_bins; do touch "$work/rootfs/usr/local/bin/$b"; done
(cd "$work/rootfs" && find . -mindepth 1 | sed 's|^\./||') | LC_ALL=C sort -u >"$work/want"
if ! diff -u "$work/want" "$work/image" >"$work/diff"; then
  head -40 "$work/diff" >&2
  fail "the image's files differ from rootfs.sh's plus the binaries (- expected, + in the image)"
fi
grep -qx -e 'bin/sh' -e 'usr/bin/sh' -e 'bin/bash' "$work/image" && fail "the image has a shell"
podman export "verify-image-$$" | tar -tv | awk '$1 ~ /s/ { print }' | grep . && fail "setuid/setgid files in the image"
log "ok: $IMAGE runs as 65532:65532, entrypoint $entry, $(wc -l <"$work/image") paths = rootfs.sh + $(echo $script_bins | wc -w) binaries, no shell, no setuid"
