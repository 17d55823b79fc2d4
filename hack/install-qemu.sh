#!/usr/bin/env bash
# Installs the local hypervisor that crates/controllers/vm-driver's QemuDriver (and its tests in
# crates/controllers/vm-driver/tests/qemu.rs) need: qemu-system-x86_64 and qemu-img, from the
# Debian packages qemu-system-x86 and qemu-utils.
#
# Idempotent and quiet: when both binaries are already on PATH it prints nothing and
# exits 0. Otherwise it runs `apt-get update` once and installs the packages without
# recommends. Runs as root (CI and the dev container); uses sudo when it is not root
# and sudo exists.
#
# Usage: hack/install-qemu.sh
set -euo pipefail

need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v qemu-img >/dev/null 2>&1 || need+=(qemu-utils)
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "[install-qemu] error: apt-get not found; install ${need[*]} (qemu-system-x86_64, qemu-img) yourself" >&2
  exit 1
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "[install-qemu] error: not root and no sudo" >&2; exit 1; }
  SUDO=sudo
fi

echo "[install-qemu] installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null

for bin in qemu-system-x86_64 qemu-img; do
  command -v "$bin" >/dev/null 2>&1 || { echo "[install-qemu] error: $bin still missing after install" >&2; exit 1; }
done
echo "[install-qemu] $(qemu-system-x86_64 --version | head -n1)" >&2
