"""What the commands that talk to the compute API share: the connection options,
``KEY=VALUE`` parsing, finding a thing by name or id (as openstackclient does) and
the columns that format dicts and lists."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from cliff.columns import FormattableColumn

from moorage import service_auth
from moorage.api.client import (
    DEFAULT_TOKEN,
    DEFAULT_URL,
    TOKEN_ENV,
    URL_ENV,
    ComputeApiClient,
    ComputeApiError,
    Json,
)
from moorage.cli import cloud


def add_api_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("compute API")
    group.add_argument(
        "--os-compute-url", metavar="URL", default=None,
        help=f"compute API endpoint: its root, or as the catalog names it (.../v2.1) "
        f"(env {URL_ENV}); with --os-cloud, instead of the catalog's; without, default "
        f"{DEFAULT_URL}",
    )
    group.add_argument(
        "--os-token", metavar="TOKEN", default=None,
        help=f"DEVELOPMENT: an X-Auth-Token to send as it is, instead of Keystone's "
        f"(env {TOKEN_ENV}); without a cloud, default {DEFAULT_TOKEN!r}, which only the "
        "noauth2 mode accepts, as an administrator",
    )


def api_client(parsed_args: argparse.Namespace, cloud_options: argparse.Namespace, *,
               token_option: str = "os_token") -> ComputeApiClient:
    """The compute API as the command's options and the cloud's (``cloud_options``: the
    ``moorage`` command's own) say; ``token_option``: the command's option holding a
    token given by hand."""
    token = getattr(parsed_args, token_option, None) or os.environ.get(TOKEN_ENV)
    url = parsed_args.os_compute_url or os.environ.get(URL_ENV)
    if cloud.development(cloud_options, token):
        return ComputeApiClient(credentials=service_auth.DevelopmentToken(
            url or DEFAULT_URL, token or DEFAULT_TOKEN))
    # With a cloud, images are the catalog's image service's (a Glance), not the
    # compute API's: one token for both.
    found = cloud.keystone_credentials(cloud_options, {"compute": url, "image": None})
    return ComputeApiClient(credentials=found["compute"], image_credentials=found["image"])


def key_values(texts: Iterable[str], option: str = "--property") -> dict[str, str]:
    """``["K=V", ...]`` as a dict; ValueError naming the option for a malformed item."""
    pairs: dict[str, str] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} expects KEY=VALUE, got {text!r}")
        pairs[key.strip()] = value
    return pairs


def keys(texts: Iterable[str], option: str = "--property") -> list[str]:
    """``--property KEY`` values (for unset); ValueError for an empty or K=V one."""
    names = []
    for text in texts:
        if not text.strip() or "=" in text:
            raise ValueError(f"{option} expects a KEY alone here, got {text!r}")
        names.append(text.strip())
    return names


def find(kind: str, ref: str, by_id: Callable[[str], Json],
         listing: Callable[[], Iterable[Json]]) -> Json:
    """The ``kind`` whose id is ``ref``, else the one named ``ref``: openstackclient's
    rule, with its messages for no match and for several."""
    try:
        return by_id(ref)
    except ComputeApiError as exc:
        if exc.status not in (400, 404):
            raise
    named = [item for item in listing() if item.get("name") == ref]
    if not named:
        raise ComputeApiError(f"No {kind} with a name or ID of '{ref}' exists.", 404)
    if len(named) > 1:
        raise ComputeApiError(
            f"More than one {kind} exists with the name '{ref}'; use its ID "
            f"({', '.join(str(item.get('id')) for item in named)}).", 409)
    return named[0]


class DictColumn(FormattableColumn[Mapping[str, object]]):
    """Properties and metadata: "k='v', k2='v2'" in tables (openstackclient's form),
    an object in JSON/YAML."""

    def human_readable(self) -> str:
        return ", ".join(f"{k}='{v}'" for k, v in sorted(self._value.items()))


class ListColumn(FormattableColumn[Sequence[object]]):
    """Hosts and the like: comma-joined in tables, a list in JSON/YAML."""

    def human_readable(self) -> str:
        return ", ".join(str(v) for v in self._value)


def requested(parsed_args: argparse.Namespace, column: str) -> bool:
    """Whether ``-c`` asks for ``column`` (no ``-c`` asks for every column)."""
    return not parsed_args.columns or column in parsed_args.columns
