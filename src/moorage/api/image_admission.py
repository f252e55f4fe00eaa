"""Image admission: how many enabled hosts can boot an image that is being created or
changed, and, with ``[api] refuse_unbootable_images``, a 409 for one none can boot.

The answer is the ``moorage:bootable`` field of the create or change response::

    {"hosts": 3,                  # under the current [scheduler] prefilters
     "with": {"image_metadata_prefilter": 2,
              "query_placement_for_image_type_support": 1},
     "missing": ["COMPUTE_IMAGE_TYPE_VMDK"]}   # required with every prefilter on,
                                               # reported by no host

The hosts' traits come from the state's ``HostTraitsReader``, kept a few seconds, so
an image costs placement a request for a trait never asked about, not one per host.
Admission never depends on placement: if it does not answer, the field is null and
nothing is refused (the scheduler says NoValidHost at boot, as before).
"""

from __future__ import annotations

import logging
from typing import Any

from moorage.api.errors import Conflict
from moorage.api.state import ApiState
from moorage.model.image import Image
from moorage.placement.client import PlacementError
from moorage.scheduler.bootability import (
    PREFILTERS,
    bootable,
    configured_prefilters,
    image_requirements,
    missing,
    required_under,
    traits_of_interest,
    unbootable_reason,
)

LOG = logging.getLogger(__name__)
FIELD = "moorage:bootable"


def admit(state: ApiState, image: Image, before: Image | None = None) -> dict[str, Any] | None:
    """``image``'s ``moorage:bootable`` answer; Conflict when the option refuses it.

    A change (``before``, the stored image) is refused only when it changes what the
    image requires: renaming an image no host can boot stays possible."""
    configured = configured_prefilters(state.conf)
    requirements = image_requirements(image)
    try:
        hosts = state.host_traits().hosts(traits_of_interest(requirements))
    except PlacementError as exc:
        LOG.warning("image %s: could not count the hosts that can boot it: %s", image.id, exc)
        return None
    needed = required_under(requirements, configured)
    changed = before is None or {r.trait for r in needed} != {
        r.trait for r in required_under(image_requirements(before), configured)}
    if state.conf.api.refuse_unbootable_images and changed:
        reason = unbootable_reason(hosts, needed)
        if reason is not None:
            raise Conflict(f"{reason} ([api] refuse_unbootable_images is on)")
    return {
        "hosts": bootable(hosts, needed),
        "with": {p.value: bootable(hosts, required_under(requirements, configured | {p}))
                 for p in PREFILTERS},
        "missing": [r.trait for r in missing(hosts, required_under(requirements,
                                                                   PREFILTERS))],
    }
