"""``moorage placement provider list|show|tree``: what the providers have, hold and use."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict, cast

from cliff.columns import FormattableColumn
from cliff.formatters.base import SingleFormatter
from cliff.lister import Lister
from cliff.show import ShowOne

from moorage.cli.options import (
    add_connection_arguments,
    client_from_arguments,
    resource_amount,
    resource_order,
)
from moorage.cli.output import Fields, Table
from moorage.placement.client import PlacementError, ProviderDetail, ProviderQuery
from moorage.placement.storage.records import Inventory


class ListColumn(FormattableColumn[list[str]]):
    """Traits or aggregates: comma-joined in tables, a list in JSON/YAML."""

    def human_readable(self) -> str:
        return ", ".join(self._value)


class UsageColumn(FormattableColumn[dict[str, dict[str, int]]]):
    """Per class used/capacity: "VCPU 3/64, MEMORY_MB 2048/262144" in tables,
    {"VCPU": {"used": 3, "capacity": 64}} in JSON/YAML."""

    def human_readable(self) -> str:
        return ", ".join(f"{rc} {u['used']}/{u['capacity']}" for rc, u in self._value.items())


class InventoryColumn(FormattableColumn[dict[str, dict[str, int | float]]]):
    """Inventories: one line per class in tables, the API's records in JSON/YAML."""

    def human_readable(self) -> str:
        return "\n".join(
            f"{rc}: total {inv['total']}, reserved {inv['reserved']}, "
            f"allocation_ratio {inv['allocation_ratio']:g}, min_unit {inv['min_unit']}, "
            f"max_unit {inv['max_unit']}, step_size {inv['step_size']}"
            for rc, inv in self._value.items()
        )


def usage_of(inventories: Mapping[str, Inventory] | None,
             usages: Mapping[str, int] | None) -> dict[str, dict[str, int]]:
    """{class: {"used", "capacity"}} in resource-class order."""
    inventories = inventories or {}
    usages = usages or {}
    return {
        rc: {"used": usages.get(rc, 0), "capacity": inventories[rc].capacity}
        for rc in sorted(inventories, key=resource_order)
    }


def inventory_records(inventories: Mapping[str, Inventory]
                      ) -> dict[str, dict[str, int | float]]:
    return {
        rc: {**inv.fields(), "capacity": inv.capacity}
        for rc, inv in sorted(inventories.items(), key=lambda item: resource_order(item[0]))
    }


def _requested(parsed_args: argparse.Namespace, column: str) -> bool:
    """Whether ``-c`` asks for ``column`` (no ``-c`` asks for every column)."""
    return not parsed_args.columns or column in parsed_args.columns


class ProviderList(Lister):
    """List resource providers with their traits and usage (used/capacity per class)."""

    COLUMNS = ("uuid", "name", "generation", "parent", "root", "traits", "usage")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_connection_arguments(parser)
        parser.add_argument("--name", help="only the provider with this name")
        parser.add_argument(
            "--resource", metavar="RC=AMOUNT", action="append", type=resource_amount,
            default=[], help="only providers with room for AMOUNT of RC themselves "
            "(repeatable)")
        parser.add_argument(
            "--required", metavar="TRAIT", action="append", default=[],
            help="only providers with TRAIT; !TRAIT forbids it, in:T1,T2 asks for any of "
            "them (repeatable, all must hold)")
        parser.add_argument(
            "--member-of", metavar="AGGREGATE", action="append", default=[],
            help="only providers in this aggregate; in:A1,A2 for any of them, !A to "
            "exclude (repeatable, all must hold)")
        parser.add_argument("--in-tree", metavar="UUID",
                            help="only providers in the tree of this provider")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        client = client_from_arguments(parsed_args, self.app.options)
        query = ProviderQuery(
            name=parsed_args.name,
            resources=dict(parsed_args.resource),
            required=parsed_args.required,
            member_of=parsed_args.member_of,
            in_tree=parsed_args.in_tree,
        )
        providers = client.providers(query)
        # Each column left out by -c spares one request per provider.
        with_usage = _requested(parsed_args, "usage")
        with_traits = _requested(parsed_args, "traits")
        details: Iterable[ProviderDetail]
        if with_usage or with_traits:
            details = client.details(providers, inventories=with_usage, usages=with_usage,
                                     traits=with_traits, listed_by=query)
        else:
            details = (ProviderDetail(p) for p in providers)
        rows = [
            (d.provider.uuid, d.provider.name, d.provider.generation, d.provider.parent_uuid,
             d.provider.root_uuid, ListColumn(d.traits or []),
             UsageColumn(usage_of(d.inventories, d.usages)))
            for d in details
        ]
        return self.COLUMNS, rows


class ProviderShow(ShowOne):
    """Show one resource provider: inventories, usage, traits and aggregates."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_connection_arguments(parser)
        parser.add_argument("uuid", help="the provider's uuid")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Fields:
        client = client_from_arguments(parsed_args, self.app.options)
        provider = client.provider(parsed_args.uuid)
        d = client.detail(provider, aggregates=True)
        fields = {
            "uuid": provider.uuid,
            "name": provider.name,
            "generation": provider.generation,
            "parent": provider.parent_uuid,
            "root": provider.root_uuid,
            "inventories": InventoryColumn(inventory_records(d.inventories or {})),
            "usage": UsageColumn(usage_of(d.inventories, d.usages)),
            "traits": ListColumn(d.traits or []),
            "aggregates": ListColumn(d.aggregates or []),
        }
        return tuple(fields), tuple(fields.values())


# Formats that show the tree as nested objects rather than as indented rows.
NESTED_FORMATS = ("json", "yaml")


class ProviderTree(Lister):
    """Show the whole provider tree a provider belongs to, from its root down.

    Tables show one indented row per provider; -f json and -f yaml show nested
    objects whose "children" are the child providers.
    """

    COLUMNS = ("name", "uuid", "generation", "usage", "traits")

    @property
    def need_sort_by_cliff(self) -> bool:
        return False  # the order is the tree's

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_connection_arguments(parser)
        parser.add_argument("uuid", help="any provider of the tree")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        client = client_from_arguments(parsed_args, self.app.options)
        root_uuid = client.provider(parsed_args.uuid).root_uuid
        tree = ProviderQuery(in_tree=root_uuid)
        members = client.providers(tree)
        details = {d.provider.uuid: d for d in client.details(members, listed_by=tree)}
        if root_uuid not in details:
            raise PlacementError(f"the tree of {parsed_args.uuid} changed while being read; "
                                 "try again")
        self._tree = _nest(details, root_uuid)
        rows = [
            (label, node["uuid"], node["generation"], UsageColumn(node["usage"]),
             ListColumn(node["traits"]))
            for label, node in _drawn(self._tree)
        ]
        return self.COLUMNS, rows

    def produce_output(self, parsed_args: argparse.Namespace, column_names: Sequence[str],
                       data: Iterable[Sequence[object]]) -> int:
        if parsed_args.formatter not in NESTED_FORMATS:
            return super().produce_output(parsed_args, column_names, data)
        # The JSON and YAML formatters also format single objects: the root node.
        formatter = cast(SingleFormatter, self.formatter)
        formatter.emit_one(list(self._tree), list(self._tree.values()), self.app.stdout,
                           parsed_args)
        return 0


class TreeNode(TypedDict):
    """One provider of a tree, as -f json and -f yaml show it: with its children."""

    name: str
    uuid: str
    generation: int
    usage: dict[str, dict[str, int]]
    traits: list[str]
    children: list[TreeNode]


def _nest(details: Mapping[str, ProviderDetail], root_uuid: str) -> TreeNode:
    """The tree under ``root_uuid`` as nested dicts, children ordered by name."""
    children: dict[str, list[ProviderDetail]] = {}
    for d in details.values():
        if d.provider.parent_uuid is not None:
            children.setdefault(d.provider.parent_uuid, []).append(d)

    def node(d: ProviderDetail) -> TreeNode:
        return TreeNode(
            name=d.provider.name,
            uuid=d.provider.uuid,
            generation=d.provider.generation,
            usage=usage_of(d.inventories, d.usages),
            traits=d.traits or [],
            children=[node(c) for c in sorted(children.get(d.provider.uuid, []),
                                              key=lambda c: c.provider.name)],
        )

    return node(details[root_uuid])


def _drawn(tree: TreeNode) -> Iterable[tuple[str, TreeNode]]:
    """(name drawn with tree branches, node) for each node, depth first."""
    yield tree["name"], tree

    def below(node: TreeNode, prefix: str) -> Iterable[tuple[str, TreeNode]]:
        kids = node["children"]
        for i, child in enumerate(kids):
            last = i == len(kids) - 1
            yield f"{prefix}{'└── ' if last else '├── '}{child['name']}", child
            yield from below(child, prefix + ("    " if last else "│   "))

    yield from below(tree, "")
