"""Which traits a compute node's provider should carry: upstream's ownership rules.

A pure function, so the rules read in one place and test as a table:

- a trait the driver reports supported is added, one it reports unsupported is
  removed: the driver owns it, whoever set it;
- a trait the driver says nothing about is kept: operators' CUSTOM_* traits
  and anything another service manages survive every sync;
- COMPUTE_NODE is always there on a compute node;
- COMPUTE_STATUS_DISABLED follows the service's disabled state, so a disabled
  host drops out of scheduling (the scheduler forbids that trait).
"""

from __future__ import annotations

from collections.abc import Iterable, Set

import os_traits

from moorage.model.vocabulary import PROPERTY_FAMILIES
from moorage.virt.report import TraitReport
from moorage.virt.switches import guest_feature_traits

COMPUTE_NODE = os_traits.COMPUTE_NODE
STATUS_DISABLED = os_traits.COMPUTE_STATUS_DISABLED
# Families whose "no" the compute API records (the heartbeat's ``refused``): the ones an
# image property names, which a scheduler without the prefilters does not avoid.
_REFUSABLE_PREFIXES = tuple(f"{named.prefix}_" for named in PROPERTY_FAMILIES)
_GUEST_FEATURES = guest_feature_traits()


def refused(reports: Iterable[TraitReport]) -> list[str]:
    """The traits of ``reports`` reported unsupported that an image can ask for, by
    a property (an image type, a device model, an architecture) or as a guest feature
    (firmware, TPM): a spawn asking for one is refused. Sorted."""
    return sorted({r.trait for r in reports if not r.supported and (
        r.trait.startswith(_REFUSABLE_PREFIXES) or r.trait in _GUEST_FEATURES)})


def desired_traits(
    current: Set[str],
    reports: Iterable[TraitReport],
    *,
    compute_node: bool = True,
    disabled: bool | None = None,
) -> frozenset[str]:
    """The traits a provider should have, from what it has and what the driver says.

    ``disabled`` None leaves COMPUTE_STATUS_DISABLED as it is (nested providers).
    """
    reports = list(reports)
    supported = {r.trait for r in reports if r.supported}
    unsupported = {r.trait for r in reports if not r.supported} - supported
    traits = (set(current) - unsupported) | supported
    if compute_node:
        traits.add(COMPUTE_NODE)
    if disabled is True:
        traits.add(STATUS_DISABLED)
    elif disabled is False:
        traits.discard(STATUS_DISABLED)
    return frozenset(traits)
