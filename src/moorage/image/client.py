"""A read-only client of an image service's Glance v2 API: an upstream Glance found in
Keystone's catalog (service type ``image``), or Moorage's own (``/image`` on the compute
API's listener), as ``moorage scheduler preflight`` and the twin read a cloud's images.

Every page of ``GET /v2/images`` is read, following Glance's ``next`` links (their query:
a link is relative to Glance's root, which a catalog endpoint with a path, such as
``https://cloud/image``, does not repeat). A listing whose ``next`` comes back to a page
already read would page forever: it is a ``GlanceError`` naming the marker. Requests go
over moorage.transport with the credentials of moorage.service_auth (Keystone's renewed
tokens, or the DEVELOPMENT token).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

from moorage import service_auth, transport

SERVICE_TYPE = "image"
LISTING = "/v2/images"
# Glance's own largest page by default ([DEFAULT] api_limit_max = 1000).
PAGE_SIZE = 1000


class GlanceError(Exception):
    """A request failed, or the answer is not Glance's; ``str()`` is one line."""


def image_root(url: str) -> str:
    """The image service's root from a catalog endpoint (``.../v2`` taken off)."""
    root = url.rstrip("/")
    return root.removesuffix("/v2") if root.endswith("/v2") else root


class GlanceClient:
    """Reads one image service's listing as ``credentials`` say."""

    def __init__(self, credentials: service_auth.Credentials, *, timeout: float = 60.0,
                 page_size: int = PAGE_SIZE) -> None:
        self._endpoint = service_auth.Endpoint(credentials, timeout=timeout, maxsize=2,
                                               root=image_root)
        self.page_size = page_size
        self.pages_read = 0

    @property
    def url(self) -> str:
        try:
            return self._endpoint.url
        except ValueError as exc:
            raise GlanceError(str(exc)) from None

    def images(self, *, limit: int | None = None) -> Iterator[Mapping[str, object]]:
        """Every image record of the listing, page after page (``limit``: at most that
        many records, then the reading stops)."""
        query: dict[str, str] = {"limit": str(self.page_size)}
        markers: set[str] = set()
        given = 0
        while True:
            page = self._page(query)
            self.pages_read += 1
            for record in page["images"]:
                if limit is not None and given >= limit:
                    return
                given += 1
                yield record
            following = page.get("next")
            if not isinstance(following, str) or not page["images"]:
                return
            query = dict(_query(following))
            marker = query.get("marker", "")
            if marker in markers:
                raise GlanceError(
                    f"image service at {self.url}: the listing pages forever (its next "
                    f"link came back to marker {marker!r} after {self.pages_read} pages)")
            markers.add(marker)

    def _page(self, query: Mapping[str, str]) -> dict[str, list[Mapping[str, object]]]:
        path = f"{LISTING}?{urlencode(query)}"
        try:
            reply = self._endpoint.request("GET", path, body=None, resend=True,
                                           headers={"accept": "application/json"})
        except ValueError as exc:  # CredentialsError, or not an http(s) URL
            raise GlanceError(str(exc)) from None
        except transport.TransportError as exc:
            raise GlanceError(f"image service at {self.url}: GET {LISTING} failed: {exc}"
                              ) from None
        if reply.status >= 400:
            raise GlanceError(f"image service at {self.url}: GET {LISTING}: {reply.status} "
                              f"{reply.reason}")
        try:
            body = orjson.loads(reply.data)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("images"), list):
            raise GlanceError(f"image service at {self.url}: GET {LISTING} did not answer "
                              "a Glance image listing; is it Glance v2?")
        return body


def _query(link: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(link).query)
