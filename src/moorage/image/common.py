"""What the image handlers share: the image a request names, if the caller may see it."""

from __future__ import annotations

from moorage.image import store
from moorage.image.errors import Forbidden, image_not_found
from moorage.image.http import ImageRequest
from moorage.image.records import StoredImage, Visibility


def visible_image(req: ImageRequest) -> StoredImage:
    """The image of ``{image_id}``; 404 when there is none or the caller may not see it."""
    image_id = req.params["image_id"]
    with req.service.database.reader() as conn:
        image = store.load(conn, image_id)
        if image is None or not store.visible(conn, image, req.caller.project_id,
                                              req.caller.is_admin):
            raise image_not_found(image_id)
    return image


def authorize_visibility(req: ImageRequest, visibility: Visibility, owner: str | None) -> None:
    """Making an image public or community needs its own rule."""
    if visibility is Visibility.PUBLIC:
        req.authorize("publicize_image", owner=owner)
    elif visibility is Visibility.COMMUNITY:
        req.authorize("communitize_image", owner=owner)


def refuse_foreign_owner(req: ImageRequest, owner: str | None) -> None:
    """Only an administrator gives an image to another project."""
    if owner != req.caller.project_id and not req.caller.is_admin:
        raise Forbidden(f"You are not permitted to create or change images owned by "
                        f"'{owner}'.")
