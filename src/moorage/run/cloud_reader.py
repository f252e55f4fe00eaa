"""Reading a real cloud for its twin (moorage.run.capture), read-only: every request is
a GET. Placement's providers with their inventories and traits, Glance's images (every
page), nova's flavors with their extra specs and the servers that run today, each
service found in Keystone's catalog with the credentials of moorage.service_auth.

Nova is asked at microversion 2.61 (flavors carry their extra specs, a server its
flavor's name, 2.47), which nova has had since Rocky; listings are followed page by
page (``flavors_links``, ``servers_links``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urlsplit

import orjson

from moorage import service_auth, transport
from moorage.api.client import API_PREFIX, service_root
from moorage.image.client import GlanceClient, GlanceError
from moorage.placement.client import PlacementClient, PlacementError
from moorage.run.capture import Observed, ObservedFlavor, ObservedHost, ObservedServer

NOVA_MICROVERSION = "2.61"
# Servers read at most (their flavor and image only are kept).
MAX_SERVERS = 200_000
MAX_IMAGES = 20_000

Progress = Callable[[str], None]


class CloudReadError(Exception):
    """The cloud could not be read; ``str()`` is one line."""


class NovaReader:
    """GETs of nova's compute API: flavors and servers, page after page."""

    def __init__(self, credentials: service_auth.Credentials, *,
                 timeout: float = 60.0) -> None:
        self._endpoint = service_auth.Endpoint(credentials, timeout=timeout, maxsize=2,
                                               root=service_root)

    def _get(self, path: str) -> Mapping[str, object]:
        headers = {"accept": "application/json",
                   "openstack-api-version": f"compute {NOVA_MICROVERSION}",
                   "x-openstack-nova-api-version": NOVA_MICROVERSION}
        try:
            reply = self._endpoint.request("GET", API_PREFIX + path, body=None,
                                           headers=headers, resend=True)
        except ValueError as exc:
            raise CloudReadError(str(exc)) from None
        except transport.TransportError as exc:
            raise CloudReadError(f"compute API: GET {path} failed: {exc}") from None
        if reply.status >= 400:
            hint = " (the twin reads as an admin of the cloud)" if reply.status == 403 else ""
            raise CloudReadError(
                f"compute API: GET {path}: {reply.status} {reply.reason}{hint}")
        try:
            body = orjson.loads(reply.data) if reply.data else None
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            raise CloudReadError(f"compute API: GET {path}: not a JSON object")
        return body

    def _pages(self, path: str, key: str, limit: int) -> Iterator[Mapping[str, object]]:
        seen: set[str] = set()
        given = 0
        while True:
            body = self._get(path)
            items = body.get(key)
            if not isinstance(items, list):
                raise CloudReadError(f"compute API: GET {path}: no {key!r} list; is it nova?")
            for item in items:
                if isinstance(item, dict):
                    if given >= limit:
                        return
                    given += 1
                    yield item
            following = _next_link(body.get(f"{key}_links"))
            if following is None or not items:
                return
            query = urlsplit(following).query
            if query in seen:
                raise CloudReadError(f"compute API: the {key} listing pages forever")
            seen.add(query)
            path = f"{path.partition('?')[0]}?{query}"

    def flavors(self) -> list[ObservedFlavor]:
        found = []
        for item in self._pages("/flavors/detail?is_public=None", "flavors", 100_000):
            specs = item.get("extra_specs")
            found.append(ObservedFlavor(
                id=str(item.get("id")), name=str(item.get("name") or item.get("id")),
                vcpus=_int(item.get("vcpus")), ram=_int(item.get("ram")),
                disk=_int(item.get("disk")),
                extra_specs={str(k): str(v) for k, v in specs.items()}
                if isinstance(specs, dict) else {}))
        return found

    def servers(self, limit: int = MAX_SERVERS) -> list[ObservedServer]:
        found = []
        for item in self._pages("/servers/detail?all_tenants=1", "servers", limit):
            flavor = item.get("flavor")
            image = item.get("image")
            found.append(ObservedServer(
                flavor=str((flavor or {}).get("original_name") or (flavor or {}).get("id")
                           or "") if isinstance(flavor, dict) else "",
                image=str(image.get("id") or "") if isinstance(image, dict) else ""))
        return found


def _next_link(links: object) -> str | None:
    if isinstance(links, list):
        for link in links:
            if isinstance(link, dict) and link.get("rel") == "next":
                href = link.get("href")
                return href if isinstance(href, str) else None
    return None


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def read_cloud(name: str, credentials: Callable[[str], service_auth.Credentials], *,
               progress: Progress = lambda line: None,
               max_images: int = MAX_IMAGES) -> Observed:
    """Everything the twin needs of the cloud ``name``; ``credentials(service_type)``
    gives how each service is reached. Only GETs are sent."""
    placement = PlacementClient(credentials=credentials("placement"))
    try:
        providers = placement.providers()
        roots = [p for p in providers if p.parent_uuid is None]
        progress(f"placement: {len(providers)} providers ({len(roots)} roots), reading "
                 "their inventories and traits")
        details = placement.details(roots, usages=False)
    except PlacementError as exc:
        raise CloudReadError(str(exc)) from None
    hosts = [ObservedHost(d.provider.name,
                          {rc: inv.total for rc, inv in (d.inventories or {}).items()},
                          frozenset(d.traits or ())) for d in details]
    glance = GlanceClient(credentials("image"))
    try:
        images = list(glance.images(limit=max_images))
    except GlanceError as exc:
        raise CloudReadError(str(exc)) from None
    progress(f"image service: {len(images)} images in {glance.pages_read} page(s)"
             + (f" (stopped at --max-images {max_images})" if len(images) >= max_images
                else ""))
    nova = NovaReader(credentials("compute"))
    flavors = nova.flavors()
    servers = nova.servers()
    progress(f"compute: {len(flavors)} flavors, {len(servers)} servers")
    return Observed(name, hosts, images, flavors, servers,
                    children=len(providers) - len(roots))
