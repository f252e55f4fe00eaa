#!/usr/bin/env bash
# Create the throwaway venv of Tempest (tests/compat/tempest_run.py runs it against a
# Moorage cloud): upstream's tempest from PyPI with its dependencies, in a venv of its own
# (its pins are not the clients'). Idempotent (a stamp file names what is installed);
# prints the venv's path. Exits non-zero, saying why, when it cannot (then the Tempest
# test fails, saying how to fix).
set -euo pipefail
. "$(dirname "$0")/venv.sh"

venv=${MOORAGE_TEMPEST_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/tempest-venv}
# What the figures of docs/compatibility.md were measured with; change them together.
tempest=tempest==47.0.0

throwaway_venv tempest.sh "$venv" "$tempest"
require_tools tempest.sh "$venv" tempest stestr subunit2csv
echo "$venv"
