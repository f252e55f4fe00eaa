"""PLACEHOLDER: not implemented yet (work in progress, never committed)."""

from moorage.placement.http import InternalServerError, Request, Response


def list_inventories(req: Request) -> Response:
    raise InternalServerError("not implemented")


def create_inventory(req: Request) -> Response:
    raise InternalServerError("not implemented")


def set_inventories(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_inventories(req: Request) -> Response:
    raise InternalServerError("not implemented")


def show_inventory(req: Request) -> Response:
    raise InternalServerError("not implemented")


def update_inventory(req: Request) -> Response:
    raise InternalServerError("not implemented")


def delete_inventory(req: Request) -> Response:
    raise InternalServerError("not implemented")
