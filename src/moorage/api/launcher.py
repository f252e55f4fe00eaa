"""Start the compute API, a conductor or a fleet as child processes, for the tests and
the benchmarks (the real services, as an operator runs them)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from moorage.internal_access import TOKEN_HEADER
from moorage.placement.launcher import ServerProcess, write_config


def _sections(base: Mapping[str, Mapping[str, object]],
              extra: Mapping[str, Mapping[str, object]] | None
              ) -> dict[str, dict[str, object]]:
    sections = {name: dict(options) for name, options in base.items()}
    for name, options in (extra or {}).items():
        sections.setdefault(name, {}).update(options)
    return sections


class ComputeApiProcess(ServerProcess):
    """One ``moorage api serve`` (granian, ``workers`` processes), noauth2. It reaches
    placement at ``placement_url``; None: as ``config``'s ``[placement]`` says (Keystone's
    catalog)."""

    name = "compute-api"

    def __init__(self, workdir: Path, *, placement_url: str | None,
                 database_url: str | None = None,
                 config: Mapping[str, Mapping[str, object]] | None = None,
                 host: str = "127.0.0.1", port: int | None = None, workers: int = 1,
                 name: str | None = None) -> None:
        if name is not None:
            self.name = name
        super().__init__(workdir, host, port)
        self.config_file = write_config(self.workdir / f"{self.name}.conf", _sections({
            "DEFAULT": {"osapi_compute_listen": host, "osapi_compute_listen_port": self.port,
                        "osapi_compute_workers": workers},
            "api": {"auth_strategy": "noauth2"},
            "database": {"connection": database_url
                         or f"sqlite:///{self.workdir / 'compute-api.sqlite'}"},
            "placement": {} if placement_url is None else {
                "endpoint_override": placement_url},
        }, config))

    def command(self) -> list[str]:
        return self.moorage("api", "serve", "--config-file", str(self.config_file))


class ConductorProcess(ServerProcess):
    """One ``moorage conductor serve``; ready once it says it serves."""

    name = "conductor"

    def __init__(self, workdir: Path, config_file: Path, *, name: str | None = None) -> None:
        if name is not None:
            self.name = name
        super().__init__(workdir)
        self.config_file = config_file

    def command(self) -> list[str]:
        return self.moorage("conductor", "serve", "--config-file", str(self.config_file))

    def ready(self) -> bool:
        return "conductor " in self.output() and ": serving " in self.output()


class FleetProcess(ServerProcess):
    """One ``moorage compute fleet FILE``; ready once its endpoint answers (its hosts are
    registered with placement by then)."""

    name = "fleet"

    def __init__(self, workdir: Path, fleet_file: Path, *, placement_url: str,
                 api_url: str, config: Mapping[str, Mapping[str, object]] | None = None,
                 host: str = "127.0.0.1", port: int | None = None) -> None:
        super().__init__(workdir, host, port)
        self.fleet_file = fleet_file
        sections = _sections({
            "compute_agent": {"listen": host, "port": self.port, "api_url": api_url},
            "placement": {"endpoint_override": placement_url},
        }, config)
        self.headers = _token_headers(sections)
        self.config_file = write_config(self.workdir / "fleet.conf", sections)

    def command(self) -> list[str]:
        return self.moorage("compute", "fleet", str(self.fleet_file),
                            "--config-file", str(self.config_file))



def _token_headers(sections: Mapping[str, Mapping[str, object]]) -> dict[str, str]:
    """A token, once set, guards an agent's or a fleet's reads too: the readiness probe
    sends it."""
    token = sections.get("DEFAULT", {}).get("service_token")
    return {TOKEN_HEADER: str(token)} if token else {}


class AgentProcess(ServerProcess):
    """One ``moorage compute run`` of a fake-driver host; ready once its API answers."""

    name = "compute-agent"

    def __init__(self, workdir: Path, host_name: str, *, placement_url: str,
                 api_url: str | None = None,
                 config: Mapping[str, Mapping[str, object]] | None = None,
                 host: str = "127.0.0.1", port: int | None = None) -> None:
        super().__init__(workdir, host, port)
        sections = _sections({
            "DEFAULT": {"host": host_name, "compute_driver": "fake"},
            "compute_agent": {"listen": host, "port": self.port, "api_url": api_url or ""},
            "placement": {"endpoint_override": placement_url},
        }, config)
        self.headers = _token_headers(sections)
        self.config_file = write_config(self.workdir / "agent.conf", sections)

    def command(self) -> list[str]:
        return self.moorage("compute", "run", "--config-file", str(self.config_file))
