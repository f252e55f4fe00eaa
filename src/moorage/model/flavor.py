"""Flavors: the size of a server, and in their extra specs what it asks of its host."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from moorage.model.image import Image

# trait[SUFFIX]:NAME = required | forbidden (upstream's extra spec syntax)
TRAIT_SPEC = re.compile(r"^trait([a-zA-Z0-9_-]{1,64})?:(.+)$")


@dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap_mb: int = 0
    extra_specs: Mapping[str, str] = field(default_factory=dict)

    def traits(self, value: str) -> frozenset[str]:
        """Traits the extra specs mark ``value`` (required or forbidden), in any group."""
        found = set()
        for key, spec in self.extra_specs.items():
            match = TRAIT_SPEC.match(key)
            if match and spec == value:
                found.add(match.group(2))
        return frozenset(found)


def required_traits(flavor: Flavor, image: Image) -> frozenset[str]:
    """Every trait the flavor or the image requires: what the guest asks its host for,
    and, where a driver gives a trait meaning, what switches a guest feature on."""
    return flavor.traits("required") | image.properties.traits_required
