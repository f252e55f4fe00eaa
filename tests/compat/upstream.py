"""Where the compatibility tests find upstream's gabbi files and the real clients.

They live in a throwaway venv that ``tools/compat.sh`` creates (``./dev test`` runs
it): upstream's openstack-placement is installed there for its gabbi YAML files,
which are read in place and never copied into this repository, and with its service
dependencies, so that ``UpstreamPlacement`` can run upstream's service for the tests
of Moorage's clients that must work against it (the scheduler preflight).
"""

from __future__ import annotations

import select
import subprocess
from pathlib import Path

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
    fresh SQLite database (``upstream_placement_server.py``); ``stop()`` ends it."""

    def __init__(self, workdir: Path, timeout: float = 120.0) -> None:
        python = venv_tool("python")
        workdir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = workdir / "upstream-placement.log"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [str(python), str(SERVER_SCRIPT), str(workdir / "placement.sqlite")],
            stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL)
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            self.stop()
            reason = self.stderr_path.read_text(errors="replace").strip().splitlines()
            raise CompatVenvMissing(
                f"upstream placement did not start from {python}: "
                f"{reason[-1] if reason else 'no port within ' + str(timeout) + 's'}. "
                f"{HOW_TO_CREATE}")
        self.url = f"http://127.0.0.1:{line}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
