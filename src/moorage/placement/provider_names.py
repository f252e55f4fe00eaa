"""A compute node's provider uuid, derived from the node's name.

Why derived: a restarted agent finds its own providers, and the compute API, the
scheduler and the capability census name a host's provider without asking placement
or keeping a table. The agents create providers with these uuids
(``moorage.compute.provider_tree``); every other service only reads them, so the
rule sits here, below all of them, with the client they talk to placement through.
"""

from __future__ import annotations

import uuid as uuidlib

PROVIDER_NAMESPACE = uuidlib.UUID("8d6a0f2e-5b8e-4d55-9a52-6f0c2b7e1d41")


def provider_uuid(name: str) -> str:
    """The uuid of the provider named ``name`` (a compute node, or a child of one)."""
    return str(uuidlib.uuid5(PROVIDER_NAMESPACE, name))
