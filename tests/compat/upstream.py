"""Where the compatibility tests find upstream's gabbi files and the real clients.

They live in a throwaway venv that ``tools/compat.sh`` creates (``./dev test`` runs
it): upstream's openstack-placement is installed there only for its gabbi YAML files,
which are read in place and never copied into this repository.
"""

from __future__ import annotations

import os
from pathlib import Path

VENV_ENV = "MOORAGE_COMPAT_VENV"
PLACEMENT_VERSION = "16.0.0"
HOW_TO_CREATE = (
    "Create it with `tools/compat.sh` (`./dev test` runs it), or point "
    f"{VENV_ENV} at a venv holding openstack-placement=={PLACEMENT_VERSION}, gabbi, "
    "python-openstackclient, osc-placement and openstacksdk."
)


class CompatVenvMissing(RuntimeError):
    """The compat venv, or something the tests need in it, is not there."""


def venv_path() -> Path:
    """The compat venv: $MOORAGE_COMPAT_VENV, else tools/compat.sh's default place."""
    configured = os.environ.get(VENV_ENV)
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "moorage" / "compat-venv"


def venv_tool(name: str) -> Path:
    """An executable of the compat venv (gabbi-run, openstack, python)."""
    path = venv_path() / "bin" / name
    if not os.access(path, os.X_OK):
        raise CompatVenvMissing(f"{path} is missing. {HOW_TO_CREATE}")
    return path


def gabbits_dir() -> Path:
    """Upstream's gabbi YAML files, inside the installed openstack-placement."""
    found = sorted((venv_path() / "lib").glob(
        "python3*/site-packages/placement/tests/functional/gabbits"))
    if not found or not any(found[0].glob("*.yaml")):
        raise CompatVenvMissing(
            f"no upstream gabbi files under {venv_path()}. {HOW_TO_CREATE}")
    return found[0]
