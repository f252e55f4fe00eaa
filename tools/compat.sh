#!/usr/bin/env bash
# Create the throwaway venv of the compatibility tests (tests/compat/): upstream's gabbi
# runner, and the real clients (the openstack CLI with osc-placement, openstacksdk,
# novaclient).
# openstack-placement is installed with its dependencies: its gabbi YAML files
# (site-packages/placement/tests/functional/gabbits) are read at test time, never copied
# into this repository; and its service is run (tests/compat/upstream_placement_server.py)
# by the tests of Moorage's clients that must work against upstream (scheduler preflight).
# Idempotent (a stamp file names what is installed); prints the venv's path.
# Exits non-zero, saying why, when it cannot (then the compat tests fail, saying how to fix).
set -euo pipefail

venv=${MOORAGE_COMPAT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/compat-venv}
python=${PYTHON:-python3}

# What the tests were measured with; change together with docs/compatibility.md.
placement=openstack-placement==16.0.0
tools=(gabbi==4.2.3 python-openstackclient==10.5.0 osc-placement==4.9.1 openstacksdk==4.22.0
       python-novaclient==18.13.1)

stamp="$venv/.installed-$(echo "$placement ${tools[*]}" | tr ' =' '_-')-with-service"
if [ ! -f "$stamp" ]; then
  echo "compat.sh: installing $placement (gabbi files and service) and ${tools[*]} into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "${tools[@]}" >&2
  "$venv/bin/python" -m pip install --quiet "$placement" >&2
  touch "$stamp"
fi

gabbits=$("$venv/bin/python" -c \
  'import pathlib, placement; print(pathlib.Path(placement.__file__).parent / "tests/functional/gabbits")')
count=$(find "$gabbits" -maxdepth 1 -name '*.yaml' | wc -l)
[ "$count" -gt 0 ] || { echo "compat.sh: no gabbi files in $gabbits" >&2; exit 1; }
for tool in gabbi-run openstack nova; do
  [ -x "$venv/bin/$tool" ] || { echo "compat.sh: $venv/bin/$tool missing" >&2; exit 1; }
done
echo "$venv"
