"""A real compute API server for tests: ``compute_api``.

The API runs in this process on a threaded WSGI server on a free port, over HTTP,
against a fresh SQLite database and the real placement server of the ``placement``
fixture. ``state`` is the server's ``ApiState`` (tests may attach agents, a scheduler
and a conductor with ``attach_workers``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from moorage.api import microversion
from moorage.api.service import ApiServer, make_state, serve
from moorage.api.state import ApiState
from moorage.compute.client import AgentClient
from moorage.conf import load_config
from moorage.placement.client import PlacementClient
from moorage.run.stage import UNLIMITED_SERVERS
from moorage.stack import attach_workers

ADMIN = "admin"
USER = "demo:demo-project"
# The compute API's [DEFAULT] service_token, as its agents would send it: without one,
# the internal routes refuse anonymous writes.
SERVICE_TOKEN = "test-service-token"


def version(text: str | microversion.Version) -> dict[str, str]:
    """The header asking for microversion ``text`` (``"2.55"``)."""
    return {microversion.HEADER: f"compute {text}"}


def just_before(gate: microversion.Gate) -> microversion.Version:
    """The last version without ``gate``'s behaviour."""
    return microversion.Version(gate.version.major, gate.version.minor - 1)


# A table-driven check of a microversion gate: what ``observe`` reads of the API just
# before the gate (``just_before``) and at it.
Observe = Callable[["ComputeApi", microversion.Version], object]


@dataclass(frozen=True)
class GateCase:
    """What ``observe`` sees just before ``gate`` and at it."""

    gate: microversion.Gate
    what: str
    observe: Observe
    before: object
    at: object


_VERSION_HEADERS = (microversion.HEADER.lower(), microversion.LEGACY_HEADER.lower())


class ComputeApi:
    """A running compute API and a requests session for it."""

    __test__ = False

    def __init__(self, server: ApiServer, state: ApiState) -> None:
        self.server = server
        self.state = state
        self.url = server.url
        self.session = requests.Session()

    def request(self, method: str, path: str, *, json: Any = None, token: str | None = ADMIN,
                headers: dict[str, str | None] | None = None, expect: int | None = None,
                **kwargs: Any) -> requests.Response:
        """``path`` below the server root (``/v2.1/flavors``); ``token`` None sends none.
        Asked as Moorage's own client asks (the newest microversion, with Moorage's
        additions) unless ``headers`` name a version: then as that version of nova
        (a header given None: not sent)."""
        all_headers: dict[str, str | None] = (
            {"x-auth-token": token} if token is not None else {})
        if not any(name.lower() in _VERSION_HEADERS for name in headers or {}):
            all_headers[microversion.HEADER] = f"compute {microversion.MAX_VERSION}"
            all_headers[microversion.ADDITIONS_HEADER] = "1"
        all_headers.update(headers or {})
        response = self.session.request(method, self.url + path, json=json,
                                        headers=all_headers, timeout=60, **kwargs)
        if expect is not None:
            assert response.status_code == expect, (
                f"{method} {path} -> {response.status_code}, expected {expect}: "
                f"{response.text}")
        return response

    def image(self, method: str, path: str, *, token: str | None = ADMIN,
              expect: int | None = None, **kwargs: Any) -> requests.Response:
        """``path`` below the image service (``/v2/images``), as glance's clients ask."""
        headers = {"x-auth-token": token} if token is not None else {}
        headers.update(kwargs.pop("headers", {}))
        response = self.session.request(method, self.url + "/image" + path, headers=headers,
                                        timeout=60, **kwargs)
        if expect is not None:
            assert response.status_code == expect, (
                f"{method} /image{path} -> {response.status_code}, expected {expect}: "
                f"{response.text}")
        return response

    def admin(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.request(method, path, token=ADMIN, **kwargs)

    def user(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return self.request(method, path, token=USER, **kwargs)

    def internal(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A request to an internal route as an agent makes it: the service token, no
        user token."""
        headers = {"X-Service-Token": SERVICE_TOKEN, **kwargs.pop("headers", {})}
        return self.request(method, path, token=None, headers=headers, **kwargs)

    def attach_workers(self, agents: AgentClient | None = None) -> None:
        """Attach an agent client, the scheduler and a started conductor."""
        attach_workers(self.state, agents)


def start_compute_api(workdir: Path, placement_url: str,
                      config: dict[str, dict[str, object]] | None = None,
                      config_files: Sequence[Path] = ()) -> ComputeApi:
    """A started compute API (noauth2, SQLite in ``workdir``, ``SERVICE_TOKEN``).
    ``config_files`` are read first, for the groups registered only when the service
    starts (``[oslo_policy]``, whose options ``config`` cannot override yet)."""
    workdir.mkdir(parents=True, exist_ok=True)
    overrides: list[tuple[str, str, object]] = [
        ("DEFAULT", "service_token", SERVICE_TOKEN),
        ("api", "auth_strategy", "noauth2"),
        ("database", "connection", f"sqlite:///{workdir / 'api.sqlite'}"),
        ("placement", "endpoint_override", placement_url),
        *UNLIMITED_SERVERS,
        ("image", "filesystem_store_datadir", str(workdir / "images")),
    ]
    for group, options in (config or {}).items():
        overrides.extend((group, name, value) for name, value in options.items())
    conf = load_config([str(path) for path in config_files], overrides)
    state = make_state(conf, placement=PlacementClient(placement_url, ADMIN))
    server = serve(state, "127.0.0.1", 0).start()
    return ComputeApi(server, state)


def stop_compute_api(api: ComputeApi) -> None:
    if api.state.conductor is not None:
        api.state.conductor.stop()
    api.server.stop()
    api.state.database.dispose()


@pytest.fixture
def compute_api(tmp_path: Path, placement: Any) -> Iterator[ComputeApi]:
    """A fresh compute API server over HTTP, on SQLite, with a fresh placement."""
    api = start_compute_api(tmp_path / "api", placement.url)
    yield api
    stop_compute_api(api)
