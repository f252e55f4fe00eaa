"""A boot's image read from an existing Glance (``[api] image_service = glance``), as nova
reads it: ``GET /v2/images/{id}`` with the caller's own token, so that Glance decides
what the caller may see and boot. Where Glance is: ``[glance] api_servers``, else the
image endpoint of Keystone's catalog, found with the ``[glance]`` keystoneauth1
options (the API's own credentials serve for the catalog only).

An image Glance does not show the caller is NotFound, as one that does not exist; one
that is not active, or whose properties nova would refuse, is a BadRequest naming why;
a Glance that does not answer is a ServiceUnavailable naming it.
"""

from __future__ import annotations

import threading
from urllib.parse import quote

import orjson
from oslo_config import cfg

from moorage import transport
from moorage.api.context import RequestContext
from moorage.api.errors import BadRequest, NotFound, ServiceUnavailable
from moorage.image.client import image_root
from moorage.model.glance import images_from_listing
from moorage.model.image import Image
from moorage.virt import image_service


class GlanceImages:
    """The images of the Glance ``conf`` names, read with each caller's token."""

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self._conf = conf
        self._server: transport.Server | None = None
        self._lock = threading.Lock()

    def _connection(self) -> transport.Server:
        if self._server is None:
            with self._lock:
                if self._server is None:
                    self._server = self._connect()
        return self._server

    def _connect(self) -> transport.Server:
        options = self._conf.glance
        servers = [str(url).rstrip("/") for url in options.api_servers if str(url).strip()]
        tls = None
        try:
            if options.auth_type:
                keystone, urls = image_service.keystone_servers(self._conf)
                tls, url = keystone.tls(), urls[0]
            elif servers:
                url = servers[0]
            else:
                raise ServiceUnavailable(
                    "[api] image_service = glance, but [glance] names no image service: "
                    "set [glance] api_servers, or auth_type and its options to find it "
                    "in Keystone's catalog")
            return transport.Server(image_root(url), timeout=image_service.timeout(self._conf),
                                    maxsize=8, tls=tls)
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise ServiceUnavailable(f"the image service: {exc}") from None

    def image(self, image_id: str, context: RequestContext) -> Image:
        """The image ``image_id`` as Glance shows it to the caller."""
        if not context.auth_token:
            raise ServiceUnavailable(
                "[api] image_service = glance reads images with the caller's Keystone "
                "token: it needs [api] auth_strategy = keystone")
        server = self._connection()
        path = f"/v2/images/{quote(image_id, safe='')}"
        try:
            reply = server.request("GET", path, resend=True, headers={
                "x-auth-token": context.auth_token, "accept": "application/json"})
        except transport.TransportError as exc:
            raise ServiceUnavailable(f"the image service at {server.url}: GET {path}: "
                                     f"{exc}") from None
        if reply.status in (403, 404):
            raise NotFound(f"Image {image_id} could not be found.")
        if reply.status != 200:
            raise ServiceUnavailable(f"the image service at {server.url}: GET {path}: "
                                     f"{reply.status} {reply.reason}")
        try:
            listing = images_from_listing({"images": [orjson.loads(reply.data)]},
                                          f"the image service at {server.url}")
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise BadRequest(str(exc)) from None
        if not listing.images:
            raise BadRequest(f"Image {image_id} is not active.")
        return listing.images[0]
