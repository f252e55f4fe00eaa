"""Errors of the image service, in glance's JSON shape (webob's, which glance answers
with): ``{"code": "404 Not Found", "title": "Not Found", "message": "..."}``. Raise
them anywhere below a handler; the application renders them. The message names the
field and what it allows."""

from __future__ import annotations

import http
from typing import ClassVar

import orjson


class ImageError(Exception):
    status: ClassVar[int] = 500

    def __init__(self, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = list(headers or [])

    def body(self) -> bytes:
        phrase = http.HTTPStatus(self.status).phrase
        return orjson.dumps({"code": f"{self.status} {phrase}", "title": phrase,
                             "message": self.message})


class BadRequest(ImageError):
    status = 400


class Unauthorized(ImageError):
    status = 401


class Forbidden(ImageError):
    status = 403


class NotFound(ImageError):
    status = 404


class MethodNotAllowed(ImageError):
    status = 405


class Conflict(ImageError):
    status = 409


class RequestEntityTooLarge(ImageError):
    status = 413


class UnsupportedMediaType(ImageError):
    status = 415


class InternalError(ImageError):
    status = 500


def image_not_found(image_id: str) -> NotFound:
    return NotFound(f"No image found with ID {image_id}")
