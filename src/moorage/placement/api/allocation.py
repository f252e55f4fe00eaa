"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def list_provider_allocations(req: Request) -> Response:
    raise InternalServerError("not implemented")


def set_allocations(req: Request) -> Response:
    raise InternalServerError("not implemented")


def list_consumer_allocations(req: Request) -> Response:
    raise InternalServerError("not implemented")


def set_consumer_allocations(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_consumer_allocations(req: Request) -> Response:
    raise InternalServerError("not implemented")
