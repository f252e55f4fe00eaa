"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def list_classes(req: Request) -> Response:
    raise InternalServerError("not implemented")


def create_class(req: Request) -> Response:
    raise InternalServerError("not implemented")


def show_class(req: Request) -> Response:
    raise InternalServerError("not implemented")


def update_class(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_class(req: Request) -> Response:
    raise InternalServerError("not implemented")
