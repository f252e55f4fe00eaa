"""``moorage flavor create|list|show|delete|set|unset``: flavors and their extra specs
(``--property trait:HW_CPU_X86_AVX2=required``, ``resources:VCPU=0``, ...)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from cliff.command import Command
from cliff.lister import Lister
from cliff.show import ShowOne

from moorage.api.client import ComputeApiClient, Json
from moorage.cli.api_options import (
    DictColumn,
    add_api_arguments,
    api_client,
    find,
    key_values,
    requested,
)
from moorage.cli.output import Fields, Table
from moorage.cli.properties import SetProperties, UnsetProperties

EPHEMERAL = "OS-FLV-EXT-DATA:ephemeral"


def find_flavor(client: ComputeApiClient, ref: str) -> Json:
    """A flavor by id or by name."""
    return find("flavor", ref, client.flavor, client.flavors)


def flavor_fields(flavor: Json, properties: dict[str, str] | None) -> dict[str, object]:
    """A flavor as the commands show it: nova's record under plain names."""
    fields: dict[str, object] = {
        "id": flavor.get("id"),
        "name": flavor.get("name"),
        "ram": flavor.get("ram"),
        "vcpus": flavor.get("vcpus"),
        "disk": flavor.get("disk"),
        "ephemeral": flavor.get(EPHEMERAL, 0),
        "swap": flavor.get("swap") or 0,
    }
    if properties is not None:
        fields["properties"] = DictColumn(properties)
    return fields


def properties_of(client: ComputeApiClient, flavor: Json) -> dict[str, str]:
    """The flavor's extra specs: in its record (nova 2.61+) or read separately."""
    specs = flavor.get("extra_specs")
    if isinstance(specs, dict):
        return dict(specs)
    return client.extra_specs(str(flavor["id"]))


def _show(fields: dict[str, object]) -> Fields:
    return tuple(fields), tuple(fields.values())


class FlavorCreate(ShowOne):
    """Create a flavor, with its extra specs."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("name", help="the new flavor's name")
        parser.add_argument("--id", dest="flavor_id", metavar="ID",
                            help="the flavor's id (default: the API chooses a uuid)")
        parser.add_argument("--ram", type=int, default=256, metavar="MB",
                            help="memory in MB (default 256)")
        parser.add_argument("--vcpus", type=int, default=1, help="virtual CPUs (default 1)")
        parser.add_argument("--disk", type=int, default=0, metavar="GB",
                            help="root disk in GB (default 0)")
        parser.add_argument("--ephemeral", type=int, metavar="GB",
                            help="ephemeral disk in GB (default 0)")
        parser.add_argument("--swap", type=int, metavar="MB", help="swap in MB (default 0)")
        parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                            help="an extra spec, e.g. trait:HW_CPU_X86_AVX2=required "
                            "(repeatable)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        properties = key_values(parsed_args.property)
        client = api_client(parsed_args, self.app.options)
        flavor = client.create_flavor(
            parsed_args.name, parsed_args.ram, parsed_args.vcpus, parsed_args.disk,
            flavor_id=parsed_args.flavor_id, ephemeral=parsed_args.ephemeral,
            swap=parsed_args.swap, extra_specs=properties)
        return _show(flavor_fields(flavor, properties_of(client, flavor)))


class FlavorList(Lister):
    """List flavors (with --long, their extra specs too)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("--long", action="store_true",
                            help="also show each flavor's extra specs")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        client = api_client(parsed_args, self.app.options)
        with_properties = parsed_args.long or (
            bool(parsed_args.columns) and requested(parsed_args, "properties"))
        rows = [
            flavor_fields(flavor, properties_of(client, flavor) if with_properties else None)
            for flavor in client.flavors()
        ]
        columns = ["id", "name", "ram", "disk", "ephemeral", "vcpus"]
        if with_properties:
            columns.append("properties")
        return columns, [[row[c] for c in columns] for row in rows]


class FlavorShow(ShowOne):
    """Show a flavor and its extra specs."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("flavor", help="flavor name or id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = api_client(parsed_args, self.app.options)
        flavor = find_flavor(client, parsed_args.flavor)
        return _show(flavor_fields(flavor, properties_of(client, flavor)))


class FlavorDelete(Command):
    """Delete flavors (servers keep the copy they were built from)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_api_arguments(parser)
        parser.add_argument("flavors", nargs="+", metavar="FLAVOR",
                            help="flavor name or id (repeatable)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> int:
        client = api_client(parsed_args, self.app.options)
        for ref in parsed_args.flavors:
            client.delete_flavor(str(find_flavor(client, ref)["id"]))
        return 0


class FlavorSet(SetProperties):
    """Set extra specs on a flavor."""

    noun = "flavor"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--property", metavar="KEY=VALUE", action="append", default=[],
                            help="an extra spec to set (repeatable)")

    def apply(self, client: ComputeApiClient, ref: str, changes: Mapping[str, object],
              properties: Mapping[str, str]) -> None:
        client.set_extra_specs(str(find_flavor(client, ref)["id"]), dict(properties))


class FlavorUnset(UnsetProperties):
    """Remove extra specs from a flavor."""

    noun, item = "flavor", "an extra spec"

    def unset(self, client: ComputeApiClient, ref: str, names: list[str]) -> None:
        flavor_id = str(find_flavor(client, ref)["id"])
        for name in names:
            client.delete_extra_spec(flavor_id, name)


COMMANDS: dict[str, type[Command]] = {
    "flavor create": FlavorCreate,
    "flavor list": FlavorList,
    "flavor show": FlavorShow,
    "flavor delete": FlavorDelete,
    "flavor set": FlavorSet,
    "flavor unset": FlavorUnset,
}
