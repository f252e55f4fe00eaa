"""A real Keystone for the tests: upstream's keystone from the venv ``tools/keystone.sh``
creates (``./dev test`` runs it and exports ``MOORAGE_KEYSTONE_VENV``).

Start-up is paid once per session: ``keystone_template`` makes the fernet and
credential key repositories (``keystone-manage fernet_setup``, ``credential_setup``),
migrates a SQLite database (``db_sync``) and bootstraps it (``bootstrap``: the admin
user and project, the roles admin, manager, member, reader and service, RegionOne, the
identity endpoints): about 3 s of CPU. Each ``keystone`` (one per test module) copies
that directory and serves it (``tests/keystone_server.py``, run by the venv's python)
on a free port of 127.0.0.1: the copy costs milliseconds, the process's start about
2 s of CPU (its imports). The process dies with the test run (``PR_SET_PDEATHSIG``)
if the fixture cannot stop it.

``Keystone`` speaks the identity v3 API as its admin: projects, users with roles,
tokens, catalog services and endpoints; ``authtoken_section`` and ``openstack_env``
point a Moorage service's keystonemiddleware and the ``openstack`` CLI at it. Without
the venv the tests that need it FAIL, saying how to create it; they never skip.
"""

from __future__ import annotations

import contextlib
import getpass
import grp
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import requests

from tests import venvs

VENV_ENV = "MOORAGE_KEYSTONE_VENV"
HOW_TO_CREATE = (
    f"Create it with `tools/keystone.sh` (`./dev test` runs it), or point {VENV_ENV} at "
    "a venv holding the keystone release tools/keystone.sh pins."
)
SERVER_SCRIPT = Path(__file__).with_name("keystone_server.py")

REGION = "RegionOne"
DEFAULT_DOMAIN = "default"
ADMIN_PASSWORD = "keystone-admin-secret"
# What keystone-manage bootstrap makes; the template's identity endpoints name this
# URL until a copy, started on its port, points them at itself.
BOOTSTRAP_URL = "http://127.0.0.1:1/v3"
INTERFACES = ("public", "internal", "admin")


class KeystoneMissing(RuntimeError):
    """The keystone venv is not there, or keystone did not start from it."""


def venv_path() -> Path:
    """The keystone venv: $MOORAGE_KEYSTONE_VENV, else tools/keystone.sh's default place."""
    return venvs.venv_path(VENV_ENV, "keystone-venv")


def venv_tool(name: str) -> Path:
    """An executable of the keystone venv (keystone-manage, python)."""
    return venvs.executable(venv_path(), name, KeystoneMissing, HOW_TO_CREATE)


def write_config(directory: Path, token_expiration: int | None = None) -> Path:
    """keystone.conf for the database and key repositories in ``directory``. Passwords
    are hashed with bcrypt's fewest rounds (a password's token costs milliseconds, not
    a quarter of a second), and Keystone caches in its process (validating a token
    then costs 8 ms, not 100: the server is one process). ``token_expiration``: a
    token's life in seconds (Keystone's default: an hour)."""
    path = directory / "keystone.conf"
    path.write_text(
        ("" if token_expiration is None else f"[token]\nexpiration = {token_expiration}\n")
        + "[DEFAULT]\n"
        f"log_file = {directory / 'keystone.log'}\n"
        "[database]\n"
        f"connection = sqlite:///{directory / 'keystone.sqlite'}\n"
        "[fernet_tokens]\n"
        f"key_repository = {directory / 'fernet-keys'}\n"
        "[fernet_receipts]\n"
        f"key_repository = {directory / 'fernet-keys'}\n"
        "[credential]\n"
        f"key_repository = {directory / 'credential-keys'}\n"
        "[identity]\n"
        "password_hash_rounds = 4\n"
        "[cache]\n"
        "enabled = true\n"
        "backend = dogpile.cache.memory\n")
    return path


def make_template(directory: Path) -> Path:
    """A synced, bootstrapped Keystone database and its key repositories in
    ``directory``: what each ``Keystone`` copies. keystone-manage's commands run in
    one interpreter of the keystone venv (``keystone_server.py manage``)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = write_config(directory)
    owner = ["--keystone-user", getpass.getuser(),
             "--keystone-group", grp.getgrgid(os.getgid()).gr_name]
    urls = [f"--bootstrap-{interface}-url={BOOTSTRAP_URL}" for interface in INTERFACES]
    commands = [["fernet_setup", *owner], ["credential_setup", *owner], ["db_sync"],
                ["bootstrap", "--bootstrap-password", ADMIN_PASSWORD,
                 "--bootstrap-region-id", REGION, *urls]]
    log = directory / "keystone-manage.log"
    with log.open("wb") as output:
        done = subprocess.run(
            [str(venv_tool("python")), str(SERVER_SCRIPT), "manage", str(config),
             json.dumps(commands)],
            stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            timeout=600, check=False)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise KeystoneMissing(f"keystone-manage failed in {venv_path()} "
                              f"({done.returncode}):\n{tail}\n{HOW_TO_CREATE}")
    return directory


@dataclass(frozen=True)
class Project:
    id: str
    name: str


@dataclass(frozen=True)
class User:
    """A user with a role set on one project; its tokens are scoped to that project."""

    id: str
    name: str
    password: str
    project: Project
    roles: tuple[str, ...]


class Keystone:
    """One Keystone process serving a copy of the template, and its admin's client.
    ``token_expiration``: tokens live that many seconds (an hour by default); the
    admin's own is then renewed at half its life."""

    def __init__(self, template: Path, workdir: Path, *,
                 token_expiration: int | None = None) -> None:
        self.token_expiration = token_expiration
        self._admin: tuple[str, float] | None = None
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(template / "keystone.sqlite", workdir / "keystone.sqlite")
        for keys in ("fernet-keys", "credential-keys"):
            shutil.copytree(template / keys, workdir / keys)
        self.config = write_config(workdir, token_expiration)
        self.session = requests.Session()
        self._process: subprocess.Popen[bytes] | None = None
        self.url = ""

    @property
    def v3(self) -> str:
        return f"{self.url}/v3"

    def start(self, timeout: float = 120.0) -> Keystone:
        """Serve on a free port; then the identity endpoints name this copy's URL."""
        self._process, port = venvs.start_server(
            [str(venv_tool("python")), str(SERVER_SCRIPT), "serve", str(self.config)],
            self.workdir / "keystone-server.err", KeystoneMissing,
            f"keystone from {venv_path()}", timeout, HOW_TO_CREATE)
        self.url = f"http://127.0.0.1:{port}"
        identity = self.service_id("identity")
        for endpoint in self.call("GET", f"/endpoints?service_id={identity}")["endpoints"]:
            self.call("PATCH", f"/endpoints/{endpoint['id']}",
                      json={"endpoint": {"url": self.v3}})
        return self

    def stop(self) -> None:
        venvs.stop_server(self._process)

    # -- the identity API ----------------------------------------------------------------
    def request(self, method: str, path: str, *, token: str | None = None,
                json: Any = None) -> requests.Response:
        """``path`` below /v3, as the admin unless ``token`` says otherwise."""
        return self.session.request(
            method, self.v3 + path, json=json, timeout=60,
            headers={"X-Auth-Token": token or self.admin_token})

    def call(self, method: str, path: str, *, json: Any = None) -> Any:
        """An admin's request that must succeed; its JSON body (None when empty)."""
        answer = self.request(method, path, json=json)
        assert answer.ok, f"{method} {path} -> {answer.status_code}: {answer.text}"
        return answer.json() if answer.content else None

    def authenticate(self, body: dict[str, Any]) -> requests.Response:
        return self.session.post(f"{self.v3}/auth/tokens", json={"auth": body}, timeout=60)

    def password_token(self, user: dict[str, Any], project: dict[str, Any]) -> str:
        answer = self.authenticate({
            "identity": {"methods": ["password"], "password": {"user": user}},
            "scope": {"project": project}})
        assert answer.status_code == 201, answer.text
        return answer.headers["X-Subject-Token"]

    @property
    def admin_token(self) -> str:
        """A token of bootstrap's admin, on the admin project; a new one once half the
        life of short-lived tokens has passed."""
        life = self.token_expiration
        if self._admin is None or (life is not None
                                   and time.monotonic() - self._admin[1] > life / 2):
            domain = {"id": DEFAULT_DOMAIN}
            self._admin = (self.password_token(
                {"name": "admin", "domain": domain, "password": ADMIN_PASSWORD},
                {"name": "admin", "domain": domain}), time.monotonic())
        return self._admin[0]

    def token(self, user: User) -> str:
        """A new token of ``user``, scoped to its project."""
        return self.password_token({"id": user.id, "password": user.password},
                                   {"id": user.project.id})

    @cached_property
    def role_ids(self) -> dict[str, str]:
        return {role["name"]: role["id"] for role in self.call("GET", "/roles")["roles"]}

    def create_project(self, name: str) -> Project:
        body = {"project": {"name": name, "domain_id": DEFAULT_DOMAIN}}
        return Project(self.call("POST", "/projects", json=body)["project"]["id"], name)

    def create_user(self, name: str, project: Project, *roles: str) -> User:
        """A user with ``roles`` on ``project`` (each of admin, manager, member, reader,
        service; Keystone adds the roles they imply to its tokens)."""
        password = f"{name}-{uuid.uuid4().hex[:8]}"
        created = self.call("POST", "/users", json={"user": {
            "name": name, "password": password, "domain_id": DEFAULT_DOMAIN,
            "default_project_id": project.id}})["user"]
        for role in roles:
            self.call("PUT", f"/projects/{project.id}/users/{created['id']}/roles/"
                      f"{self.role_ids[role]}")
        return User(created["id"], name, password, project, roles)

    def service_user(self, name: str) -> User:
        """A service's own user (keystonemiddleware's, a service talking to another):
        the role service on the project service."""
        return self.create_user(name, self.project("service"), "service")

    def project(self, name: str) -> Project:
        """The project ``name``, created when missing."""
        found = self.call("GET", f"/projects?name={name}")["projects"]
        return Project(found[0]["id"], name) if found else self.create_project(name)

    def service_id(self, service_type: str) -> str:
        found = self.call("GET", f"/services?type={service_type}")["services"]
        assert len(found) == 1, f"{len(found)} services of type {service_type}"
        return str(found[0]["id"])

    def register(self, service_type: str, name: str, url: str,
                 region: str = REGION) -> None:
        """A catalog service and its public, internal and admin endpoints at ``url``."""
        service = self.call("POST", "/services", json={
            "service": {"type": service_type, "name": name}})["service"]["id"]
        for interface in INTERFACES:
            self.call("POST", "/endpoints", json={"endpoint": {
                "service_id": service, "interface": interface, "url": url,
                "region_id": region}})

    # -- pointing clients at it ----------------------------------------------------------
    def keystoneauth_section(self, user: User) -> dict[str, object]:
        """The keystoneauth1 options (nova's ``[placement]`` ones) that make a Moorage
        service or command authenticate as ``user`` with its password, and find the
        other services in this Keystone's catalog."""
        return {"auth_type": "password", "auth_url": self.v3, "username": user.name,
                "password": user.password, "project_name": user.project.name,
                "user_domain_id": DEFAULT_DOMAIN, "project_domain_id": DEFAULT_DOMAIN,
                "region_name": REGION}

    def authtoken_section(self, user: User) -> dict[str, object]:
        """The ``[keystone_authtoken]`` options that make a service's keystonemiddleware
        authenticate as ``user`` and validate tokens here."""
        return {"www_authenticate_uri": self.v3, **self.keystoneauth_section(user)}

    def openstack_env(self, user: User) -> dict[str, str]:
        """The ``OS_*`` variables that make the ``openstack`` CLI log in as ``user`` (no
        clouds.yaml): it finds every other service in the catalog."""
        return {"OS_AUTH_URL": self.v3, "OS_AUTH_TYPE": "password",
                "OS_IDENTITY_API_VERSION": "3", "OS_USERNAME": user.name,
                "OS_PASSWORD": user.password, "OS_PROJECT_NAME": user.project.name,
                "OS_USER_DOMAIN_ID": DEFAULT_DOMAIN, "OS_PROJECT_DOMAIN_ID": DEFAULT_DOMAIN,
                "OS_REGION_NAME": REGION, "OS_INTERFACE": "public"}


@pytest.fixture(scope="session")
def keystone_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synced and bootstrapped Keystone every ``keystone`` copies (once a session)."""
    try:
        return make_template(tmp_path_factory.mktemp("keystone-template"))
    except KeystoneMissing as exc:
        pytest.fail(str(exc))


@contextlib.contextmanager
def running_keystone(template: Path, workdir: Path, *,
                     token_expiration: int | None = None) -> Iterator[Keystone]:
    """A Keystone of its own, started from ``template`` in ``workdir``, stopped after;
    the test FAILS, saying why, when it does not start."""
    server = Keystone(template, workdir, token_expiration=token_expiration)
    try:
        try:
            server.start()
        except KeystoneMissing as exc:
            pytest.fail(str(exc))
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def keystone(keystone_template: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keystone]:
    """A Keystone of the module's own, bootstrapped (admin, roles, RegionOne)."""
    with running_keystone(keystone_template, tmp_path_factory.mktemp("keystone")) as server:
        yield server
