#!/usr/bin/env bash
# Install what the libvirt driver's tests need: libvirt with its QEMU driver, QEMU for
# x86 (TCG guests), the RNG schemas and xmllint, and the headers libvirt-python builds
# against. Debian's packages, as root; idempotent. Exits non-zero, saying why, when it
# cannot (then the libvirt tests fail loudly unless MOORAGE_TEST_SKIP_LIBVIRT=1).
set -euo pipefail

packages=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86
          qemu-utils libxml2-utils libvirt-dev pkg-config
          # emulated TPMs (swtpm) and UEFI/secure-boot firmware (OVMF) for guests
          swtpm swtpm-tools ovmf)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "libvirt.sh: missing ${missing[*]} and not root on Debian: cannot install them" >&2
    exit 1
  fi
  echo "libvirt.sh: installing ${missing[*]}" >&2
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  # --no-install-recommends: recommends would pull in two hundred more packages.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    "${missing[@]}" >&2
fi
# libvirt looks the QEMU user up before reading qemu.conf; the package creates it, but a
# machine without it cannot start QEMU at all.
id libvirt-qemu >/dev/null 2>&1 || { echo "libvirt.sh: user libvirt-qemu missing" >&2; exit 1; }
command -v qemu-system-x86_64 >/dev/null
test -f /usr/share/libvirt/schemas/domain.rng
echo "libvirt $(virsh --version 2>/dev/null), $(qemu-system-x86_64 --version | head -n 1)"
