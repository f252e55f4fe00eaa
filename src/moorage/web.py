"""The small WSGI toolkit Moorage's HTTP services share: route matching, responses,
status lines, dates and Accept negotiation. Each service keeps its own request
type and error format (placement's, the compute API's)."""

from __future__ import annotations

import datetime
import email.utils
import http
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

JSON = "application/json"
STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in http.HTTPStatus}

H = TypeVar("H", bound=Callable[..., object])


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str | None = None


def http_date(moment: datetime.datetime) -> str:
    """An RFC 7231 date for last-modified headers."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return email.utils.format_datetime(moment.astimezone(datetime.UTC), usegmt=True)


def media_ranges(accept: str) -> list[tuple[str, float]]:
    """The (media range, quality) pairs of an Accept header."""
    ranges = []
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media:
            ranges.append((media.lower(), quality))
    return ranges


def quality(ranges: list[tuple[str, float]], offer: str) -> float:
    """The quality an Accept header gives ``offer``: its most specific matching range's."""
    kind = offer.split("/", 1)[0]
    best: tuple[int, float] = (-1, 0.0)
    for media, quality in ranges:
        specificity = 2 if media == offer else 1 if media == f"{kind}/*" else (
            0 if media == "*/*" else -1)
        if specificity > best[0]:
            best = (specificity, quality)
    return best[1]


def accepts_json(accept: str) -> bool:
    """True if an Accept header admits application/json with a non-zero quality."""
    return quality(media_ranges(accept), JSON) > 0



class Router(Generic[H]):
    """Matches a path against the route table: (handlers by method, path parameters)."""

    def __init__(self, routes: dict[str, dict[str, H]]) -> None:
        self._static: dict[str, dict[str, H]] = {}
        self._patterns: list[tuple[re.Pattern[str], dict[str, H]]] = []
        for template, methods in routes.items():
            if "{" not in template:
                self._static[template] = methods
                continue
            regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template)
            self._patterns.append((re.compile(f"^{regex}$"), methods))

    def match(self, path: str) -> tuple[dict[str, H], dict[str, str]] | None:
        methods = self._static.get(path)
        if methods is not None:
            return methods, {}
        for pattern, methods in self._patterns:
            found = pattern.match(path)
            if found:
                return methods, found.groupdict()
        return None
