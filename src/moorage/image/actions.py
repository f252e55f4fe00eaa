"""Glance's image actions: ``POST /v2/images/{id}/actions/deactivate`` and
``.../reactivate`` (204, no body).

Deactivating withholds an active image's data: a download by anyone but an
administrator is a 403 (``moorage.image.transfer``) until the image is reactivated;
the record stays visible and changeable. Who may: the ``deactivate`` and
``reactivate`` rules (the owner or an administrator); a caller who cannot see the
image gets a 404 first. Which states: ``TRANSITIONS`` below, glance's; an action on
an image already where it leads does nothing, from any other state it is a 403.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from moorage.image import store
from moorage.image.common import visible_image
from moorage.image.errors import Forbidden, ImageError, image_not_found
from moorage.image.http import Answer, ImageRequest, no_content
from moorage.image.records import ImageStatus


class ImageAction(enum.StrEnum):
    DEACTIVATE = "deactivate"
    REACTIVATE = "reactivate"


@dataclass(frozen=True)
class Transition:
    """An action moves an image from ``source`` to ``target``; it is a no-op at
    ``target``, and refused anywhere else."""

    source: ImageStatus
    target: ImageStatus

    def allowed(self) -> str:
        return f"{self.source}, {self.target}"


# The action is also its policy rule's name.
TRANSITIONS: dict[ImageAction, Transition] = {
    ImageAction.DEACTIVATE: Transition(ImageStatus.ACTIVE, ImageStatus.DEACTIVATED),
    ImageAction.REACTIVATE: Transition(ImageStatus.DEACTIVATED, ImageStatus.ACTIVE),
}


def _refusal(action: ImageAction, status: ImageStatus | None, image_id: str) -> ImageError:
    """Why ``action`` cannot run on an image in ``status`` (None: it is gone)."""
    if status is None:
        return image_not_found(image_id)
    return Forbidden(f"Not allowed to {action} image in status '{status}'; allowed: "
                     f"{TRANSITIONS[action].allowed()}.")


def next_status(action: ImageAction, status: ImageStatus, image_id: str
                ) -> ImageStatus | None:
    """Where ``action`` moves an image in ``status``: None when it is there already;
    a 403 from a state the action does not leave."""
    transition = TRANSITIONS[action]
    if status is transition.target:
        return None
    if status is not transition.source:
        raise _refusal(action, status, image_id)
    return transition.target


def _act(req: ImageRequest, action: ImageAction) -> Answer:
    image = visible_image(req)
    req.authorize(action.value, owner=image.owner)
    target = next_status(action, image.status, image.id)
    if target is None:
        return no_content()
    with req.service.database.writer() as writer:
        moved = store.move_status(writer.conn, image.id, image.status, target,
                                  changed=req.service.changed, keep_data=True)
        if not moved:  # another action, an upload or a delete came first
            current = store.load(writer.conn, image.id)
            if current is None:
                raise _refusal(action, None, image.id)
            next_status(action, current.status, image.id)
    return no_content()


def deactivate(req: ImageRequest) -> Answer:
    return _act(req, ImageAction.DEACTIVATE)


def reactivate(req: ImageRequest) -> Answer:
    return _act(req, ImageAction.REACTIVATE)
