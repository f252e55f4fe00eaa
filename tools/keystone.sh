#!/usr/bin/env bash
# Create the throwaway venv of the real Keystone the tests run (tests/keystone_fixtures.py):
# upstream's keystone from PyPI with its dependencies (keystone-manage, and the WSGI
# application, which tests/keystone_server.py serves with the standard library's server).
# Idempotent (a stamp file names what is installed); prints the venv's path.
# Exits non-zero, saying why, when it cannot (then the keystone tests fail, saying how to fix).
set -euo pipefail
. "$(dirname "$0")/venv.sh"

venv=${MOORAGE_KEYSTONE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/keystone-venv}
# What the tests were measured with; change together with docs/compatibility.md.
keystone=keystone==30.0.0

throwaway_venv keystone.sh "$venv" "$keystone"
require_tools keystone.sh "$venv" keystone-manage
# Cheap checks (importing keystone takes seconds; the tests do it, and say why it fails).
"$venv/bin/python" - "${keystone#keystone==}" <<'PY' || { echo "keystone.sh: $venv does not hold $keystone and its WSGI application" >&2; exit 1; }
import importlib.metadata, pathlib, sys, sysconfig
assert importlib.metadata.version("keystone") == sys.argv[1]
assert (pathlib.Path(sysconfig.get_paths()["purelib"]) / "keystone/server/flask/core.py").is_file()
PY
echo "$venv"
