"""The small HTTP layer placement handlers are written against.

A ``Request`` wraps the WSGI environ with what handlers need (microversion,
credentials, query parameters, JSON body); a ``Response`` is status, headers and
bytes (a ``StreamedResponse``: chunks, for the few answers that can be as large
as the cloud, assembled by ``JSONPieces``); an ``HTTPError`` becomes placement's
error body
``{"errors": [{"status", "title", "detail", "code", "request_id"}]}``.
The framework is hand-written because it sits on the hot path of every request
(docs/performance.md has the measurements that led here).
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast
from urllib.parse import parse_qsl
from wsgiref.types import WSGIEnvironment

import jsonschema
import orjson

from moorage import web
from moorage.json_schema import Checked
from moorage.jsonvalue import JSONValue
from moorage.placement import errors
from moorage.placement.credentials import Credentials
from moorage.placement.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    HTTPError,
    InternalServerError,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    RequestEntityTooLarge,
    Unauthorized,
    UnsupportedMediaType,
)
from moorage.placement.microversion import MIN_VERSION, Version
from moorage.web import (
    JSON,
    NUL_REFUSED,
    Response,
    accepts_json,
    http_date,
    media_ranges,
    nul_in,
    quality,
)

# Handlers import these from here, with the rest of the placement HTTP layer.
__all__ = ["JSON", "BadRequest", "Conflict", "Credentials", "Forbidden", "HTTPError",
           "InternalServerError", "JSONPieces", "MethodNotAllowed", "NotAcceptable", "NotFound",
           "Request", "RequestEntityTooLarge", "Response", "StreamedResponse", "Unauthorized",
           "UnsupportedMediaType", "http_date", "json_fragment", "since"]

if TYPE_CHECKING:
    from moorage.placement.api.schema import Body
    from moorage.placement.service import PlacementService
    from moorage.policy import PolicyValue

T = TypeVar("T")


_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    409: "Conflict",
    413: "Request Entity Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
}

def error_media_type(environ: WSGIEnvironment) -> str:
    """How to render an error: JSON, unless the client asked for HTML or plain text.

    No Accept (or ``*/*``) means JSON, as upstream; otherwise the best of
    text/html and application/json, and text/plain if neither is acceptable.
    """
    accept = environ.get("HTTP_ACCEPT")
    if not accept or accept.strip() == "*/*":
        return JSON
    ranges = media_ranges(accept)
    offers = [(q, -i, offer) for i, offer in enumerate(("text/html", JSON))
              if (q := quality(ranges, offer)) > 0]
    return max(offers)[2] if offers else "text/plain"


# A body up to this size is joined and sent whole, as every other answer is; a larger
# one is streamed, in chunks of about CHUNK_BYTES.
STREAM_ABOVE = 1024 * 1024
CHUNK_BYTES = 256 * 1024


@dataclass
class StreamedResponse(Response):
    """A response whose body is handed to the server chunk by chunk, never joined.

    ``length`` is known ahead (the pieces were rendered before the index was let
    go), so clients still get a content-length and nothing else changes for them.
    """

    chunks: Iterable[bytes] = field(default_factory=tuple)
    length: int = 0


class _Listing:
    """Items joined by ``separator``; with a ``template``, each item is
    ``fill.join(template)`` (the same document shape around another uuid)."""

    __slots__ = ("items", "length", "separator", "template")

    def __init__(self, items: Sequence[bytes], separator: bytes,
                 template: tuple[bytes, ...] | None) -> None:
        self.items = items
        self.separator = separator
        self.template = template
        filled = sum(map(len, items))
        if template is not None:
            filled = filled * (len(template) - 1) + len(items) * sum(map(len, template))
        self.length = filled + len(separator) * max(0, len(items) - 1)

    def joined(self, start: int = 0, stop: int | None = None) -> bytes:
        """Items ``start:stop`` joined; led by a separator unless ``start`` is 0."""
        part = self.items if start == 0 and stop is None else self.items[start:stop]
        if self.template is not None:
            template = self.template
            part = [fill.join(template) for fill in part]
        return self.separator.join([b"", *part] if start else part)


def json_fragment(data: JSONValue) -> bytes:
    """``data`` as JSON in a bytes object of its own size: for JSON that is kept
    (cached on a record) or held by the thousand (the items of a listing).

    orjson (3.12 on) returns the buffer it rendered into, at least 4 KB and rounded
    up to a power of two, and does not shrink it: a 38-byte quoted uuid cached on
    each of 100,000 providers held 400 MB. The copy costs a fraction of a microsecond.
    """
    return bytes(memoryview(orjson.dumps(data)))


class JSONPieces:
    """A JSON document as pieces already rendered, and its length.

    Why: the answers that can list the whole cloud (every provider, every
    candidate) are assembled from fragments cached on provider records. At 100,000
    providers they are 55 to 70 MB, and joining them made one more copy of that
    size, which the server then copied again. Small documents are joined as before
    (``join``); a large one is sent in chunks of about ``CHUNK_BYTES`` (``chunks``),
    so beyond the cached fragments only a chunk or two exist at a time.
    """

    __slots__ = ("_parts", "length")

    def __init__(self, *pieces: bytes) -> None:
        self._parts: list[bytes | _Listing] = list(pieces)
        self.length = sum(map(len, pieces))

    def add(self, piece: bytes) -> JSONPieces:
        self._parts.append(piece)
        self.length += len(piece)
        return self

    def listing(self, items: Sequence[bytes], *, separator: bytes = b",",
                template: Sequence[bytes] | None = None) -> JSONPieces:
        """Add ``items`` joined by ``separator`` (see ``_Listing`` for ``template``).

        ``items`` is kept, not copied: it must not change until the body is sent.
        """
        listing = _Listing(items, separator, tuple(template) if template is not None else None)
        self._parts.append(listing)
        self.length += listing.length
        return self

    def join(self) -> bytes:
        """The whole document as one bytes object."""
        return b"".join([p if isinstance(p, bytes) else p.joined() for p in self._parts])

    def chunks(self) -> Iterator[bytes]:
        """The document in chunks of about ``CHUNK_BYTES`` (small pieces coalesced)."""
        pending: list[bytes] = []
        size = 0
        for part in self._parts:
            pieces: Iterable[bytes]
            if isinstance(part, bytes):
                pieces = (part,)
            else:
                # Slices of about CHUNK_BYTES, from the listing's average item size.
                average = max(1, part.length // max(1, len(part.items)))
                step = max(1, CHUNK_BYTES // average)
                pieces = (part.joined(i, i + step) for i in range(0, len(part.items), step))
            for piece in pieces:
                pending.append(piece)
                size += len(piece)
                if size >= CHUNK_BYTES:
                    yield pending[0] if len(pending) == 1 else b"".join(pending)
                    pending, size = [], 0
        if pending:
            yield b"".join(pending)


class Request(web.Request):
    """One API request, as a handler sees it."""

    def __init__(self, environ: WSGIEnvironment, service: PlacementService) -> None:
        super().__init__(environ)
        self.service = service
        self.version: Version = MIN_VERSION
        self.version_known = False
        self.credentials = Credentials(None, None, ())
        self.path_params: dict[str, str] = {}
        self._query: list[tuple[str, str]] | None = None

    # -- headers -----------------------------------------------------------
    @property
    def content_type(self) -> str:
        return (self.environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()

    def require_accept_json(self) -> None:
        """406 unless the client's Accept header (if any) admits JSON."""
        accept = self.environ.get("HTTP_ACCEPT")
        if accept and not accepts_json(accept):
            raise NotAcceptable(f"Only {JSON} is provided")

    # -- query string ------------------------------------------------------
    @property
    def query(self) -> list[tuple[str, str]]:
        """Every (name, value) pair of the query string, in order, repeats kept."""
        if self._query is None:
            raw = self.environ.get("QUERY_STRING", "")
            try:
                self._query = parse_qsl(
                    raw, keep_blank_values=True, encoding="utf-8", errors="strict"
                )
            except UnicodeDecodeError as exc:
                raise BadRequest(f"Invalid query string parameters: {exc}") from None
            if nul_in(self._query):
                raise BadRequest(NUL_REFUSED.format("query string parameters"))
        return self._query

    def query_all(self, name: str) -> list[str]:
        return [v for k, v in self.query if k == name]

    def query_last(self, name: str) -> str | None:
        """The last value given for ``name`` (what a dict of the query would hold)."""
        values = self.query_all(name)
        return values[-1] if values else None

    def query_dict(self) -> dict[str, str]:
        """The query as a dict: the last value of each name wins."""
        return dict(self.query)

    def validate_query(self, schema_validator: Checked) -> None:
        """Check the query parameters against a JSON schema, as upstream does."""
        try:
            schema_validator.validate(self.query_dict())
        except jsonschema.ValidationError as exc:
            raise BadRequest(f"Invalid query string parameters: {exc}") from None

    # -- body --------------------------------------------------------------
    @property
    def body(self) -> bytes:
        if self._body is None:
            self._body = self.service.read_body(self.environ)
        return self._body

    def require_json_content(self) -> None:
        """415 unless the body is declared as application/json."""
        if self.content_type != JSON:
            shown = self.environ.get("CONTENT_TYPE") or "None"
            raise UnsupportedMediaType(f"The media type {shown} is not supported, use {JSON}")

    def json_body(self, schema: Body[T]) -> T:
        """The body as JSON, after checking its media type and validating it against
        ``schema``: the document is then what the schema's type says."""
        self.require_json_content()
        try:
            data = web.parse_json_body(self.body, malformed="Malformed JSON")
        except web.RefusedBody as exc:
            raise BadRequest(str(exc)) from None
        try:
            schema.validator.validate(data)
        except jsonschema.ValidationError as exc:
            raise BadRequest(f"JSON does not validate: {exc}") from None
        admitted = cast(T, data)  # what the schema lets through is what its type says
        return admitted

    # -- policy ------------------------------------------------------------
    def authorize(self, rule: str, target: Mapping[str, PolicyValue] | None = None) -> None:
        """403 unless the credentials satisfy the named policy rule."""
        self.service.policy.authorize(rule, self.credentials, target)

    # -- responses -----------------------------------------------------------
    def json_response(
        self,
        data: JSONValue | JSONPieces,
        *,
        status: int = 200,
        last_modified: datetime.datetime | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> Response:
        """A JSON response with the caching headers the microversion calls for.

        ``data`` may also be JSON already rendered, as bytes or as ``JSONPieces``
        (streamed when longer than ``STREAM_ABOVE``).
        """
        response: Response
        if isinstance(data, JSONPieces) and data.length > STREAM_ABOVE:
            response = StreamedResponse(status=status, content_type=JSON,
                                        chunks=data.chunks(), length=data.length)
        else:
            body = (data if isinstance(data, bytes) else
                    data.join() if isinstance(data, JSONPieces) else orjson.dumps(data))
            response = Response(status=status, body=body, content_type=JSON)
        if headers:
            response.headers.extend(headers)
        self.add_cache_headers(response, last_modified)
        return response

    def empty_response(
        self, status: int = 204, headers: list[tuple[str, str]] | None = None
    ) -> Response:
        return Response(status=status, headers=list(headers or []))

    def add_cache_headers(
        self, response: Response, last_modified: datetime.datetime | None
    ) -> None:
        """From 1.15: cache-control: no-cache and last-modified."""
        if self.version >= (1, 15):
            moment = last_modified or datetime.datetime.now(datetime.UTC)
            response.headers.append(("cache-control", "no-cache"))
            response.headers.append(("last-modified", http_date(moment)))


Handler = Callable[[Request], Response]


def since(version: str, *, status: int = 404) -> Callable[[Handler], Handler]:
    """Mark a handler as existing from ``version``: older requests get ``status``."""
    major, minor = (int(p) for p in version.split("."))

    def mark(handler: Handler) -> Handler:
        handler.min_version = Version(major, minor)  # type: ignore[attr-defined]
        handler.too_old_status = status  # type: ignore[attr-defined]
        return handler

    return mark


def error_response(error: HTTPError, environ: WSGIEnvironment, request: Request | None
                   ) -> Response:
    """The response for ``error``, in the format the client accepts."""
    media_type = error_media_type(environ)
    if media_type == JSON:
        body = error_body(error, environ, request)
    else:
        status = f"{error.status} {_TITLES.get(error.status, 'Error')}"
        detail = error.full_detail(environ)
        if media_type == "text/html":
            text = (f"<html>\n <head>\n  <title>{status}</title>\n </head>\n <body>\n"
                    f"  <h1>{status}</h1>\n  {html.escape(detail)}\n </body>\n</html>")
        else:
            text = f"{status}\n\n{detail}"
        body = text.encode()
    return Response(status=error.status, body=body, headers=list(error.headers),
                    content_type=media_type)


def error_body(error: HTTPError, environ: WSGIEnvironment, request: Request | None) -> bytes:
    """Placement's JSON error document for ``error``."""
    entry: dict[str, str | int] = {
        "status": error.status,
        "title": _TITLES.get(error.status, "Error"),
        "detail": error.full_detail(environ),
    }
    version = request.version if request is not None and request.version_known else None
    if version is not None and version >= (1, 23):
        entry["code"] = error.code or errors.DEFAULT
    if request is not None and request.request_id:
        entry["request_id"] = request.request_id
    if error.status == 406 and version is None:
        entry["max_version"] = "1.39"
        entry["min_version"] = "1.0"
    return orjson.dumps({"errors": [entry]})
