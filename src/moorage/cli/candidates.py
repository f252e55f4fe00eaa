"""``moorage placement candidates``: which hosts could take a request, and if none, why.

When nothing matches, each part of the request (every resource amount, trait and
aggregate) is counted on its own, so the part that no provider satisfies shows.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TypedDict

import os_traits
from cliff.columns import FormattableColumn
from cliff.lister import Lister

from moorage.cli.options import (
    add_connection_arguments,
    client_from_arguments,
    resource_amount,
    resource_order,
)
from moorage.cli.output import Table
from moorage.placement.client import Candidates, PlacementClient, ProviderQuery

# Above this many provider trees, one list of every provider is cheaper than one
# in_tree query per tree to learn the providers' names.
_TREES_READ_ONE_BY_ONE = 50


class AllocationPart(TypedDict):
    """What a candidate takes from one provider."""

    provider: str
    uuid: str
    resources: dict[str, int]


class AllocationColumn(FormattableColumn[list[AllocationPart]]):
    """What one candidate takes from which provider: "VCPU 2, MEMORY_MB 512 on
    kvm-q35-01; DISK_GB 20 on ceph-pool-01" in tables, a list of
    {"provider", "uuid", "resources"} in JSON/YAML."""

    def human_readable(self) -> str:
        return "; ".join(
            ", ".join(f"{rc} {n}" for rc, n in part["resources"].items())
            + f" on {part['provider']}"
            for part in self._value
        )


class CandidateList(Lister):
    """List allocation candidates: the hosts that could take a request, and what from."""

    COLUMNS = ("host", "host_uuid", "allocation")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_connection_arguments(parser)
        parser.add_argument(
            "--resource", metavar="RC=AMOUNT", action="append", type=resource_amount,
            required=True, help="an amount of a resource class to place (repeatable)")
        parser.add_argument("--required", metavar="TRAIT", action="append", default=[],
                            help="a trait the host must have; in:T1,T2 for any of them "
                            "(repeatable)")
        parser.add_argument("--forbidden", metavar="TRAIT", action="append", default=[],
                            help="a trait the host must not have (repeatable)")
        parser.add_argument("--member-of", metavar="AGGREGATE", action="append", default=[],
                            help="an aggregate the host must be in; in:A1,A2 for any of "
                            "them (repeatable)")
        parser.add_argument("--limit", type=int, metavar="N",
                            help="at most N candidates (the service's choice)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        client = client_from_arguments(parsed_args, self.app.options)
        query = ProviderQuery(
            resources=dict(parsed_args.resource),
            required=[*parsed_args.required, *(f"!{t}" for t in parsed_args.forbidden)],
            member_of=parsed_args.member_of,
        )
        found = client.allocation_candidates(query, limit=parsed_args.limit)
        if not found.allocation_requests:
            self.app.stderr.write(_explanation(client, query))
            return self.COLUMNS, []
        names = _provider_names(client, found)
        return self.COLUMNS, [_row(found, request, names)
                              for request in found.allocation_requests]


def _row(found: Candidates, request: Mapping[str, Mapping[str, int]],
         names: Mapping[str, str]) -> tuple[str, str, AllocationColumn]:
    """A candidate's host is the root of its providers that are not shared through an
    aggregate (a candidate made only of sharing providers is its own host)."""
    summaries = found.summaries

    def sharing(uuid: str) -> bool:
        return os_traits.MISC_SHARES_VIA_AGGREGATE in summaries[uuid].traits

    local = [uuid for uuid in request if not sharing(uuid)] or list(request)
    hosts = sorted({summaries[uuid].root_uuid for uuid in local},
                   key=lambda uuid: names.get(uuid, uuid))
    parts = [
        AllocationPart(
            provider=names.get(uuid, uuid),
            uuid=uuid,
            resources=dict(sorted(request[uuid].items(),
                                  key=lambda item: resource_order(item[0]))),
        )
        for uuid in sorted(request, key=lambda u: (sharing(u), names.get(u, u)))
    ]
    return (", ".join(names.get(uuid, uuid) for uuid in hosts), ", ".join(hosts),
            AllocationColumn(parts))


def _provider_names(client: PlacementClient, found: Candidates) -> dict[str, str]:
    """Names of every provider in the trees of the candidates' providers (the
    candidates answer carries uuids only)."""
    roots = {found.summaries[uuid].root_uuid
             for request in found.allocation_requests for uuid in request}
    if len(roots) > _TREES_READ_ONE_BY_ONE:
        return {p.uuid: p.name for p in client.providers()}
    trees = client.concurrently(
        lambda root: client.providers(ProviderQuery(in_tree=root)), sorted(roots))
    return {p.uuid: p.name for tree in trees for p in tree}


def _explanation(client: PlacementClient, query: ProviderQuery) -> str:
    """How many providers satisfy each part of ``query`` on their own."""
    parts: list[tuple[str, ProviderQuery]] = [
        (f"resources {rc}:{n}", ProviderQuery(resources={rc: n}))
        for rc, n in query.resources.items()
    ]
    if len(query.resources) > 1:
        parts.append(("all the resources on one provider", ProviderQuery(
            resources=query.resources)))
    parts += [
        (f"{'forbidden ' + t[1:] if t.startswith('!') else 'required ' + t}",
         ProviderQuery(required=[t]))
        for t in query.required
    ]
    if len(query.required) > 1:
        parts.append(("all the traits on one provider", ProviderQuery(
            required=query.required)))
    parts += [(f"member_of {a}", ProviderQuery(member_of=[a])) for a in query.member_of]
    counts = client.concurrently(lambda part: len(client.providers(part[1])), parts)
    width = max(len(label) for label, _ in parts)
    lines = [f"  {label:<{width}}  {count} provider{'' if count == 1 else 's'}"
             for (label, _), count in zip(parts, counts, strict=True)]
    return ("No allocation candidates. Providers that satisfy each part of the request "
            "on their own:\n" + "\n".join(lines) + "\n")
