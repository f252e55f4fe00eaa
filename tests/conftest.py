"""Shared fixtures: real placement servers over HTTP, on SQLite and PostgreSQL.

PostgreSQL comes from ``MOORAGE_TEST_POSTGRESQL_URL`` (a URL whose user may
CREATE DATABASE), which ``./dev test`` sets after starting a local server. When
it is missing, every PostgreSQL test FAILS with an explanation, unless
``MOORAGE_TEST_SKIP_POSTGRESQL=1`` says to skip them, in which case the run ends
with a banner saying so. Nothing passes silently.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa
from urllib3.util.retry import Retry

from moorage.conf import load_config
from moorage.db.engine import normalize_url
from moorage.embedded import serve_placement
from moorage.placement.launcher import PlacementProcess
from tests.not_run import count_not_run

pytest_plugins = ["tests.libvirt_fixtures", "tests.api_fixtures", "tests.keystone_fixtures"]

PG_ENV = "MOORAGE_TEST_POSTGRESQL_URL"
PG_SKIP_ENV = "MOORAGE_TEST_SKIP_POSTGRESQL"
PG_NOT_RUN = "PostgreSQL test NOT RUN"


class PlacementClient:
    """A requests session speaking to one placement server, as admin at 'latest'."""

    __test__ = False  # a helper, not a test class

    def __init__(self, url: str, token: str = "admin", version: str = "latest") -> None:
        self.url = url
        self.token = token
        self.version = version
        self.session = requests.Session()
        # A kept-alive connection the server closed as a request was sent on it fails
        # with "Remote end closed connection without response" (seen under heavy
        # load); the request never reached the server, so it is sent once more.
        self.session.mount("http://", requests.adapters.HTTPAdapter(max_retries=Retry(
            total=1, connect=1, read=1, status=0, other=0, allowed_methods=None,
            raise_on_status=False)))

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        version: str | None = None,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        expect: int | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        all_headers = {"x-auth-token": token or self.token}
        chosen = self.version if version is None else version  # "" sends no header
        if chosen:
            all_headers["openstack-api-version"] = f"placement {chosen}"
        all_headers.update(headers or {})
        response = self.session.request(
            method, self.url + path, json=json, headers=all_headers, timeout=60, **kwargs
        )
        if expect is not None:
            assert response.status_code == expect, (
                f"{method} {path} -> {response.status_code}, expected {expect}: {response.text}"
            )
        return response

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("PUT", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("DELETE", path, **kwargs)

    # -- conveniences for building data ------------------------------------
    def create_provider(self, name: str | None = None, *, parent: str | None = None,
                        rp_uuid: str | None = None) -> str:
        rp_uuid = rp_uuid or str(uuid.uuid4())
        body: dict[str, Any] = {"name": name or f"rp-{rp_uuid[:8]}", "uuid": rp_uuid}
        if parent:
            body["parent_provider_uuid"] = parent
        self.post("/resource_providers", json=body, version="1.20", expect=200)
        return rp_uuid

    def generation(self, rp_uuid: str) -> int:
        return int(self.get(f"/resource_providers/{rp_uuid}", expect=200).json()["generation"])


def postgresql_admin_url() -> str | None:
    return os.environ.get(PG_ENV) or None


def require_postgresql(request: pytest.FixtureRequest) -> str:
    """The admin URL of the tests' PostgreSQL server; without one the test FAILS,
    saying so, unless PostgreSQL tests are skipped explicitly."""
    admin = postgresql_admin_url()
    if admin is None:
        if os.environ.get(PG_SKIP_ENV) == "1":
            pytest.skip(f"{PG_NOT_RUN}: {PG_SKIP_ENV}=1")
        pytest.fail(
            f"PostgreSQL is not available: set {PG_ENV} to a URL whose user may CREATE "
            f"DATABASE (./dev test starts one when run as root), or set {PG_SKIP_ENV}=1 to "
            "skip these tests explicitly."
        )
    return admin


@contextlib.contextmanager
def _fresh_postgresql(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty PostgreSQL database, dropped afterwards."""
    admin = require_postgresql(request)
    engine = sa.create_engine(normalize_url(admin), isolation_level="AUTOCOMMIT")
    # The xdist worker (gw0, gw1...) in the name: a database left behind says whose it was.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"moorage_test_{worker}_{uuid.uuid4().hex[:12]}"
    with engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.engine.make_url(normalize_url(admin)).set(database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        engine.dispose()


@pytest.fixture
def postgresql_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    with _fresh_postgresql(request) as url:
        yield url


@pytest.fixture(scope="module")
def module_postgresql_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for a module whose tests name their own data."""
    with _fresh_postgresql(request) as url:
        yield url


def _start(tmp_path: Path, database_url: str | None = None,
           config: dict[str, dict[str, object]] | None = None) -> PlacementProcess:
    return PlacementProcess(tmp_path / "placement", database_url=database_url,
                            config=config).start()


class InProcessPlacement:
    """Moorage's placement served from the test's own process, over real HTTP
    (``moorage.embedded.serve_placement``: the service and its threaded server), on a
    fresh SQLite database in ``workdir``, with ``moorage placement serve``'s defaults
    (noauth2).

    For the tests that need a placement of their own beside what they test (the
    compute API's, the servers'): a ``moorage placement serve`` process spends about
    2 s of CPU importing its 1,100 modules before it serves, and 590 tests each
    started one; here the modules are already imported and a start costs the
    database's migration. Tests of placement's own server (granian, its workers,
    signals, failpoints) start a ``PlacementProcess``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        conf = load_config([], [
            ("api", "auth_strategy", "noauth2"),
            ("placement_database", "connection", f"sqlite:///{workdir / 'placement.sqlite'}"),
        ])
        # The test process's collector is left alone (no heap.settle): it builds one
        # of these per test.
        self.service, self.server = serve_placement(conf, "127.0.0.1", 0, settle=False)
        self.url = self.server.url

    def stop(self) -> None:
        self.server.stop()
        self.service.close()


@pytest.fixture
def placement_server(tmp_path: Path) -> Iterator[InProcessPlacement]:
    """A fresh placement server on its own SQLite database, served from this process."""
    server = InProcessPlacement(tmp_path / "placement")
    yield server
    server.stop()


@pytest.fixture
def placement(placement_server: InProcessPlacement) -> PlacementClient:
    """An admin client of a fresh placement server (SQLite)."""
    return PlacementClient(placement_server.url)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_placement(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[
        PlacementClient]:
    """An admin client of a fresh server, once on SQLite and once on PostgreSQL."""
    url = request.getfixturevalue("postgresql_url") if request.param == "postgresql" else None
    server = _start(tmp_path, url)
    yield PlacementClient(server.url)
    server.stop()


@pytest.fixture(scope="module")
def shared_placement(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlacementClient]:
    """One server for a whole module, for tests that create their own uniquely named data."""
    server = _start(tmp_path_factory.mktemp("shared"))
    yield PlacementClient(server.url)
    server.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    not_run = count_not_run(terminalreporter, PG_NOT_RUN)
    if not_run:
        terminalreporter.write_sep("!", "POSTGRESQL TESTS NOT RUN", red=True, bold=True)
        terminalreporter.write_line(
            f"{not_run} PostgreSQL tests were skipped because "
            f"{PG_SKIP_ENV}=1. Run ./dev test as root, or set {PG_ENV}, to run them."
        )
