"""``moorage host list|set``: the compute hosts as the API knows them (their service
and hypervisors) and the operator's switches on them (disable, force down)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from cliff.command import Command
from cliff.lister import Lister

from moorage.api.client import ComputeApiClient, ComputeApiError, Json
from moorage.cli.api_options import ListColumn, add_api_arguments, api_client
from moorage.cli.output import Table
from moorage.compute import BINARY


def _server_count(hypervisor: Json) -> int:
    """The servers on a hypervisor: its ``servers`` list when it has one (asked for with
    with_servers; the only count from compute API 2.88), else ``running_vms``."""
    servers = hypervisor.get("servers")
    if isinstance(servers, list):
        return len(servers)
    return int(hypervisor.get("running_vms") or 0)


def host_rows(services: Iterable[Json], hypervisors: Iterable[Json]) -> list[dict[str, object]]:
    """One row per compute service, with its hypervisors' driver, nodes and servers."""
    by_host: dict[str, list[Json]] = {}
    for hypervisor in hypervisors:
        host = (hypervisor.get("service") or {}).get("host") or hypervisor.get(
            "hypervisor_hostname")
        by_host.setdefault(str(host), []).append(hypervisor)
    rows = []
    for service in services:
        if service.get("binary", BINARY) != BINARY:
            continue
        host = str(service.get("host"))
        nodes = by_host.get(host, [])
        drivers = sorted({str(h.get("hypervisor_type")) for h in nodes
                          if h.get("hypervisor_type")})
        rows.append({
            "host": host,
            "driver": service.get("driver") or ", ".join(drivers),
            "status": service.get("status"),
            "state": service.get("state"),
            "forced_down": bool(service.get("forced_down")),
            "servers": sum(_server_count(h) for h in nodes),
            "nodes": ListColumn(sorted(str(h.get("hypervisor_hostname")) for h in nodes)),
            "zone": service.get("zone"),
            "disabled_reason": service.get("disabled_reason"),
            "updated_at": service.get("updated_at"),
        })
    return sorted(rows, key=lambda row: str(row["host"]))


class HostList(Lister):
    """List compute hosts: driver, status (enabled/disabled), state (up/down), servers."""

    COLUMNS = ("host", "driver", "status", "state", "servers")
    LONG_COLUMNS = ("forced_down", "nodes", "zone", "disabled_reason", "updated_at")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--long", action="store_true",
                            help="also show nodes, zone, forced down, why disabled and the "
                            "last heartbeat")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        client = api_client(parsed_args, self.app.options)
        rows = host_rows(client.services(), client.hypervisors())
        columns = list(self.COLUMNS)
        if parsed_args.long or any(c in self.LONG_COLUMNS for c in parsed_args.columns or ()):
            columns.extend(self.LONG_COLUMNS)
        return columns, [[row[c] for c in columns] for row in rows]


def find_service(client: ComputeApiClient, host: str) -> Json:
    """The compute service of ``host``; a one-line error naming the known hosts."""
    services = [s for s in client.services()
                if s.get("binary", BINARY) == BINARY]
    for service in services:
        if service.get("host") == host:
            return service
    known = ", ".join(sorted(str(s.get("host")) for s in services)) or "none"
    raise ComputeApiError(f"No compute host {host!r} (known hosts: {known}).", 404)


def service_changes(parsed_args: argparse.Namespace) -> dict[str, object]:
    """The PUT /os-services body the switches ask for; ValueError when they say
    nothing or contradict each other."""
    if parsed_args.reason is not None and not parsed_args.disable:
        raise ValueError("--reason goes with --disable")
    changes: dict[str, object] = {}
    if parsed_args.disable:
        changes["status"] = "disabled"
        if parsed_args.reason is not None:
            changes["disabled_reason"] = parsed_args.reason
    elif parsed_args.enable:
        changes["status"] = "enabled"
    if parsed_args.force_down:
        changes["forced_down"] = True
    elif parsed_args.unforce_down:
        changes["forced_down"] = False
    if not changes:
        raise ValueError("nothing to set: give --disable [--reason TEXT], --enable, "
                         "--force-down or --unforce-down")
    return changes


class HostSet(Command):
    """Disable or enable a host for new servers; force it down (for evacuation) or
    back up."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("host", help="the compute host's name")
        status = parser.add_mutually_exclusive_group()
        status.add_argument("--disable", action="store_true",
                            help="the scheduler sends no new server there")
        status.add_argument("--enable", action="store_true", help="undo --disable")
        parser.add_argument("--reason", metavar="TEXT", help="why it is disabled")
        down = parser.add_mutually_exclusive_group()
        down.add_argument("--force-down", action="store_true",
                          help="mark the host down now (its servers may be evacuated)")
        down.add_argument("--unforce-down", action="store_true",
                          help="undo --force-down: up again once it heart-beats")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        changes = service_changes(parsed_args)
        client = api_client(parsed_args, self.app.options)
        service = find_service(client, parsed_args.host)
        client.update_service(service["id"], changes)
        return 0


COMMANDS: dict[str, type[Command]] = {
    "host list": HostList,
    "host set": HostSet,
}
