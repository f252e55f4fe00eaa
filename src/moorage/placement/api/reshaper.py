"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def reshape(req: Request) -> Response:
    raise InternalServerError("not implemented")
