"""A real Glance for the tests: upstream's glance from the venv ``tools/glance.sh`` creates
(``./dev test`` runs it and exports ``MOORAGE_GLANCE_VENV``), with a SQLite database and
the file store in a directory of its own, behind keystonemiddleware as a deployment's
(``[paste_deploy] flavor = keystone``), served by ``tests/glance_server.py`` on a free
port of 127.0.0.1, over https when given a certificate (``tests.tls``).

``Glance.start`` syncs its database (``glance-manage db_sync``, about 2 s) and waits
until it answers; ``register`` puts it in Keystone's catalog as the ``image`` service.
Without the venv the tests that need it FAIL, saying how to create it; they never skip.
"""

from __future__ import annotations

import ssl
import subprocess
import time
from pathlib import Path

import requests

from tests import venvs
from tests.keystone_fixtures import Keystone, User
from tests.tls import ServerCertificate

VENV_ENV = "MOORAGE_GLANCE_VENV"
HOW_TO_CREATE = (
    f"Create it with `tools/glance.sh` (`./dev test` runs it), or point {VENV_ENV} at a "
    "venv holding the glance release tools/glance.sh pins.")
SERVER_SCRIPT = Path(__file__).with_name("glance_server.py")


class GlanceMissing(RuntimeError):
    """The glance venv is not there, or Glance did not start from it."""


def venv_tool(name: str) -> Path:
    """An executable of the glance venv (glance-manage, python)."""
    venv = venvs.venv_path(VENV_ENV, "glance-venv")
    return venvs.executable(venv, name, GlanceMissing, HOW_TO_CREATE)


class Glance:
    """One Glance process, authenticating with ``keystone`` as ``user`` (its service
    user), in ``workdir``; https with ``tls``."""

    def __init__(self, workdir: Path, keystone: Keystone, user: User,
                 tls: ServerCertificate | None = None) -> None:
        self.workdir = workdir
        self.keystone = keystone
        self.tls = tls
        self.url = ""
        self._process: subprocess.Popen[bytes] | None = None
        workdir.mkdir(parents=True, exist_ok=True)
        paste = venv_tool("python").parent.parent / "etc/glance/glance-api-paste.ini"
        auth = "".join(f"{key} = {value}\n"
                       for key, value in keystone.authtoken_section(user).items())
        stores = {name: workdir / name for name in ("images", "staging", "tasks")}
        (workdir / "glance-api.conf").write_text(
            "[DEFAULT]\n"
            f"log_file = {workdir / 'glance-api.log'}\n"
            "enabled_backends = local:file\n"
            "[database]\n"
            f"connection = sqlite:///{workdir / 'glance.sqlite'}\n"
            "[glance_store]\ndefault_backend = local\n"
            f"[local]\nfilesystem_store_datadir = {stores['images']}\n"
            f"[os_glance_staging_store]\nfilesystem_store_datadir = {stores['staging']}\n"
            f"[os_glance_tasks_store]\nfilesystem_store_datadir = {stores['tasks']}\n"
            f"[paste_deploy]\nflavor = keystone\nconfig_file = {paste}\n"
            f"[keystone_authtoken]\n{auth}")

    def start(self, timeout: float = 120.0) -> Glance:
        config = self.workdir / "glance-api.conf"
        synced = subprocess.run(
            [str(venv_tool("glance-manage")), "--config-file", str(config), "db_sync"],
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
            check=False)
        if synced.returncode != 0:
            raise GlanceMissing(f"glance-manage db_sync failed: {synced.stderr[-2000:]}")
        tls = [str(self.tls.cert_file), str(self.tls.key_file)] if self.tls else []
        self._process, port = venvs.start_server(
            [str(venv_tool("python")), str(SERVER_SCRIPT), str(self.workdir), *tls],
            self.workdir / "glance-server.err", GlanceMissing, "glance", timeout,
            HOW_TO_CREATE)
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{port}"
        self._wait_answering(timeout)
        return self

    def _wait_answering(self, timeout: float) -> None:
        verify: str | bool = str(self.tls.ca_file) if self.tls else True
        deadline = time.monotonic() + timeout
        while True:
            try:
                if requests.get(self.url, timeout=10, verify=verify).status_code == 300:
                    return
            except (requests.ConnectionError, ssl.SSLError):
                pass
            if time.monotonic() > deadline:
                raise GlanceMissing(f"glance at {self.url} did not answer in {timeout}s")
            time.sleep(0.2)

    def register(self) -> None:
        """Glance as the catalog's image service."""
        self.keystone.register("image", "glance", self.url)

    def stop(self) -> None:
        venvs.stop_server(self._process)
