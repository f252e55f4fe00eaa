# Sourced by tools/*.sh: the throwaway venvs of the real OpenStack components the tests
# run (Keystone, Glance, Tempest), each pinned to what the tests were measured with.
#
# throwaway_venv TOOL VENV SPEC...
#   Create VENV with pip's SPECs installed, once: a stamp file names what is installed,
#   so a changed pin reinstalls and an unchanged one costs nothing. TOOL names the
#   caller in its messages. Needs PYTHON (default python3).
throwaway_venv() {
  local tool=$1 venv=$2
  shift 2
  local stamp
  stamp="$venv/.installed-$(echo "$*" | tr ' =' '_-')"
  if [ ! -f "$stamp" ]; then
    echo "$tool: installing $* into $venv" >&2
    mkdir -p "$(dirname "$venv")"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "$@" >&2
    touch "$stamp"
  fi
}

# require_tools TOOL VENV EXECUTABLE...: each of VENV's bin/EXECUTABLEs is there.
require_tools() {
  local tool=$1 venv=$2
  shift 2
  local name
  for name in "$@"; do
    [ -x "$venv/bin/$name" ] || { echo "$tool: $venv/bin/$name missing" >&2; exit 1; }
  done
}
