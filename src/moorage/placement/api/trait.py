"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def list_traits(req: Request) -> Response:
    raise InternalServerError("not implemented")


def show_trait(req: Request) -> Response:
    raise InternalServerError("not implemented")


def put_trait(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_trait(req: Request) -> Response:
    raise InternalServerError("not implemented")


def list_provider_traits(req: Request) -> Response:
    raise InternalServerError("not implemented")


def set_provider_traits(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_provider_traits(req: Request) -> Response:
    raise InternalServerError("not implemented")
