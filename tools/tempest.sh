#!/usr/bin/env bash
# Create the throwaway venv of Tempest (tests/compat/tempest_run.py runs it against a
# Moorage cloud): upstream's tempest from PyPI with its dependencies, in a venv of its own
# (its pins are not the clients'). Idempotent (a stamp file names what is installed);
# prints the venv's path. Exits non-zero, saying why, when it cannot (then the Tempest
# test fails, saying how to fix).
set -euo pipefail

venv=${MOORAGE_TEMPEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/tempest-venv}
python=${PYTHON:-python3}

# What the figures of docs/compatibility.md were measured with; change them together.
tempest=tempest==47.0.0

stamp="$venv/.installed-$(echo "$tempest" | tr ' =' '_-')"
if [ ! -f "$stamp" ]; then
  echo "tempest.sh: installing $tempest into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "$tempest" >&2
  touch "$stamp"
fi

for tool in tempest stestr subunit2csv; do
  [ -x "$venv/bin/$tool" ] || { echo "tempest.sh: $venv/bin/$tool missing" >&2; exit 1; }
done
echo "$venv"
