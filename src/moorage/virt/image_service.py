"""A compute host's client of the image service: an image's record and its data.

The image service speaks Glance's v2 API: ``GET /v2/images/{id}`` (the record, whose
``size`` and hashes say what the data must be) and ``GET /v2/images/{id}/file`` (the
data). Where it is: ``[glance] api_servers``, else (with ``[glance] auth_type``) the
image endpoint of Keystone's catalog, else the compute API the agent registers with
(``[compute_agent] api_url``) followed by ``/image``, where Moorage mounts its own.
How the host is known to it: with ``[glance] auth_type`` (password, application
credential...), a Keystone token of its own, renewed before it expires, as
nova-compute reaches Glance (moorage.service_auth); otherwise ``[DEFAULT]
service_token`` in the header ``[glance] auth_header`` names (``X-Service-Token`` by
default, the header every service-to-service call of Moorage carries).

A server that cannot be reached or answers 5xx is tried again, on the next server,
``[glance] num_retries`` times; a 4xx is the image's answer and is not.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from oslo_config import cfg

from moorage import service_auth, transport
from moorage.conf.glance import DEFAULT_TIMEOUT
from moorage.model.glance import ImageData, image_data

LOG = logging.getLogger(__name__)

IMAGE_PATH = "/image"


class ImageNotFound(LookupError):
    """The image service has no such image (upstream's wording)."""

    def __init__(self, image_id: str) -> None:
        super().__init__(f"Image {image_id} could not be found.")
        self.image_id = image_id


class ImageServiceUnavailable(RuntimeError):
    """No image service answered, or none is configured: another host may do better."""


def endpoints(conf: cfg.ConfigOpts) -> list[str]:
    """The image service's URLs: ``[glance] api_servers``, else ``[compute_agent]
    api_url`` + ``/image``; empty when neither is set (with ``[glance] auth_type``,
    Keystone's catalog names one then)."""
    configured = [str(url).rstrip("/") for url in conf.glance.api_servers if str(url).strip()]
    if configured:
        return configured
    api_url = conf.compute_agent.api_url
    return [str(api_url).rstrip("/") + IMAGE_PATH] if api_url else []


def timeout(conf: cfg.ConfigOpts) -> float:
    """Seconds to wait for the image service (``[glance] timeout``, else the default)."""
    return float(conf.glance.timeout or DEFAULT_TIMEOUT)


def keystone_servers(conf: cfg.ConfigOpts
                     ) -> tuple[service_auth.Credentials, list[str]]:
    """With ``[glance] auth_type`` set: the Keystone credentials ``[glance]`` configures,
    and the image service's URLs: ``api_servers``, else the catalog's image endpoint.
    CredentialsError (one line) when they cannot be had."""
    keystone = service_auth.from_conf(conf, "glance", development_url="")
    urls = [u for u in (str(url).rstrip("/") for url in conf.glance.api_servers) if u]
    return keystone, urls or [keystone.endpoint()]


@dataclass(frozen=True)
class ImageService:
    """The image service's servers, tried in order, each with the credentials every
    request carries."""

    servers: tuple[service_auth.Endpoint, ...]
    headers: Mapping[str, str]
    retries: int = 3

    @classmethod
    def of(cls, conf: cfg.ConfigOpts) -> ImageService | None:
        """The image service ``conf`` names; None when it names none.
        ImageServiceUnavailable when Keystone's catalog, which names it, cannot be read.

        With ``[glance] auth_type`` set, a Keystone token of the host's own (renewed
        before it expires) to ``api_servers``, else to the catalog's image endpoint;
        otherwise ``[DEFAULT] service_token`` in ``[glance] auth_header``."""
        options = conf.glance
        credentials: list[service_auth.Credentials]
        if options.auth_type:
            try:
                keystone, urls = keystone_servers(conf)
            except service_auth.CredentialsError as exc:
                raise ImageServiceUnavailable(str(exc)) from None
            credentials = [service_auth.AtURL(keystone, url) for url in urls]
        else:
            token = conf.service_token
            sent = {str(options.auth_header): str(token)} if token else {}
            credentials = [service_auth.StaticHeaders(url, sent) for url in endpoints(conf)]
        if not credentials:
            return None
        return cls(tuple(service_auth.Endpoint(c, timeout=timeout(conf), maxsize=2)
                         for c in credentials),
                   {"Accept": "application/json"}, int(options.num_retries))

    def record(self, image_id: str) -> ImageData:
        """The image's record: ImageNotFound, ImageServiceUnavailable, or ValueError
        when the answer is not Glance's record of it."""
        path = f"/v2/images/{quote(image_id, safe='')}"
        reply = self._try(image_id, "record", lambda server: server.request(
            "GET", path, body=None, headers=self.headers, resend=True))
        try:
            return image_data(json.loads(reply.data), image_id)
        except ValueError as exc:
            raise ValueError(f"the image service's answer for image {image_id}: {exc}") from None

    def download(self, image_id: str, write: Callable[[bytes], object],
                 rewind: Callable[[], object]) -> None:
        """The image's data, chunk by chunk to ``write``; ``rewind`` is called before
        a try after the first (``write`` may have had part of the data). The caller
        checks what arrived: its size and hashes."""
        path = f"/v2/images/{quote(image_id, safe='')}/file"
        tries = 0

        def fetch(server: service_auth.Endpoint) -> transport.Reply:
            nonlocal tries
            if tries:
                rewind()
            tries += 1
            return server.download(path, write, headers=self.headers)

        self._try(image_id, "data", fetch)

    def _try(self, image_id: str, what: str,
             call: Callable[[service_auth.Endpoint], transport.Reply]) -> transport.Reply:
        """``call`` on the servers in turn until one answers other than 5xx; its 200
        answer, or ImageNotFound (404), or ImageServiceUnavailable naming the last
        problem."""
        problem = ""
        for attempt in range(self.retries + 1):
            server = self.servers[attempt % len(self.servers)]
            try:
                reply = call(server)
            except service_auth.CredentialsError as exc:  # Keystone refused, or is down
                problem = str(exc)
                LOG.warning("image %s: %s of the image service: %s", image_id, what, problem)
                continue
            except transport.TransportError as exc:
                problem = f"{server.url}: {exc}"
                LOG.warning("image %s: %s of the image service: %s", image_id, what, problem)
                continue
            if reply.status == 200:
                return reply
            if reply.status == 404:
                raise ImageNotFound(image_id)
            detail = " ".join(reply.data[:300].decode("utf-8", "replace").split())
            problem = f"{server.url} answered {reply.status} {reply.reason}: {detail}"
            if reply.status < 500:
                raise ImageServiceUnavailable(f"image {image_id}: its {what}: {problem}")
            LOG.warning("image %s: %s of the image service: %s", image_id, what, problem)
        raise ImageServiceUnavailable(
            f"image {image_id}: no image service gave its {what} "
            f"({self.retries + 1} tries): {problem}")
