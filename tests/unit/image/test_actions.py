"""The image actions' transitions, walked over every state an image can be in."""

from __future__ import annotations

import pytest

from moorage.image.actions import TRANSITIONS, ImageAction, next_status
from moorage.image.errors import Forbidden
from moorage.image.records import ImageStatus

A, D = ImageStatus.ACTIVE, ImageStatus.DEACTIVATED
# (action, status) -> where it goes (None: it is there already); absent: a 403.
EXPECTED: dict[tuple[ImageAction, ImageStatus], ImageStatus | None] = {
    (ImageAction.DEACTIVATE, A): D, (ImageAction.DEACTIVATE, D): None,
    (ImageAction.REACTIVATE, D): A, (ImageAction.REACTIVATE, A): None,
}


@pytest.mark.parametrize("action", list(ImageAction))
@pytest.mark.parametrize("status", list(ImageStatus))
def test_every_action_from_every_state(action: ImageAction, status: ImageStatus) -> None:
    if (action, status) in EXPECTED:
        assert next_status(action, status, "i") is EXPECTED[action, status]
        return
    with pytest.raises(Forbidden) as refused:
        next_status(action, status, "i")
    assert refused.value.message == (
        f"Not allowed to {action} image in status '{status}'; allowed: "
        f"{TRANSITIONS[action].source}, {TRANSITIONS[action].target}.")
