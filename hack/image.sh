#!/usr/bin/env bash
# Build container images without a registry: the base is made here from Debian's packages
# (hack/image/rootfs.sh), the image with podman (Debian's package), the result saved as
# an OCI archive that `ctr images import`, `kind load image-archive` and `podman load`
# all read.
#
#   hack/image.sh [controllers|pause|nginx|all]     (default: controllers)
#   hack/image.sh operator BINARY IMAGE_NAME
#
#   controllers  kube-controllers-rs:dev: the three controller binaries on the runtime
#                root filesystem of rootfs.sh (glibc, CA certificates, uid 65532), the
#                same files, user and entrypoint as the Dockerfile (hack/verify-image.sh).
#   pause        registry.k8s.io/pause:<the release's version>: the sandbox image a
#                real node's containerd needs, built from pause.c in the pinned
#                k8s.io/kubernetes module (a static C program, compiled with gcc).
#   nginx        nginx-debian:<Debian's version>: Debian's nginx on its libraries, serving
#                /usr/share/nginx/html on port 80 like the official nginx image (what
#                MyWeb's Deployment mounts its page into).
#   operator     IMAGE_NAME: one operator binary (e.g. a `kcr` project's, such as
#                testdata/project's guestbook) on the same root filesystem, at
#                /usr/local/bin/<its file name>, user 65532, the binary as entrypoint:
#                the project's Dockerfile (distroless cc, nonroot) made without a
#                registry. IMAGE_NAME is what the project's deploy/ names (e.g.
#                my.domain/guestbook:dev); a name without a registry is stored as the
#                kubelet looks it up (guestbook:dev -> docker.io/library/guestbook:dev).
#                The archive is <last path element of the name>.oci.tar.
#
# Knobs:
#   IMAGE_OUT_DIR   where the archives go (default ~/.cache/kube-controllers-rs/images);
#                   each is <name>.oci.tar, and the script prints its path.
#   IMAGE_BIN_DIR   take the three binaries from this directory instead of building them
#                   (CI passes the dev-profile binaries its one cargo build made: the
#                   release build, fat LTO, costs about 10 CPU-minutes more).
#   IMAGE_TAG       the controllers' tag (default dev; deploy/ uses kube-controllers-rs:dev).
#
# Needs: root or rootless podman, Debian's apt (apt-get download), gcc for pause.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib/host.sh
source "$REPO_ROOT/hack/lib/host.sh"
CACHE_ROOT=${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}
OUT_DIR=${IMAGE_OUT_DIR:-$CACHE_ROOT/images}
CONTROLLER_BINARIES=(sample-controller vm-controller myweb-operator)
log() { printf '[image] %s\n' "$*" >&2; }
die() { printf '[image] error: %s\n' "$*" >&2; exit 1; }

ensure_tools() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v gcc >/dev/null 2>&1 || missing+=(gcc)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} with apt-get"
  apt_install "${missing[@]}" || die "install ${missing[*]} (podman builds the images)"
}

# build_image NAME CONTEXT: podman build CONTEXT (its Containerfile), saved as NAME's archive.
# --timestamp 0: the layers and the config carry no build time, so the same files give
# the same image ID.
build_image() {
  local name=$1 ctx=$2 archive
  archive=${name##*/}
  archive=$OUT_DIR/${archive%%[:@]*}.oci.tar
  mkdir -p "$OUT_DIR"
  podman build -q --timestamp 0 -t "$name" -f "$ctx/Containerfile" "$ctx" >/dev/null
  rm -f "$archive"
  podman save -q --format oci-archive -o "$archive" "$name"
  log "$name -> $archive ($(du -h "$archive" | cut -f1))"
  echo "$archive"
}

controllers() {
  local ctx=$1 bin_dir=${IMAGE_BIN_DIR:-} b
  if [ -z "$bin_dir" ]; then
    log "cargo build --release of the three binaries (fat LTO: several minutes cold)"
    (cd "$REPO_ROOT" && cargo build --release --locked -p sample-controller-bin -p vm-controller-bin -p myweb-operator-bin)
    bin_dir=$(cd "$REPO_ROOT" && cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release
  fi
  bash "$REPO_ROOT/hack/image/rootfs.sh" "$ctx/rootfs"
  mkdir -p "$ctx/bin"
  for b in "${CONTROLLER_BINARIES[@]}"; do
    [ -x "$bin_dir/$b" ] || die "no $b in $bin_dir"
    install -m 755 "$bin_dir/$b" "$ctx/bin/$b"
  done
  cp "$REPO_ROOT/hack/image/Containerfile" "$ctx/Containerfile"
  build_image "docker.io/library/kube-controllers-rs:${IMAGE_TAG:-dev}" "$ctx"
}

# operator CONTEXT BINARY IMAGE_NAME
operator() {
  local ctx=$1 bin=$2 name=$3 b first
  [ -f "$bin" ] && [ -x "$bin" ] || die "no executable binary at $bin"
  b=$(basename "$bin")
  # Docker's reference normalization (what the kubelet asks containerd for): a first
  # element without a dot or a port, other than localhost, is a Docker Hub name.
  [[ ${name##*/} == *[:@]* ]] || name=$name:latest
  first=${name%%/*}
  if [ "$first" = "$name" ]; then
    name=docker.io/library/$name
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
    name=docker.io/$name
  fi
  bash "$REPO_ROOT/hack/image/rootfs.sh" "$ctx/rootfs"
  install -D -m 755 "$bin" "$ctx/bin/$b"
  printf 'FROM scratch\nCOPY rootfs/ /\nCOPY bin/ /usr/local/bin/\nUSER 65532:65532\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$b" >"$ctx/Containerfile"
  build_image "$name" "$ctx"
}

pause() {
  local ctx=$1 mod version
  version=$(bash "$REPO_ROOT/hack/control-plane.sh" version)
  mod=$(cd "$REPO_ROOT/hack/tools/control-plane" && go mod download -json "k8s.io/kubernetes@$version" | jq -r .Dir)
  local pv
  pv=$(sed -n 's/^\s*PauseVersion = "\(.*\)"/\1/p' "$mod/cmd/kubeadm/app/constants/constants.go")
  [ -n "$pv" ] || die "no PauseVersion in k8s.io/kubernetes@$version"
  # The flags of build/pause/Makefile: small, static, warnings are errors.
  gcc -Os -Wall -Werror -static -DVERSION="v$pv" -o "$ctx/pause" "$mod/build/pause/linux/pause.c"
  strip "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
  build_image "registry.k8s.io/pause:$pv" "$ctx"
}

nginx() {
  local ctx=$1 v
  v=$(apt-cache policy nginx | awk '/Candidate:/ { print $2 }')
  bash "$REPO_ROOT/hack/image/rootfs.sh" "$ctx/rootfs" nginx nginx-common libc6 libcrypt1 libpcre2-8-0 libssl3 zlib1g
  # The official image's layout: pages in /usr/share/nginx/html, logs to the container's
  # stdout and stderr, temporary files in /tmp (the rest of the root can be read-only).
  mkdir -p "$ctx/rootfs/usr/share/nginx/html" "$ctx/rootfs/var/lib/nginx" "$ctx/rootfs/var/log/nginx"
  cat >"$ctx/rootfs/etc/nginx/nginx.conf" <<'EOF'
user nobody nogroup;
worker_processes 1;
pid /tmp/nginx.pid;
error_log stderr notice;
events { worker_connections 256; }
http {
  include /etc/nginx/mime.types;
  access_log /dev/stdout;
  client_body_temp_path /tmp/client_body;
  proxy_temp_path /tmp/proxy;
  fastcgi_temp_path /tmp/fastcgi;
  uwsgi_temp_path /tmp/uwsgi;
  scgi_temp_path /tmp/scgi;
  server {
    listen 80;
    root /usr/share/nginx/html;
    index index.html;
  }
}
EOF
  printf 'nogroup:x:65534:\n' >>"$ctx/rootfs/etc/group"
  printf '<h1>nginx from Debian</h1>\n' >"$ctx/rootfs/usr/share/nginx/html/index.html"
  printf 'FROM scratch\nCOPY rootfs/ /\nEXPOSE 80\nSTOPSIGNAL SIGQUIT\nENTRYPOINT ["/usr/sbin/nginx", "-g", "daemon off;"]\n' >"$ctx/Containerfile"
  build_image "docker.io/library/nginx-debian:${v%%-*}" "$ctx"
}

ensure_tools
what=${1:-controllers}
work=$(mktemp -d "${TMPDIR:-/tmp}/kube-controllers-rs-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
case $what in
controllers | pause | nginx) mkdir -p "$work/$what" && "$what" "$work/$what" ;;
all) for w in controllers pause nginx; do mkdir -p "$work/$w" && "$w" "$work/$w"; done ;;
operator)
  [ $# = 3 ] || die "usage: $0 operator BINARY IMAGE_NAME"
  mkdir -p "$work/operator" && operator "$work/operator" "$2" "$3"
  ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
