"""The small HTTP layer compute API handlers are written against.

A handler is ``def handler(req: ApiRequest) -> moorage.web.Response``: it reads
``req.params`` (path parameters), ``req.query`` and ``req.json()``, checks policy with
``req.authorize(rule, target)``, calls the data layer through ``req.state`` and
returns ``json_response(...)`` or ``no_content()``. Errors are raised as
``moorage.api.errors.ApiError``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl
from wsgiref.types import WSGIEnvironment

import orjson

from moorage.api.context import ANONYMOUS, RequestContext
from moorage.api.errors import BadRequest, RequestEntityTooLarge, UnsupportedMediaType
from moorage.api.microversion import ADDITIONS_HEADER, MIN_VERSION, Gate, Version
from moorage.conf.api import user_floor
from moorage.jsonvalue import JSONValue
from moorage.model.discretion import EXACT, Floor
from moorage.web import JSON, RefusedBody, Request, Response, parse_json_body

# PATCH bodies may say what they are (RFC 7396); they are JSON all the same.
MERGE_PATCH = "application/merge-patch+json"

if TYPE_CHECKING:
    from moorage.api.state import ApiState
    from moorage.policy import PolicyValue
    from moorage.scheduler.types import HostInfo


# nova's rule for who sees a server's host; Moorage's for every host identity and count.
HOST_STATUS_RULE = "os_compute_api:servers:show:host_status"


class _Unread(enum.Enum):
    """The body not parsed yet (None is JSON's null)."""

    UNREAD = enum.auto()


class QueryParams:
    """The query string as a multi-dict: every value of a name, in order."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def get(self, name: str, default: str | None = None) -> str | None:
        """The last value given for ``name``."""
        values = self.getall(name)
        return values[-1] if values else default

    def getall(self, name: str) -> list[str]:
        return [v for k, v in self._pairs if k == name]

    def __contains__(self, name: object) -> bool:
        return any(k == name for k, _ in self._pairs)

    def __iter__(self) -> Iterator[str]:
        seen: list[str] = []
        for key, _ in self._pairs:
            if key not in seen:
                seen.append(key)
        return iter(seen)

    def items(self) -> list[tuple[str, str]]:
        return list(self._pairs)


class ApiRequest(Request):
    """One compute API request, as a handler sees it."""

    def __init__(self, environ: WSGIEnvironment, state: ApiState) -> None:
        super().__init__(environ)
        self.state = state
        self._context: RequestContext = ANONYMOUS
        self.params: dict[str, str] = {}
        # The caller's X-OpenStack-Request-ID, when valid (moorage.request_context).
        self.global_request_id: str | None = None
        # The microversion negotiated (moorage.api.microversion); None outside /v2.1.
        self.negotiated: Version | None = None
        self._query: QueryParams | None = None
        self._hosts: Mapping[str, HostInfo] | None = None
        self._json: JSONValue | _Unread = _Unread.UNREAD
        self._allowed: dict[Hashable, bool] = {}

    @property
    def context(self) -> RequestContext:
        """Who asks: anonymous until authentication says."""
        return self._context

    @context.setter
    def context(self, context: RequestContext) -> None:
        self._context = context
        self._allowed.clear()  # the policy's answers were the previous caller's

    @property
    def version(self) -> Version:
        """The microversion this request is answered in."""
        return self.negotiated or MIN_VERSION

    def at(self, gate: Gate) -> bool:
        """Whether this request is answered with ``gate``'s behaviour."""
        return self.version >= gate.version

    def hosts(self) -> Mapping[str, HostInfo]:
        """The compute hosts the catalog knows, read once per request: a list of a
        thousand servers asks for each one's host, and the catalog checks the database
        for changes at every read."""
        if self._hosts is None:
            self._hosts = self.state.catalog.hosts()
        return self._hosts

    @property
    def wants_additions(self) -> bool:
        """Whether the client asked for Moorage's additions (ADDITIONS_HEADER)."""
        return (self.header(ADDITIONS_HEADER) or "").strip().lower() in ("1", "true", "yes")

    @property
    def query(self) -> QueryParams:
        if self._query is None:
            try:
                pairs = parse_qsl(self.environ.get("QUERY_STRING", ""), keep_blank_values=True,
                                  encoding="utf-8", errors="strict")
            except UnicodeDecodeError as exc:
                raise BadRequest(f"Invalid query string: {exc}") from None
            self._query = QueryParams(pairs)
        return self._query

    @property
    def body(self) -> bytes:
        if self._body is None:
            self._body = self._read_body()
        return self._body

    def _read_body(self) -> bytes:
        limit = int(self.state.conf.api.max_request_body_size)
        stream = self.environ.get("wsgi.input")
        if stream is None:
            return b""
        length_header = self.environ.get("CONTENT_LENGTH") or ""
        if length_header:
            try:
                length = int(length_header)
            except ValueError:
                raise BadRequest("Content-Length must be an integer.") from None
            if length > limit:
                raise RequestEntityTooLarge(
                    f"Request body is {length} bytes; the limit is {limit} "
                    "([api] max_request_body_size).")
            return bytes(stream.read(length)) if length > 0 else b""
        return b""

    def json(self) -> JSONValue:
        """The body parsed as JSON; 400 naming the problem when it is missing or malformed.
        Parsed once: dispatch validates it before the handler reads it."""
        if self._json is _Unread.UNREAD:
            self._json = self._parse_json()
        return self._json

    def _parse_json(self) -> JSONValue:
        content_type = (self.header("Content-Type") or "").split(";", 1)[0].strip().lower()
        if content_type and content_type not in (JSON, MERGE_PATCH):
            raise UnsupportedMediaType(
                f"The media type {content_type} is not supported; use {JSON}.")
        if not self.body:
            raise BadRequest("The request needs a JSON body.")
        try:
            return parse_json_body(self.body)
        except RefusedBody as exc:
            raise BadRequest(str(exc)) from None

    def json_object(self, key: str | None = None) -> dict[str, Any]:
        """The body as a JSON object; with ``key``, the object under that key
        (``{"flavor": {...}}``), 400 naming the key when it is missing."""
        data = self.json()
        if not isinstance(data, dict):
            raise BadRequest("The request body must be a JSON object.")
        if key is None:
            return data
        inner = data.get(key)
        if not isinstance(inner, dict):
            raise BadRequest(f"The request body must be an object with a {key!r} object.")
        return inner

    def authorize(self, rule: str, target: Mapping[str, PolicyValue] | None = None) -> None:
        """403 unless the caller satisfies the policy rule."""
        self.state.policy.authorize(rule, self.context, target)

    def allows(self, rule: str, target: Mapping[str, PolicyValue] | None = None) -> bool:
        """Whether the caller may do ``rule`` on ``target``, asked of the policy once per
        request for each rule and target: a list of a thousand servers asks three
        questions of each, about the same few owners (a quarter of the list's CPU
        went to asking the policy's cache again)."""
        try:
            key: Hashable = (rule, None if target is None else tuple(target.items()))
            allowed = self._allowed.get(key)
        except TypeError:  # a list in the target: not remembered
            return self.state.policy.allows(rule, self.context, target)
        if allowed is None:
            allowed = self._allowed[key] = self.state.policy.allows(rule, self.context,
                                                                    target)
        return allowed

    def sees_hosts(self, target: Mapping[str, PolicyValue] | None = None) -> bool:
        """Whether the caller may see the cloud's hosts (nova's host_status rule):
        their names, and every count of them exactly."""
        return self.allows(HOST_STATUS_RULE, target)

    def floor(self, target: Mapping[str, PolicyValue] | None = None) -> Floor:
        """The counts of hosts the caller may be told (``moorage.model.discretion``)."""
        return EXACT if self.sees_hosts(target) else user_floor(self.state.conf)

    def link(self, collection: str, ident: str) -> list[dict[str, str]]:
        """Nova's ``links`` of a resource: self (versioned) and bookmark."""
        return [
            {"rel": "self", "href": self.absolute_url(f"/v2.1/{collection}/{ident}")},
            {"rel": "bookmark", "href": self.absolute_url(f"/{collection}/{ident}")},
        ]


Handler = Callable[[ApiRequest], Response]


def json_response(data: JSONValue, status: int = 200,
                  headers: list[tuple[str, str]] | None = None) -> Response:
    return Response(status=status, body=orjson.dumps(data), headers=list(headers or []),
                    content_type=JSON)


def no_content(status: int = 204) -> Response:
    """An empty response (204, or 202 for nova's accepted deletes)."""
    return Response(status=status)
