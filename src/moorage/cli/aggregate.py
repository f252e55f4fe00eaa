"""``moorage aggregate create|list|show|delete|set|unset|add host|remove host``: host
aggregates, their availability zone and metadata (filter_tenant_id, ...), which the
tenant, zone and isolation request filters read."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from moorage.api.client import ComputeApiClient, Json
from moorage.cli.api_options import (
    DictColumn,
    ListColumn,
    add_api_arguments,
    api_client,
    find,
    key_values,
)
from moorage.cli.output import Fields, Table
from moorage.cli.properties import SetProperties, UnsetProperties


def find_aggregate(client: ComputeApiClient, ref: str) -> Json:
    """An aggregate by id or by name."""
    return find("aggregate", ref, client.aggregate, client.aggregates)


def aggregate_fields(aggregate: Json) -> dict[str, object]:
    return {
        "id": aggregate.get("id"),
        "uuid": aggregate.get("uuid"),
        "name": aggregate.get("name"),
        "availability_zone": aggregate.get("availability_zone"),
        "hosts": ListColumn(sorted(aggregate.get("hosts") or [])),
        "properties": DictColumn(dict(aggregate.get("metadata") or {})),
    }


def _show(aggregate: Json) -> Fields:
    fields = aggregate_fields(aggregate)
    return tuple(fields), tuple(fields.values())


class AggregateCreate(ShowOne):
    """Create a host aggregate, optionally an availability zone."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("name", help="the new aggregate's name")
        parser.add_argument("--zone", metavar="ZONE",
                            help="the availability zone its hosts form")
        parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                            help="a metadata item, e.g. filter_tenant_id=PROJECT (repeatable)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        properties = key_values(parsed_args.property)
        client = api_client(parsed_args, self.app.options)
        aggregate = client.create_aggregate(parsed_args.name, parsed_args.zone)
        if properties:
            aggregate = client.set_aggregate_metadata(aggregate["id"], properties)
        return _show(aggregate)


class AggregateList(Lister):
    """List host aggregates."""

    COLUMNS = ("id", "name", "availability_zone", "hosts", "properties")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        rows = [aggregate_fields(a) for a in api_client(parsed_args, self.app.options).aggregates()]
        return self.COLUMNS, [[row[c] for c in self.COLUMNS] for row in rows]


class AggregateShow(ShowOne):
    """Show a host aggregate: zone, hosts and metadata."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("aggregate", help="aggregate name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = api_client(parsed_args, self.app.options)
        return _show(find_aggregate(client, parsed_args.aggregate))


class AggregateDelete(Command):
    """Delete host aggregates (the API refuses one that still has hosts)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("aggregates", nargs="+", metavar="AGGREGATE",
                            help="aggregate name or id (repeatable)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        client = api_client(parsed_args, self.app.options)
        for ref in parsed_args.aggregates:
            client.delete_aggregate(find_aggregate(client, ref)["id"])
        return 0


class AggregateSet(SetProperties):
    """Rename an aggregate, change its zone or set metadata."""

    noun = "aggregate"
    options = "--name, --zone or --property KEY=VALUE"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--name", help="a new name")
        parser.add_argument("--zone", metavar="ZONE", help="a new availability zone")
        parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                            help="a metadata item to set (repeatable)")

    def changes(self, parsed_args: argparse.Namespace) -> dict[str, object]:
        return {key: value for key, value in (
            ("name", parsed_args.name), ("availability_zone", parsed_args.zone))
            if value is not None}

    def apply(self, client: ComputeApiClient, ref: str, changes: Mapping[str, object],
              properties: Mapping[str, str]) -> None:
        aggregate_id = find_aggregate(client, ref)["id"]
        if changes:
            client.update_aggregate(aggregate_id, dict(changes))
        if properties:
            client.set_aggregate_metadata(aggregate_id, dict(properties))


class AggregateUnset(UnsetProperties):
    """Remove metadata items from an aggregate."""

    noun, item = "aggregate", "a metadata item"

    def unset(self, client: ComputeApiClient, ref: str, names: list[str]) -> None:
        aggregate_id = find_aggregate(client, ref)["id"]
        client.set_aggregate_metadata(aggregate_id, dict.fromkeys(names))


class _AggregateHost(ShowOne):
    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("aggregate", help="aggregate name or id")
        parser.add_argument("host", help="the compute host's name")
        return parser


class AggregateAddHost(_AggregateHost):
    """Add a host to an aggregate."""

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = api_client(parsed_args, self.app.options)
        aggregate_id = find_aggregate(client, parsed_args.aggregate)["id"]
        return _show(client.add_host(aggregate_id, parsed_args.host))


class AggregateRemoveHost(_AggregateHost):
    """Remove a host from an aggregate."""

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = api_client(parsed_args, self.app.options)
        aggregate_id = find_aggregate(client, parsed_args.aggregate)["id"]
        return _show(client.remove_host(aggregate_id, parsed_args.host))


COMMANDS: dict[str, type[Command]] = {
    "aggregate create": AggregateCreate,
    "aggregate list": AggregateList,
    "aggregate show": AggregateShow,
    "aggregate delete": AggregateDelete,
    "aggregate set": AggregateSet,
    "aggregate unset": AggregateUnset,
    "aggregate add host": AggregateAddHost,
    "aggregate remove host": AggregateRemoveHost,
}
