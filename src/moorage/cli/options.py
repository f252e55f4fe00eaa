"""Command-line options shared by the ``moorage placement`` client commands."""

from __future__ import annotations

import argparse
import os

import os_resource_classes as orc

from moorage.cli import cloud
from moorage.placement.client import DEFAULT_TOKEN, DEFAULT_URL, TOKEN_ENV, URL_ENV, PlacementClient


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("placement service")
    group.add_argument(
        "--os-placement-url", metavar="URL", default=None,
        help=f"placement endpoint (env {URL_ENV}); with --os-cloud, instead of the "
        f"catalog's; without, default {DEFAULT_URL}",
    )
    group.add_argument(
        "--os-token", metavar="TOKEN", default=None,
        help=f"DEVELOPMENT: an X-Auth-Token to send as it is, instead of Keystone's "
        f"(env {TOKEN_ENV}); without a cloud, default {DEFAULT_TOKEN!r}, which only the "
        "noauth2 mode accepts, as an administrator",
    )


def client_from_arguments(parsed_args: argparse.Namespace,
                          cloud_options: argparse.Namespace) -> PlacementClient:
    """Placement as the command's options and the cloud's (``cloud_options``: the
    ``moorage`` command's own) say."""
    return PlacementClient(credentials=cloud.credentials(
        cloud_options, "placement",
        url=parsed_args.os_placement_url or os.environ.get(URL_ENV),
        token=parsed_args.os_token or os.environ.get(TOKEN_ENV),
        development_url=DEFAULT_URL, development_token=DEFAULT_TOKEN))


def resource_amount(text: str) -> tuple[str, int]:
    """Parse ``RC=AMOUNT`` (or ``RC:AMOUNT``) for argparse."""
    name, sep, amount = text.replace(":", "=", 1).partition("=")
    if not sep or not name.strip() or not amount.isdigit() or int(amount) < 1:
        raise argparse.ArgumentTypeError(
            f"expected RESOURCE_CLASS=AMOUNT with a positive amount, got {text!r}")
    return name.strip().upper(), int(amount)


def resource_order(resource_class: str) -> tuple[int, str]:
    """Sort key: standard classes in os-resource-classes order, then custom ones by name."""
    try:
        return orc.STANDARDS.index(resource_class), ""
    except ValueError:
        return len(orc.STANDARDS), resource_class
