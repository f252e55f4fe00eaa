"""Where the compatibility tests find upstream's gabbi files and the real clients.

They live in a throwaway venv that ``tools/compat.sh`` creates (``./dev test`` runs
it): upstream's openstack-placement is installed there for its gabbi YAML files,
which are read in place and never copied into this repository, and with its service
dependencies, so that ``UpstreamPlacement`` can run upstream's service for the tests
of Moorage's clients that must work against it (the scheduler preflight).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tests import venvs

VENV_ENV = "MOORAGE_COMPAT_VENV"
PLACEMENT_VERSION = "16.0.0"
HOW_TO_CREATE = (
    "Create it with `tools/compat.sh` (`./dev test` runs it), or point "
    f"{VENV_ENV} at a venv holding openstack-placement=={PLACEMENT_VERSION} (with its "
    "dependencies), gabbi, "
    "python-openstackclient, osc-placement, openstacksdk and python-novaclient."
)


class CompatVenvMissing(RuntimeError):
    """The compat venv, or something the tests need in it, is not there."""


def venv_path() -> Path:
    """The compat venv: $MOORAGE_COMPAT_VENV, else tools/compat.sh's default place."""
    return venvs.venv_path(VENV_ENV, "compat-venv")


def venv_tool(name: str) -> Path:
    """An executable of the compat venv (gabbi-run, openstack, python)."""
    return venvs.executable(venv_path(), name, CompatVenvMissing, HOW_TO_CREATE)


def gabbits_dir() -> Path:
    """Upstream's gabbi YAML files, inside the installed openstack-placement."""
    found = sorted((venv_path() / "lib").glob(
        "python3*/site-packages/placement/tests/functional/gabbits"))
    if not found or not any(found[0].glob("*.yaml")):
        raise CompatVenvMissing(
            f"no upstream gabbi files under {venv_path()}. {HOW_TO_CREATE}")
    return found[0]


SERVER_SCRIPT = Path(__file__).with_name("upstream_placement_server.py")


class UpstreamPlacement:
    """Upstream's placement service, started from the compat venv on a free port with a
    fresh SQLite database (``upstream_placement_server.py``); ``stop()`` ends it.
    ``authtoken``: a ``[keystone_authtoken]`` section, for a placement that validates
    Keystone's tokens (noauth2 without)."""

    def __init__(self, workdir: Path, timeout: float = 120.0,
                 authtoken: Mapping[str, object] | None = None) -> None:
        python = venv_tool("python")
        workdir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = workdir / "upstream-placement.log"
        config: list[str] = []
        if authtoken is not None:
            path = workdir / "placement.conf"
            path.write_text("[keystone_authtoken]\n" + "".join(
                f"{key} = {value}\n" for key, value in authtoken.items()))
            config = [str(path)]
        self.process, port = venvs.start_server(
            [str(python), str(SERVER_SCRIPT), str(workdir / "placement.sqlite"), *config],
            self.stderr_path, CompatVenvMissing, f"upstream placement from {python}",
            timeout, HOW_TO_CREATE)
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        venvs.stop_server(self.process)


def started(workdir: Path, authtoken: Mapping[str, object] | None = None
            ) -> UpstreamPlacement:
    """Upstream placement started in ``workdir``; the test fails, saying how to create
    the compat venv, when it cannot be."""
    try:
        return UpstreamPlacement(workdir, authtoken=authtoken)
    except CompatVenvMissing as error:
        pytest.fail(str(error), pytrace=False)
