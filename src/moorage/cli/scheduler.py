"""``moorage scheduler preflight``: before turning a prefilter on, how many hosts can
boot each image, today and with it on, and what no host reports yet.

Turning on ``[scheduler] image_metadata_prefilter`` or
``query_placement_for_image_type_support`` before the hosts report the traits they
require makes every boot of an affected image a NoValidHost. The command reads the
images (a cloud's image service, every page of its Glance v2 listing; the compute
API's catalogue; or a Glance ``GET /v2/images`` answer saved to a file) and the compute
hosts' traits (any placement service, upstream's included, read only:
``host_traits``), and counts with ``bootability``. With ``--os-cloud`` (or ``OS_*``)
both services come from Keystone's catalog; else placement is reached with the
``--config-file``'s ``[placement]`` credentials (a nova.conf's) when it has them.
Its exit status gates an upgrade script: 0 when the planned prefilters leave every
image that boots today bootable, ``EXIT_STRANDED`` (3) when they would leave one no
host can boot, 1 when the check itself could not be made (bad input, a service that
does not answer).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

from cliff.columns import FormattableColumn
from cliff.command import Command
from cliff.lister import Lister
from oslo_config import cfg

from moorage.api.client import DEFAULT_TOKEN as COMPUTE_DEFAULT_TOKEN
from moorage.api.client import TOKEN_ENV as COMPUTE_TOKEN_ENV
from moorage.api.client import URL_ENV as COMPUTE_URL_ENV
from moorage.api.client import ComputeApiError
from moorage.cli import cloud
from moorage.cli.api_options import api_client
from moorage.cli.options import add_connection_arguments, client_from_arguments
from moorage.cli.output import Table
from moorage.conf import load_config
from moorage.image.client import SERVICE_TYPE, GlanceClient, GlanceError
from moorage.model.glance import images_from_listing
from moorage.model.image import Image, InvalidImageProperty
from moorage.model.vocabulary import Prefilter
from moorage.placement.client import TOKEN_ENV as PLACEMENT_TOKEN_ENV
from moorage.placement.client import URL_ENV as PLACEMENT_URL_ENV
from moorage.placement.client import PlacementClient
from moorage.scheduler.bootability import (
    PREFILTERS,
    Assessment,
    HostTraits,
    Requirement,
    assess,
    configured_prefilters,
    image_requirements,
    parse_prefilter,
    required_under,
    traits_of_interest,
    unbootable_reason,
)
from moorage.scheduler.host_traits import HostTraitsReader

EXIT_STRANDED = 3
CATALOGUE = "the compute API's catalogue"
# Hosts named per family before "and N more".
DEFAULT_HOSTS_SHOWN = 5


class MissingColumn(FormattableColumn[list[str]]):
    """Traits no host reports: "COMPUTE_IMAGE_TYPE_VMDK (disk_format=vmdk)" in tables,
    the trait names in JSON/YAML."""

    def __init__(self, missing: Sequence[Requirement]) -> None:
        super().__init__([r.trait for r in missing])
        self._described = [str(r) for r in missing]

    def human_readable(self) -> str:
        return "\n".join(self._described)


class Silent(TypedDict):
    """The hosts that report no trait of a family: how many, and the first few."""

    count: int
    hosts: list[str]


class NotReportingColumn(FormattableColumn[dict[str, Silent]]):
    """Hosts that report no trait of a family: "COMPUTE_NET_VIF_MODEL_*: kvm3, kvm4 and
    12 more" in tables, {family: {"count", "hosts"}} in JSON/YAML."""

    def human_readable(self) -> str:
        return "\n".join(_hosts_line(family, found["hosts"], found["count"])
                         for family, found in self._value.items())


def _hosts_line(family: str, shown: Sequence[str], count: int) -> str:
    return f"{family}_*: {_host_names(shown, count)}"


def _host_names(shown: Sequence[str], count: int) -> str:
    """"kvm3, kvm4 and 12 more": the hosts shown, of ``count``."""
    more = f" and {count - len(shown)} more" if count > len(shown) else ""
    return ", ".join(shown) + more


class CannotColumn(NotReportingColumn):
    """Hosts that report a needed trait unsupported: "COMPUTE_VIOMMU_MODEL_INTEL: pc1,
    vc" in tables, {trait: {"count", "hosts"}} in JSON/YAML."""

    def human_readable(self) -> str:
        return "\n".join(f"{trait}: {_host_names(found['hosts'], found['count'])}"
                         for trait, found in self._value.items())


def named_as_listed(hosts: Sequence[HostTraits], reports: Mapping[str, HostReport] | None
                    ) -> list[HostTraits]:
    """The hosts named as ``moorage host list`` names them (a service with several
    nodes: ``HOST:NODE``), with what each node's driver reports unsupported, where the
    compute API said (``reports``: provider uuid -> report; None: not known)."""
    if reports is None:
        return list(hosts)
    found = []
    for host in hosts:
        report = reports.get(host.uuid)
        if report is None:  # a provider no compute service owns: as placement names it
            found.append(host)
            continue
        found.append(dataclasses.replace(host, name=report.name, refused=report.refused))
    return found


@dataclasses.dataclass(frozen=True)
class HostReport:
    """A node as the compute API knows it: its host's name and its driver's "no"."""

    name: str
    refused: frozenset[str]


def host_reports(listing: Sequence[Mapping[str, object]]) -> dict[str, HostReport]:
    """GET /scheduler/hosts' answer by provider uuid."""
    found = {}
    for host in listing:
        nodes = host.get("nodes")
        if not isinstance(nodes, list):
            continue
        for node in nodes:
            if not isinstance(node, dict):
                continue
            name = str(host.get("host")) if len(nodes) == 1 else (
                f"{host.get('host')}:{node.get('node')}")
            found[str(node.get("provider_uuid"))] = HostReport(
                name, frozenset(str(t) for t in node.get("refused") or ()))
    return found


def _host_reports(parsed_args: argparse.Namespace, cloud_options: argparse.Namespace,
                  source: str) -> tuple[dict[str, HostReport] | None, str | None]:
    """What each node's driver reports unsupported, from a Moorage compute API (when one
    is named, or gave the images), and why not otherwise."""
    named = (parsed_args.os_compute_url or os.environ.get(COMPUTE_URL_ENV)
             or cloud.chosen(cloud_options) or source == CATALOGUE)
    if not named:
        return None, "no compute API named: --os-compute-url"
    try:
        client = api_client(parsed_args, cloud_options, token_option="os_compute_token")
        return host_reports(client.scheduler_hosts()), None
    except ComputeApiError as exc:
        return None, f"the compute API does not say: {exc}"


class Preflight(Lister):
    """Count, per image, the hosts that can boot it today and with each prefilter on;
    name the traits no host reports and the hosts that do not report them yet.
    Exit status 3 when the planned prefilters would leave an image that boots today
    with no host."""

    COLUMNS = ("id", "name", "disk_format", "hosts_today",
               *(f"with_{p}" for p in PREFILTERS), "with_all", "missing", "not_reporting",
               "cannot")

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_connection_arguments(parser)
        compute = parser.add_argument_group("compute API (the image catalogue)")
        compute.add_argument(
            "--os-compute-url", metavar="URL", default=None,
            help=f"compute API endpoint (env {COMPUTE_URL_ENV}); not read with --image-file")
        compute.add_argument(
            "--os-image-url", metavar="URL", default=None,
            help="an image service's Glance v2 endpoint to read the images from (every "
            "page), instead of the catalog's (with --os-cloud or OS_*: the image service "
            "is read by default) or the compute API's catalogue")
        compute.add_argument(
            "--os-compute-token", metavar="TOKEN", default=None,
            help=f"DEVELOPMENT: an X-Auth-Token for the compute API, instead of Keystone's "
            f"(env {COMPUTE_TOKEN_ENV})")
        parser.add_argument(
            "--enable", metavar="PREFILTER", action="append", default=[],
            help="a prefilter to be turned on: "
            f"{' or '.join(PREFILTERS)} (repeatable; default: both)")
        parser.add_argument(
            "--image-file", metavar="FILE",
            help="the images of a Glance GET /v2/images answer saved as JSON, instead "
            "of the compute API's catalogue")
        parser.add_argument(
            "--image", metavar="IMAGE", action="append", default=[],
            help="only this image, by id or name (repeatable)")
        parser.add_argument(
            "--config-file", metavar="PATH", action="append", default=[],
            help="a configuration whose [scheduler] options say which prefilters are on "
            "today (Moorage's or nova's: the names are the same; default: none on)")
        parser.add_argument(
            "--hosts-shown", metavar="N", type=int, default=DEFAULT_HOSTS_SHOWN,
            help=f"hosts named per trait family (default {DEFAULT_HOSTS_SHOWN})")
        return parser

    def run(self, parsed_args: argparse.Namespace) -> int:
        self._status = 0
        super().run(parsed_args)
        return self._status

    def take_action(self, parsed_args: argparse.Namespace) -> Table:
        try:
            enabled = frozenset(parse_prefilter(name) for name in parsed_args.enable)
        except ValueError as exc:
            raise ValueError(f"--enable: {exc}") from None
        conf = load_config(parsed_args.config_file)
        configured = configured_prefilters(conf)
        catalogue, notes, source = _images(parsed_args, self.app.options)
        images = _chosen(catalogue, parsed_args.image, source)
        for note in notes:
            self.app.stderr.write(note + "\n")
        planned = configured | (enabled or frozenset(PREFILTERS))
        requirements = {image.id: image_requirements(image) for image in images}
        every = [r for found in requirements.values() for r in found]
        reader = HostTraitsReader(_placement(parsed_args, self.app.options, conf))
        hosts = reader.hosts(
            traits_of_interest(every),
            (f for r in required_under(every, planned) if (f := r.family) is not None))
        reports, why_not = _host_reports(parsed_args, self.app.options, source)
        hosts = named_as_listed(hosts, reports)
        assessments = [assess(image, hosts, configured, planned) for image in images]
        self._report(images, hosts, assessments, configured, planned, reader.requests,
                     parsed_args.hosts_shown, why_not)
        self._status = EXIT_STRANDED if any(a.stranded for a in assessments) else 0
        rows = [(image.id, image.name, image.disk_format, found.hosts,
                 *(found.with_prefilter[p] for p in PREFILTERS), found.with_all,
                 MissingColumn(list(found.missing)),
                 NotReportingColumn(_capped(found.not_reporting, parsed_args.hosts_shown)),
                 CannotColumn(_capped(found.cannot, parsed_args.hosts_shown)))
                for image, found in zip(images, assessments, strict=True)]
        return self.COLUMNS, rows

    def _report(self, images: Sequence[Image], hosts: Sequence[HostTraits],
                assessments: Sequence[Assessment], configured: frozenset[Prefilter],
                planned: frozenset[Prefilter], requests: int, shown: int,
                unreported: str | None) -> None:
        """What the table means, on stderr (so that -f json stays clean): the hosts,
        each image the plan would strand and why, the hosts not reporting yet and
        those that cannot, and the verdict the exit status carries. ``unreported``:
        why the hosts' own unsupported reports could not be read."""
        enabled = sum(1 for host in hosts if host.enabled)
        out = [f"{len(hosts)} compute hosts ({enabled} enabled), {len(images)} images; "
               f"prefilters on today: {_names(configured)}; planned: {_names(planned)} "
               f"({requests} placement requests)"]
        if unreported:
            out.append(f"the hosts' own unsupported reports were not read ({unreported}): "
                       "a host that reports no trait of a family is counted as not "
                       "reporting it yet, and today's late checks are not predicted")
        stranded = [(image, found) for image, found in zip(images, assessments, strict=True)
                    if found.stranded]
        for image, found in stranded:
            reason = unbootable_reason(hosts, required_under(image_requirements(image),
                                                             found.planned))
            out.append(f"  {image.name or image.id} ({image.id}): {reason}")
        for family, quiet in _union(a.not_reporting for a in assessments).items():
            out.append(f"hosts not reporting {family}_* yet ({len(quiet)} of {enabled} "
                       f"enabled): {_host_names(quiet[:shown], len(quiet))}")
        for trait, refusing in _union(a.cannot for a in assessments).items():
            out.append(f"hosts that cannot give {trait} (they report it unsupported; "
                       f"{len(refusing)} of {enabled} enabled): "
                       f"{_host_names(refusing[:shown], len(refusing))}")
        out.append(
            f"turning on {_names(planned - configured)} would leave {len(stranded)} "
            "image(s) that boot today with no host" if stranded else
            f"turning on {_names(planned - configured)} leaves every image that boots "
            "today bootable")
        self.app.stderr.write("\n".join(out) + "\n")


def _union(found: Iterable[Mapping[str, Sequence[str]]]) -> dict[str, list[str]]:
    """Key -> every host any of the images' ``found`` lists under it, sorted by key and
    by host."""
    merged: dict[str, set[str]] = {}
    for hosts_by_key in found:
        for key, names in hosts_by_key.items():
            merged.setdefault(key, set()).update(names)
    return {key: sorted(names) for key, names in sorted(merged.items())}


def _names(prefilters: Iterable[Prefilter]) -> str:
    return ", ".join(p for p in PREFILTERS if p in set(prefilters)) or "none"


def _capped(silent: Mapping[str, Sequence[str]], shown: int) -> dict[str, Silent]:
    return {family: {"count": len(names), "hosts": list(names[:shown])}
            for family, names in silent.items()}


def _placement(parsed_args: argparse.Namespace, cloud_options: argparse.Namespace,
               conf: cfg.ConfigOpts) -> PlacementClient:
    """Placement as the flags, then the cloud (--os-cloud, OS_*), then the credentials of
    the --config-file (a nova.conf's [placement]: auth_type, auth_url...) say."""
    given = (parsed_args.os_placement_url or parsed_args.os_token
             or os.environ.get(PLACEMENT_URL_ENV) or os.environ.get(PLACEMENT_TOKEN_ENV))
    if not given and not cloud.chosen(cloud_options) and conf.placement.auth_type:
        return PlacementClient.from_conf(conf)
    return client_from_arguments(parsed_args, cloud_options)


def _images(parsed_args: argparse.Namespace, cloud_options: argparse.Namespace
            ) -> tuple[list[Image], list[str], str]:
    """The images to check (the file's, the cloud's image service's, or the compute
    API's catalogue), what the user should know about what was left out, and where
    they were read."""
    path = parsed_args.image_file
    if path:
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except OSError as exc:
            raise ValueError(f"--image-file {path}: cannot read it: "
                             f"{exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"--image-file {path}: not JSON: {exc}") from None
        listing = images_from_listing(data, path)
        notes = [f"{path}: {listing.not_active} image(s) not active, not counted"
                 ] if listing.not_active else []
        if listing.next_page:
            notes.append(f"{path}: one page of a longer listing (next: {listing.next_page}); "
                         "images on the other pages are not checked")
        return list(listing.images), notes, path
    if parsed_args.os_image_url or cloud.chosen(cloud_options):
        return _glance_images(parsed_args, cloud_options)
    client = api_client(parsed_args, cloud_options, token_option="os_compute_token")
    images = []
    for record in client.images():
        try:
            images.append(Image.create(
                str(record["id"]), str(record.get("name") or ""),
                str(record.get("disk_format") or "qcow2"),
                str(record.get("container_format") or "bare"),
                dict(record.get("properties") or {})))
        except InvalidImageProperty as exc:
            raise ValueError(f"image {record['id']} of {client.url}: {exc}") from None
    return images, [], CATALOGUE


def _glance_images(parsed_args: argparse.Namespace, cloud_options: argparse.Namespace
                   ) -> tuple[list[Image], list[str], str]:
    """Every page of the image service's listing: the catalog's (service type image),
    or --os-image-url's."""
    glance = GlanceClient(cloud.credentials(
        cloud_options, SERVICE_TYPE, url=parsed_args.os_image_url,
        token=parsed_args.os_compute_token or os.environ.get(COMPUTE_TOKEN_ENV),
        development_url="", development_token=COMPUTE_DEFAULT_TOKEN))
    try:
        records = list(glance.images())
        source = f"the image service at {glance.url}"
    except GlanceError as exc:
        raise ValueError(str(exc)) from None
    images: list[Image] = []
    notes: list[str] = []
    not_active = 0
    for record in records:  # one at a time: an image nova would refuse is named, not fatal
        try:
            listing = images_from_listing({"images": [record]}, source)
        except ValueError as exc:
            notes.append(f"skipped, nova would refuse it: {exc}")
            continue
        images.extend(listing.images)
        not_active += listing.not_active
    if not_active:
        notes.insert(0, f"{source}: {not_active} image(s) not active, not counted")
    return images, notes, source


def _chosen(images: list[Image], refs: Sequence[str], source: str) -> list[Image]:
    """The images ``refs`` name (by id, else by name), or every image without refs."""
    if not refs:
        return images
    chosen: list[Image] = []
    for ref in refs:
        found = [i for i in images if i.id == ref] or [i for i in images if i.name == ref]
        if not found:
            known = ", ".join(sorted(i.name or i.id for i in images)[:10]) or "none"
            more = f" and {len(images) - 10} more" if len(images) > 10 else ""
            raise ValueError(f"--image {ref}: no image with that id or name in {source}; "
                             f"there are: {known}{more}")
        chosen.extend(i for i in found if i not in chosen)
    return chosen


COMMANDS: dict[str, type[Command]] = {"scheduler preflight": Preflight}
