"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def list_provider_usages(req: Request) -> Response:
    raise InternalServerError("not implemented")


def total_usages(req: Request) -> Response:
    raise InternalServerError("not implemented")
