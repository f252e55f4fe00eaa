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

from moorage.virt.report import TraitReport

COMPUTE_NODE = os_traits.COMPUTE_NODE
STATUS_DISABLED = os_traits.COMPUTE_STATUS_DISABLED


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
