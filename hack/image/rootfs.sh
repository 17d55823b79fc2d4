#!/usr/bin/env bash
# The runtime root filesystem of the controllers' image, made from Debian's own packages:
# glibc, libgcc's unwinder and the CA certificates, a non-root user (uid 65532), /tmp, and
# nothing else (no shell, no package manager).
#
#   hack/image/rootfs.sh OUT_DIR [PACKAGE...]
#
# Without packages: the controllers' image (the list below). hack/image.sh also uses it
# for the nginx image of the real-node demo (Debian's nginx and its libraries).
#
# Why not a base image: the image must build where no registry answers (our CI machines
# reach Debian's packages, not Docker Hub or gcr.io). distroless (gcr.io/distroless/cc)
# is made the same way, from .deb files unpacked into a directory, so this is its recipe
# in a few lines of shell: `apt-get download` fetches the packages Debian bookworm would
# install, `dpkg-deb -x` unpacks them WITHOUT running their scripts (nothing executes
# inside the image), and the two files a maintainer script would have written (the CA
# bundle, the user database) are written here.
#
# The Dockerfile runs this same script in its build stage (rust:1.95-bookworm is Debian
# bookworm too) and hack/image.sh runs it on the host, so both images have the same files;
# hack/verify-image.sh checks that.
#
# Needs: Debian bookworm's apt (apt-get download, dpkg-deb). The .deb files are cached in
# $IMAGE_DEB_CACHE (default ~/.cache/kube-controllers-rs/image-debs).
set -euo pipefail

# The packages and why each: libc6 (glibc: the binaries link it dynamically), libgcc-s1
# (the unwinder Rust's panic=unwind uses), ca-certificates (the Mozilla roots, for a
# controller that talks to something besides the API server, whose CA is mounted).
PACKAGES=(libc6 libgcc-s1 ca-certificates)
NONROOT_UID=65532

out=${1:?usage: hack/image/rootfs.sh OUT_DIR [PACKAGE...]}
shift
[ $# -eq 0 ] || PACKAGES=("$@")
cache=${IMAGE_DEB_CACHE:-${KUBE_CONTROLLERS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-controllers-rs}/image-debs}
log() { printf '[rootfs] %s\n' "$*" >&2; }

mkdir -p "$cache" "$out"
# Download each package once (apt-get download names the file after its version, so a
# Debian point release downloads the new version next to the old one).
download() {
  (cd "$cache" && apt-get download -qq "${PACKAGES[@]}" 2>/dev/null) && return 0
  log "apt-get download failed; updating the package lists once"
  apt-get update -qq >/dev/null
  (cd "$cache" && apt-get download -qq "${PACKAGES[@]}")
}
download
for p in "${PACKAGES[@]}"; do
  v=$(apt-cache policy "$p" | awk '/Candidate:/ { print $2 }')
  deb=$(ls "$cache/${p}_${v//:/%3a}_"*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { log "error: no .deb for $p $v in $cache"; exit 1; }
  log "unpacking $(basename "$deb")"
  dpkg-deb -x "$deb" "$out"
done

# What a maintainer script or a man page would need, and a container never reads:
# documentation (the copyright files stay: they are the licences), lintian overrides,
# update-ca-certificates (a Perl-free shell script with no shell to run it).
find "$out/usr/share/doc" -type f ! -name copyright -delete
find "$out/usr/share/doc" -type l -delete
rm -rf "$out/usr/share/lintian" "$out/usr/share/man" "$out/usr/sbin/update-ca-certificates" \
  "$out/etc/ca-certificates" "$out/usr/share/ca-certificates/mozilla/"*.txt 2>/dev/null || true
find "$out" -depth -type d -empty -delete

# The CA bundle update-ca-certificates would write: every certificate the package ships
# (its default configuration enables all of them), in file-name order.
if [ -d "$out/usr/share/ca-certificates" ]; then
  mkdir -p "$out/etc/ssl/certs"
  find "$out/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat >"$out/etc/ssl/certs/ca-certificates.crt"
fi

# The users and groups distroless has: root, nobody and nonroot (65532, the image's USER).
cat >"$out/etc/passwd" <<EOF
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:$NONROOT_UID:$NONROOT_UID:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$out/etc/group" <<EOF
root:x:0:
nobody:x:65534:
nonroot:x:$NONROOT_UID:
EOF
# glibc's resolver reads this; without it "hosts" would try DNS before /etc/hosts.
printf 'hosts: files dns\n' >"$out/etc/nsswitch.conf"
mkdir -p "$out/tmp" "$out/home/nonroot" "$out/usr/local/bin"
chmod 1777 "$out/tmp"
chmod 700 "$out/home/nonroot"
chown "$NONROOT_UID:$NONROOT_UID" "$out/home/nonroot" 2>/dev/null || true
log "root filesystem in $out: $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1)"
