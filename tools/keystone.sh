#!/usr/bin/env bash
# Create the throwaway venv of the real Keystone the tests run (tests/keystone_fixtures.py):
# upstream's keystone from PyPI with its dependencies (keystone-manage, and the WSGI
# application, which tests/keystone_server.py serves with the standard library's server).
# Idempotent (a stamp file names what is installed); prints the venv's path.
# Exits non-zero, saying why, when it cannot (then the keystone tests fail, saying how to fix).
set -euo pipefail

venv=${MOORAGE_KEYSTONE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/moorage/keystone-venv}
python=${PYTHON:-python3}

# What the tests were measured with; change together with docs/compatibility.md.
keystone=keystone==30.0.0

stamp="$venv/.installed-$(echo "$keystone" | tr ' =' '_-')"
if [ ! -f "$stamp" ]; then
  echo "keystone.sh: installing $keystone into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "$keystone" >&2
  touch "$stamp"
fi

[ -x "$venv/bin/keystone-manage" ] || { echo "keystone.sh: $venv/bin/keystone-manage missing" >&2; exit 1; }
# Cheap checks (importing keystone takes seconds; the tests do it, and say why it fails).
"$venv/bin/python" - "${keystone#keystone==}" <<'PY' || { echo "keystone.sh: $venv does not hold $keystone and its WSGI application" >&2; exit 1; }
import importlib.metadata, pathlib, sys, sysconfig
assert importlib.metadata.version("keystone") == sys.argv[1]
assert (pathlib.Path(sysconfig.get_paths()["purelib"]) / "keystone/server/flask/core.py").is_file()
PY
echo "$venv"
