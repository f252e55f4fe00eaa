#!/usr/bin/env bash
# Create the throwaway venv of the real Glance the tests run (tests/glance_fixtures.py):
# upstream's glance from PyPI with its dependencies (glance-manage, the WSGI
# application, the paste file under the venv's etc/glance), which tests/glance_server.py
# serves with the standard library's server. Idempotent (a stamp file names what is
# installed); prints the venv's path. Exits non-zero, saying why, when it cannot (then
# the Glance tests fail, saying how to fix).
set -euo pipefail
. "$(dirname "$0")/venv.sh"

venv=${MOORAGE_GLANCE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/glance-venv}
# What the tests were measured with; change together with docs/compatibility.md.
glance=glance==33.0.0

throwaway_venv glance.sh "$venv" "$glance"
require_tools glance.sh "$venv" glance-manage
[ -f "$venv/etc/glance/glance-api-paste.ini" ] || {
  echo "glance.sh: $venv/etc/glance/glance-api-paste.ini missing" >&2; exit 1; }
echo "$venv"
