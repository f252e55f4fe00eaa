#!/usr/bin/env bash
# Install headless Chromium (and a font, so text is drawn) for the test that opens the
# HTML report of `moorage run` in a real browser. Debian's packages, as root; idempotent.
# Exits non-zero, saying why, when it cannot (then that test fails, saying how to install).
set -euo pipefail

packages=(chromium fonts-dejavu-core)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "chromium.sh: missing ${missing[*]} and not root on Debian: cannot install them" >&2
    exit 1
  fi
  echo "chromium.sh: installing ${missing[*]}" >&2
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  # --no-install-recommends: headless use needs none of the desktop integration.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi
command -v chromium >/dev/null || { echo "chromium.sh: chromium not on PATH" >&2; exit 1; }
chromium --version 2>/dev/null
