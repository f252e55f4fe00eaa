"""The small HTTP layer image handlers are written against, as the compute API's is:
``def handler(req: ImageRequest) -> Answer``, reading ``req.params``, ``req.query``
(the query string's pairs) and ``req.json()``, authorizing with
``req.authorize(rule, owner=...)``, and raising ``moorage.image.errors``.

An answer is a ``moorage.web.Response`` (a JSON body, or none) or a ``Streamed`` one:
a download goes out chunk by chunk, never whole in memory, and an upload is read
from ``req.stream()`` the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl
from wsgiref.types import WSGIEnvironment

import orjson

from moorage.image.errors import BadRequest, RequestEntityTooLarge, UnsupportedMediaType
from moorage.jsonvalue import JSONValue
from moorage.web import JSON, RefusedBody, Request, Response, parse_json_body

if TYPE_CHECKING:
    from moorage.image.policy import Caller
    from moorage.image.service import ImageService

CHUNK = 1 << 16


@dataclass
class Streamed:
    """An answer whose body is a stream of ``length`` bytes."""

    chunks: Iterable[bytes]
    length: int
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = "application/octet-stream"


Answer = Response | Streamed


class ImageRequest(Request):
    """One image service request, as a handler sees it."""

    def __init__(self, environ: WSGIEnvironment, service: ImageService,
                 caller: Caller) -> None:
        super().__init__(environ)
        self.service = service
        self.caller = caller
        self.params: dict[str, str] = {}
        self._pairs: list[tuple[str, str]] | None = None
        self._json: JSONValue = None

    @property
    def query(self) -> list[tuple[str, str]]:
        if self._pairs is None:
            try:
                self._pairs = parse_qsl(self.environ.get("QUERY_STRING", ""),
                                        keep_blank_values=True, errors="strict")
            except UnicodeDecodeError as exc:
                raise BadRequest(f"Invalid query string: {exc}") from None
        return self._pairs

    @property
    def media_type(self) -> str:
        return (self.header("Content-Type") or "").split(";", 1)[0].strip().lower()

    def json(self, media_types: tuple[str, ...] = (JSON,)) -> JSONValue:
        """The body as JSON, of one of ``media_types`` (415 otherwise)."""
        if self._body is not None:
            return self._json
        if self.media_type not in media_types:
            raise UnsupportedMediaType(
                f"Unsupported Content-Type {self.media_type or '(none)'}; allowed: "
                f"{', '.join(media_types)}.")
        limit = int(self.service.conf.api.max_request_body_size)
        try:
            length = int(self.environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise BadRequest("Content-Length must be an integer.") from None
        if length > limit:
            raise RequestEntityTooLarge(f"Request body is {length} bytes; the limit is "
                                        f"{limit} ([api] max_request_body_size).")
        stream = self.environ.get("wsgi.input")
        self._body = bytes(stream.read(length)) if stream is not None and length > 0 else b""
        if not self._body:
            raise BadRequest("The request needs a JSON body.")
        try:
            self._json = parse_json_body(self._body)
        except RefusedBody as exc:
            raise BadRequest(str(exc)) from None
        return self._json

    def json_object(self) -> dict[str, Any]:
        data = self.json()
        if not isinstance(data, dict):
            raise BadRequest("The request body must be a JSON object.")
        return data

    def stream(self) -> Iterator[bytes]:
        """The body in chunks as it arrives: up to Content-Length, or to its end when
        it is chunked (the server decodes it)."""
        self._body = b""  # read here, not by json()
        source = self.environ.get("wsgi.input")
        if source is None:
            return
        length_header = self.environ.get("CONTENT_LENGTH") or ""
        left: int | None = int(length_header) if length_header.isdigit() else None
        while left is None or left > 0:
            chunk = source.read(CHUNK if left is None else min(CHUNK, left))
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            yield bytes(chunk)

    def authorize(self, rule: str, owner: str | None = None,
                  member_id: str | None = None) -> None:
        self.service.policy.authorize(rule, self.caller, owner, member_id)


Handler = Callable[[ImageRequest], Answer]


def json_response(data: JSONValue, status: int = 200,
                  headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status=status, body=orjson.dumps(data), headers=list(headers or []),
                    content_type=JSON)


def no_content() -> Response:
    return Response(status=204)
