"""Errors of the data layer. The API maps them to HTTP: NotFound to 404,
Conflict to 409, InvalidData to 400, each with its placement error code."""

from __future__ import annotations

from moorage.placement import errors


class StorageError(Exception):
    code = errors.DEFAULT

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class NotFound(StorageError):
    """The named thing does not exist."""


class Conflict(StorageError):
    """The write clashes with what is stored (duplicate, in use, ...)."""


class ConcurrentUpdate(Conflict):
    """A generation did not match: someone else wrote first."""

    code = errors.CONCURRENT_UPDATE


class InvalidData(StorageError):
    """The write is well-formed but not acceptable (bad parent, capacity, ...)."""
