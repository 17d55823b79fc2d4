#!/usr/bin/env bash
# Installs the browser the pipeline page's test drives
# (cmd/sample-controller/tests/e2e/pipeline.rs): Debian's chromium and
# chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver), and a font with Traditional
# Chinese glyphs (fonts-wqy-microhei) for the page's zh-TW screenshot.
#
# Idempotent and quiet: when both binaries are already there it prints nothing and
# exits 0. Otherwise it runs `apt-get update` once and installs the packages. Runs as
# root (CI and the dev container); uses sudo when it is not root and sudo exists.
#
# Usage: hack/install-chromium.sh
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
# A font with Traditional Chinese glyphs, for the zh-TW screenshot of the page (small:
# WenQuanYi Micro Hei, about 5 MB).
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
[ ${#need[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "[install-chromium] error: apt-get not found; install ${need[*]} (/usr/bin/chromium, /usr/bin/chromedriver) yourself" >&2
  exit 1
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "[install-chromium] error: not root and no sudo" >&2; exit 1; }
  SUDO=sudo
fi

echo "[install-chromium] installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq "${need[@]}" >/dev/null

for bin in /usr/bin/chromium /usr/bin/chromedriver; do
  [ -x "$bin" ] || { echo "[install-chromium] error: $bin still missing after install" >&2; exit 1; }
done
echo "[install-chromium] $(/usr/bin/chromium --version 2>/dev/null | head -n1)" >&2
