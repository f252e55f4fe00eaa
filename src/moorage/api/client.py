"""A typed client of the compute API, for the ``moorage flavor|image|server|host|aggregate``
commands.

It speaks nova's shapes under ``/v2.1``, and glance v2 to the image service under
``/image`` on the same listener (images); it stays thin: each method is one request
and returns the API's own record (a JSON object), so the commands show what the
service said. Every failure becomes a ``ComputeApiError`` whose message is one line
an operator can act on: "compute API at URL is not reachable: connection refused",
or the API's own message from its nova-style error body
(``{"itemNotFound": {"code": 404, "message": ...}}``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, cast
from urllib.parse import quote, urlencode

import orjson

from moorage import service_auth, transport
from moorage.api import microversion
from moorage.image import attributes
from moorage.image.client import image_root

URL_ENV = "MOORAGE_COMPUTE_URL"
TOKEN_ENV = "MOORAGE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8774"
# As for placement: the development noauth2 mode reads the token as "user[:project]",
# and "admin" is an administrator.
DEFAULT_TOKEN = "admin"
API_PREFIX = "/v2.1"
# The image service's v2 API on the same listener (moorage.api.image_service).
IMAGE_PREFIX = "/image/v2"
# The same routes at a Glance's own root.
GLANCE_PREFIX = "/v2"
IMAGE_PATCH = "application/openstack-images-v2.1-json-patch"
# What glance shows of an image beside its properties.
GLANCE_ATTRIBUTES = frozenset(attributes.CORE) | attributes.READ_ONLY
# Requests sent once more should the server close a kept-alive connection as they
# went out on it (nothing was answered; repeating them changes nothing).
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

# One record of the API as it answered (a flavor, a server...), read field by field by
# the commands; what a field holds is nova's shape, checked where it is read.
Json = dict[str, Any]


class TraitOffer(TypedDict):
    """A standard trait some hosts have, and what is free on them."""

    trait: str
    label: str
    hosts: int
    free: dict[str, int]


class FamilyOffer(TypedDict):
    family: str
    title: str
    traits: list[TraitOffer]


class PropertyValue(TypedDict):
    """An image property's value, the trait it requires and whether hosts offer it."""

    value: str
    trait: str | None
    availability: str
    hosts: int | None


class PropertyOffer(TypedDict):
    property: str
    checked_by: str
    values: list[PropertyValue]


class Capabilities(TypedDict):
    """GET /v2.1/capabilities: what the cloud offers, with no host named."""

    host_floor: int
    families: list[FamilyOffer]
    image_properties: list[PropertyOffer]


class ComputeApiError(Exception):
    """A request failed; ``str()`` is one line saying what went wrong."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def not_found(self) -> bool:
        return self.status == 404


def _segment(value: str | int) -> str:
    """One path segment, escaped (names and ids come from the command line)."""
    return quote(str(value), safe=":@")


# A catalog's compute endpoint names its version, and the legacy one the project too:
# http://host:8774/v2.1, https://cloud/compute/v2.1, http://host:8774/v2/<project id>.
_VERSIONED = re.compile(r"/v2(?:\.1)?(?:/[0-9A-Fa-f-]{32,36})?/*$")


def service_root(url: str) -> str:
    """The compute API's root from ``url``, a catalog's endpoint included: its version
    (``/v2.1``, ``/v2/<project id>``) taken off, since the client adds ``/v2.1`` itself."""
    return _VERSIONED.sub("", url.rstrip("/"))


class ComputeApiClient:
    """Talks to one compute API as ``credentials`` say (moorage.service_auth: Keystone's
    renewed tokens and catalog), or as the one ``token`` at ``url`` (DEVELOPMENT; the
    environment's, then the defaults). The endpoint: the API's root, or as a catalog
    names it (``.../v2.1``)."""

    def __init__(self, url: str | None = None, token: str | None = None, *,
                 credentials: service_auth.Credentials | None = None,
                 image_credentials: service_auth.Credentials | None = None,
                 timeout: float = 60.0) -> None:
        self.credentials = credentials or service_auth.DevelopmentToken(
            url or os.environ.get(URL_ENV) or DEFAULT_URL,
            token or os.environ.get(TOKEN_ENV) or DEFAULT_TOKEN)
        self._endpoint = service_auth.Endpoint(self.credentials, timeout=timeout,
                                               maxsize=4, root=service_root)
        # The image service when it is not the one beside the compute API (a cloud's
        # Glance, from the catalog): its Glance v2 routes at its own root.
        self._images = None if image_credentials is None else service_auth.Endpoint(
            image_credentials, timeout=timeout, maxsize=2, root=image_root)
        self.timeout = self._endpoint.timeout
        # Moorage's own tools read the newest shapes, and Moorage's additions.
        self._headers = {"accept": "application/json",
                         microversion.HEADER: f"compute {microversion.MAX_VERSION}",
                         microversion.ADDITIONS_HEADER: "1"}

    @property
    def url(self) -> str:
        """The compute API's root (Keystone's catalog asked the first time);
        ComputeApiError when it cannot be found."""
        try:
            return self._endpoint.url
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise ComputeApiError(str(exc)) from None

    # -- transport ------------------------------------------------------------
    def request(self, method: str, path: str, *,
                params: Sequence[tuple[str, str]] = (), json: object = None,
                prefix: str = API_PREFIX, content_type: str = "application/json") -> object:
        """Send one request to ``prefix`` (``/v2.1``; the image service's
        ``IMAGE_PREFIX``) + ``path``; the decoded JSON body (None when empty), or
        ComputeApiError."""
        endpoint = self._endpoint
        if prefix == IMAGE_PREFIX and self._images is not None:
            endpoint, prefix = self._images, GLANCE_PREFIX
        url = prefix + path + ("?" + urlencode(params) if params else "")
        # Errors name compute paths as nova's docs do (/flavors), others in full.
        path = path if prefix == API_PREFIX else prefix + path
        body = None if json is None else orjson.dumps(json)
        headers = self._headers if body is None else {
            **self._headers, "content-type": content_type}
        try:
            response = endpoint.request(method, url, body=body, headers=headers,
                                        resend=method in IDEMPOTENT)
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise ComputeApiError(str(exc)) from None
        except transport.TransportError as exc:
            if exc.unreachable:
                raise ComputeApiError(
                    f"compute API at {self.url} is not reachable: {exc}") from None
            if exc.timed_out:
                raise ComputeApiError(
                    f"compute API at {self.url} did not answer {method} {path} "
                    f"within {self.timeout:g}s"
                ) from None
            raise ComputeApiError(
                f"compute API at {self.url}: {method} {path} failed: {exc}") from None
        if response.status >= 400:
            raise ComputeApiError(
                f"{method} {path}: {response.status} {response.reason}: "
                f"{error_message(response.data)}",
                status=response.status,
            )
        if not response.data:
            return None
        try:
            return orjson.loads(response.data)
        except orjson.JSONDecodeError:
            raise ComputeApiError(
                f"{method} {path}: {self.url} answered {response.status} with a body "
                "that is not JSON; is it a Moorage compute API?"
            ) from None

    def _member(self, method: str, path: str, key: str, *,
                params: Sequence[tuple[str, str]] = (), json: object = None) -> object:
        """What the answer (a JSON object) holds under ``key``."""
        body = self.request(method, path, params=params, json=json)
        if not isinstance(body, dict) or key not in body:
            raise ComputeApiError(
                f"{method} {path}: the answer has no {key!r}; is {self.url} a Moorage "
                "compute API?")
        return body[key]

    def _list(self, path: str, key: str, params: Sequence[tuple[str, str]] = ()) -> list[Json]:
        """GET a listing: the records under ``key``."""
        found = self._member("GET", path, key, params=params)
        if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
            raise ComputeApiError(f"GET {path}: {key!r} is not a list of objects; is "
                                  f"{self.url} a Moorage compute API?")
        return found

    def _record(self, method: str, path: str, key: str, json: object = None) -> Json:
        """One record: the JSON object under ``key`` of the answer."""
        found = self._member(method, path, key, json=json)
        if not isinstance(found, dict):
            raise ComputeApiError(f"{method} {path}: {key!r} is not a JSON object; is "
                                  f"{self.url} a Moorage compute API?")
        return found

    def _object(self, method: str, path: str, json: object = None) -> Json:
        """A request whose answer is one JSON object."""
        body = self.request(method, path, json=json)
        if not isinstance(body, dict):
            raise ComputeApiError(
                f"{method} {path}: the answer is not a JSON object; is {self.url} a "
                "Moorage compute API?")
        return body

    # -- flavors ------------------------------------------------------------------
    def flavors(self) -> list[Json]:
        """Every flavor the caller may see: for an administrator the private ones too
        (is_public=none; nova lists only public ones unless asked, and ignores the
        parameter for anyone else)."""
        return self._list("/flavors/detail", "flavors", [("is_public", "none")])

    def flavor(self, flavor_id: str) -> Json:
        return self._record("GET", f"/flavors/{_segment(flavor_id)}", "flavor")

    def create_flavor(self, name: str, ram: int, vcpus: int, disk: int, *,
                      flavor_id: str | None = None, ephemeral: int | None = None,
                      swap: int | None = None,
                      extra_specs: Mapping[str, str] | None = None) -> Json:
        """Create a flavor; Moorage's API also takes its extra specs in the same request
        (validated with it: a refused spec leaves no flavor behind)."""
        body: Json = {"name": name, "ram": ram, "vcpus": vcpus, "disk": disk}
        if flavor_id is not None:
            body["id"] = flavor_id
        if ephemeral is not None:
            body["OS-FLV-EXT-DATA:ephemeral"] = ephemeral
        if swap is not None:
            body["swap"] = swap
        if extra_specs:
            body["extra_specs"] = dict(extra_specs)
        return self._record("POST", "/flavors", "flavor", {"flavor": body})

    def delete_flavor(self, flavor_id: str) -> None:
        self.request("DELETE", f"/flavors/{_segment(flavor_id)}")

    def extra_specs(self, flavor_id: str) -> dict[str, str]:
        return _strings(self._record("GET", f"/flavors/{_segment(flavor_id)}/os-extra_specs",
                                     "extra_specs"))

    def set_extra_specs(self, flavor_id: str, specs: Mapping[str, str]) -> dict[str, str]:
        return _strings(self._record("POST", f"/flavors/{_segment(flavor_id)}/os-extra_specs",
                                     "extra_specs", {"extra_specs": dict(specs)}))

    def delete_extra_spec(self, flavor_id: str, key: str) -> None:
        self.request("DELETE",
                     f"/flavors/{_segment(flavor_id)}/os-extra_specs/{_segment(key)}")

    # -- images -------------------------------------------------------------------
    # The image service (glance v2, IMAGE_PREFIX on the same listener). Records come
    # back in Moorage's shape: glance's attributes, and the properties glance shows
    # flat beside them gathered under "properties".
    def _image_request(self, method: str, path: str, json: object = None,
                       content_type: str = "application/json") -> object:
        return self.request(method, path, json=json, prefix=IMAGE_PREFIX,
                            content_type=content_type)

    def _image_record(self, method: str, path: str, json: object = None,
                      content_type: str = "application/json") -> Json:
        body = self._image_request(method, path, json, content_type)
        if not isinstance(body, dict):
            raise ComputeApiError(f"{method} {IMAGE_PREFIX}{path}: the answer is not a JSON "
                                  f"object; is {self.url} a Moorage compute API?")
        return image_record(body)

    def images(self) -> list[Json]:
        """Every image the caller sees, page after page."""
        found: list[Json] = []
        path: str | None = "/images"
        while path is not None:
            body = self._image_request("GET", path)
            page = body.get("images") if isinstance(body, dict) else None
            if not isinstance(page, list) or not all(isinstance(i, dict) for i in page):
                raise ComputeApiError(f"GET {IMAGE_PREFIX}/images: 'images' is not a list "
                                      f"of objects; is {self.url} a Moorage compute API?")
            found.extend(image_record(image) for image in page)
            following = body.get("next") if isinstance(body, dict) else None
            path = following.removeprefix("/v2") if isinstance(following, str) else None
        return found

    def image(self, image_id: str) -> Json:
        return self._image_record("GET", f"/images/{_segment(image_id)}")

    def create_image(self, name: str, *, disk_format: str | None = None,
                     container_format: str | None = None,
                     properties: Mapping[str, str] | None = None,
                     min_disk: int | None = None, min_ram: int | None = None,
                     visibility: str | None = None, image_id: str | None = None) -> Json:
        """Create an image (queued: no data) with glance's flat body."""
        body: Json = {**dict(properties or {}), "name": name}
        optional = {"id": image_id, "disk_format": disk_format,
                    "container_format": container_format, "min_disk": min_disk,
                    "min_ram": min_ram, "visibility": visibility}
        body.update({k: v for k, v in optional.items() if v is not None})
        return self._image_record("POST", "/images", body)

    def update_image(self, image_id: str, changes: Mapping[str, object]) -> Json:
        """Change an image's attributes (name, disk_format, ...) and ``properties``,
        where a property set to None is removed: sent as glance's JSON patch."""
        patch: list[Json] = [{"op": "replace", "path": f"/{name}", "value": value}
                             for name, value in changes.items() if name != "properties"]
        properties = changes.get("properties") or {}
        assert isinstance(properties, Mapping)
        for name, value in properties.items():
            pointer = "/" + str(name).replace("~", "~0").replace("/", "~1")
            patch.append({"op": "remove", "path": pointer} if value is None
                         else {"op": "add", "path": pointer, "value": value})
        return self._image_record("PATCH", f"/images/{_segment(image_id)}", patch,
                                  content_type=IMAGE_PATCH)

    def delete_image(self, image_id: str) -> None:
        self._image_request("DELETE", f"/images/{_segment(image_id)}")

    # -- servers ------------------------------------------------------------------
    def servers(self, params: Sequence[tuple[str, str]] = ()) -> list[Json]:
        """Every server the query lists, page after page: the API answers at most 1000
        at a time (nova's max_limit) and links a full page to the next."""
        found: list[Json] = []
        asked = [(name, value) for name, value in params if name != "marker"]
        page_params = list(params)
        while True:
            body = self.request("GET", "/servers/detail", params=page_params)
            if not isinstance(body, dict):
                body = {}
            page = body.get("servers")
            if not isinstance(page, list) or not all(isinstance(s, dict) for s in page):
                raise ComputeApiError(f"GET /servers/detail: 'servers' is not a list of "
                                      f"objects; is {self.url} a Moorage compute API?")
            found += page
            if not page or not body.get("servers_links"):
                return found
            page_params = [*asked, ("marker", str(page[-1]["id"]))]

    def server(self, server_id: str) -> Json:
        return self._record("GET", f"/servers/{_segment(server_id)}", "server")

    def create_server(self, name: str, flavor_ref: str, image_ref: str, *,
                      availability_zone: str | None = None,
                      boot_volume_size: int | None = None,
                      host: str | None = None) -> Json:
        """Ask for a server; boot_volume_size (GB) boots it from a new volume made
        from the image, as nova's block_device_mapping_v2 does."""
        body = server_body(name, flavor_ref, image_ref, availability_zone=availability_zone,
                           boot_volume_size=boot_volume_size, host=host)
        return self._record("POST", "/servers", "server", {"server": body})

    def plan(self, operation: str, argument: Json) -> Json:
        """The dry run (POST /scheduler/plan): ``operation`` is "server" (a boot, with
        ``server_body``'s argument), "resize" or "migrate" ({server_id, ...})."""
        return self._record("POST", "/scheduler/plan", "plan", {operation: argument})

    def delete_server(self, server_id: str) -> None:
        self.request("DELETE", f"/servers/{_segment(server_id)}")

    def server_action(self, server_id: str, action: str, argument: object = None) -> object:
        """POST /servers/{id}/action {action: argument}; the body, if any."""
        return self.request("POST", f"/servers/{_segment(server_id)}/action",
                            json={action: argument})

    def rebuild_server(self, server_id: str, image_ref: str) -> object:
        return self.server_action(server_id, "rebuild", {"imageRef": image_ref})

    def resize_server(self, server_id: str, flavor_ref: str) -> object:
        return self.server_action(server_id, "resize", {"flavorRef": flavor_ref})

    def confirm_resize(self, server_id: str) -> object:
        return self.server_action(server_id, "confirmResize")

    def revert_resize(self, server_id: str) -> object:
        return self.server_action(server_id, "revertResize")

    def migrate_server(self, server_id: str, host: str | None = None) -> object:
        return self.server_action(server_id, "migrate",
                                  None if host is None else {"host": host})

    def evacuate_server(self, server_id: str, host: str | None = None) -> object:
        return self.server_action(server_id, "evacuate",
                                  {} if host is None else {"host": host})

    def migrations(self, params: Sequence[tuple[str, str]] = ()) -> list[Json]:
        return self._list("/os-migrations", "migrations", params)

    # -- services and hypervisors -------------------------------------------------------
    def services(self, params: Sequence[tuple[str, str]] = ()) -> list[Json]:
        return self._list("/os-services", "services", params)

    def update_service(self, service_id: str | int, changes: Mapping[str, object]) -> Json:
        return self._record("PUT", f"/os-services/{_segment(service_id)}", "service",
                            dict(changes))

    def hypervisors(self) -> list[Json]:
        """Every hypervisor with its servers (from 2.88 nova's detail no longer counts
        them in ``running_vms``; ``with_servers`` lists them)."""
        return self._list("/os-hypervisors/detail", "hypervisors", [("with_servers", "true")])

    def scheduler_hosts(self) -> list[Json]:
        """Moorage's GET /scheduler/hosts (admins): each host with its nodes' providers
        and what each node's driver reports unsupported. ComputeApiError (404) from a
        compute API that is not Moorage's."""
        return self._list("/scheduler/hosts", "hosts")

    def capabilities(self) -> Capabilities:
        """What the cloud offers as standard traits (GET /capabilities, any user)."""
        return cast(Capabilities, self._record("GET", "/capabilities", "capabilities"))

    # -- aggregates ------------------------------------------------------------------
    def aggregates(self) -> list[Json]:
        return self._list("/os-aggregates", "aggregates")

    def aggregate(self, aggregate_id: str | int) -> Json:
        return self._record("GET", f"/os-aggregates/{_segment(aggregate_id)}", "aggregate")

    def create_aggregate(self, name: str, availability_zone: str | None = None) -> Json:
        body: Json = {"name": name}
        if availability_zone is not None:
            body["availability_zone"] = availability_zone
        return self._record("POST", "/os-aggregates", "aggregate", {"aggregate": body})

    def update_aggregate(self, aggregate_id: str | int,
                         changes: Mapping[str, object]) -> Json:
        return self._record("PUT", f"/os-aggregates/{_segment(aggregate_id)}", "aggregate",
                            {"aggregate": dict(changes)})

    def delete_aggregate(self, aggregate_id: str | int) -> None:
        self.request("DELETE", f"/os-aggregates/{_segment(aggregate_id)}")

    def aggregate_action(self, aggregate_id: str | int, action: str,
                         argument: object) -> Json:
        return self._record("POST", f"/os-aggregates/{_segment(aggregate_id)}/action",
                            "aggregate", {action: argument})

    def add_host(self, aggregate_id: str | int, host: str) -> Json:
        return self.aggregate_action(aggregate_id, "add_host", {"host": host})

    def remove_host(self, aggregate_id: str | int, host: str) -> Json:
        return self.aggregate_action(aggregate_id, "remove_host", {"host": host})

    def set_aggregate_metadata(self, aggregate_id: str | int,
                               metadata: Mapping[str, str | None]) -> Json:
        """Set metadata keys; a key set to None is removed (nova's semantics)."""
        return self.aggregate_action(aggregate_id, "set_metadata",
                                     {"metadata": dict(metadata)})


def _strings(record: Json) -> dict[str, str]:
    """A JSON object of strings (extra specs) as one."""
    return {str(key): str(value) for key, value in record.items()}


def image_record(glance: Mapping[str, object]) -> Json:
    """A glance v2 image in Moorage's shape: its attributes, and its properties (every
    other key) under "properties"."""
    record: Json = {k: v for k, v in glance.items() if k in GLANCE_ATTRIBUTES}
    record["properties"] = {k: v for k, v in glance.items() if k not in GLANCE_ATTRIBUTES}
    return record


def error_message(body: bytes) -> str:
    """The API's error message on one line. Nova's body is
    ``{"itemNotFound": {"code": 404, "message": "..."}}``; other shapes (a proxy's
    page, placement-style ``{"errors": [...]}``) give what they can."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    message = ""
    if isinstance(data, dict):
        if isinstance(data.get("message"), str) and "title" in data:  # glance's
            message = data["message"]
        for value in data.values():
            if message:
                break
            if isinstance(value, dict) and value.get("message"):
                message = str(value["message"])
                break
            if isinstance(value, list) and value and isinstance(value[0], dict):
                message = str(value[0].get("detail") or value[0].get("title") or "")
                break
    if not message and data is None:
        message = body[:200].decode(errors="replace")
    return " ".join(message.split()) or "(no detail)"


def server_body(name: str, flavor_ref: str, image_ref: str, *,
                availability_zone: str | None = None, boot_volume_size: int | None = None,
                host: str | None = None) -> Json:
    """The ``server`` of POST /servers (and of a boot's dry run)."""
    # Moorage has no networking service: a guest gets none.
    body: Json = {"name": name, "flavorRef": flavor_ref, "networks": "none"}
    if boot_volume_size is None:
        body["imageRef"] = image_ref
    else:
        body["imageRef"] = ""
        body["block_device_mapping_v2"] = [{
            "boot_index": 0, "source_type": "image", "destination_type": "volume",
            "uuid": image_ref, "volume_size": boot_volume_size,
            "delete_on_termination": True,
        }]
    if availability_zone is not None:
        body["availability_zone"] = availability_zone
    if host is not None:
        body["host"] = host
    return body
