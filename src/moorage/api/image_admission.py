"""Image admission: how many enabled hosts can boot an image that is being created or
changed, and, with ``[api] refuse_unbootable_images``, a 409 for one none can boot.

The answer is the ``moorage:bootable`` field of the create or change response::

    {"hosts": 3,                  # under the current [scheduler] prefilters
     "with": {"image_metadata_prefilter": 2,
              "query_placement_for_image_type_support": 1},
     "missing": ["COMPUTE_IMAGE_TYPE_VMDK"]}   # required with every prefilter on,
                                               # reported by no host

A caller who may not see the cloud's hosts is told no count below ``[api]
capability_host_floor`` (null: fewer than ``host_floor``, perhaps none), ``missing``
lists the traits fewer than that many hosts report (as the capability catalogue calls
them "not offered"), and a refusal does not say which hosts lack what.

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
from moorage.model.discretion import EXACT, Floor
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


def admit(state: ApiState, image: Image, before: Image | None = None,
          floor: Floor = EXACT) -> dict[str, Any] | None:
    """``image``'s ``moorage:bootable`` answer, with no count below ``floor``; Conflict
    when the option refuses it.

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
        if reason is not None and not floor.exact:
            reason = ("no enabled host can boot this image, which needs "
                      + ", ".join(sorted({str(r) for r in needed})))
        if reason is not None:
            raise Conflict(f"{reason} ([api] refuse_unbootable_images is on)")
    every = required_under(requirements, PREFILTERS)
    if floor.exact:
        absent = [r.trait for r in missing(hosts, every)]
    else:
        absent = list(dict.fromkeys(r.trait for r in every
                                    if floor.count(bootable(hosts, [r])) is None))
    told = {} if floor.exact else {"host_floor": floor.hosts}
    return {
        "hosts": floor.count(bootable(hosts, needed)),
        "with": {p.value: floor.count(bootable(hosts, required_under(
            requirements, configured | {p}))) for p in PREFILTERS},
        "missing": absent,
        **told,
    }
