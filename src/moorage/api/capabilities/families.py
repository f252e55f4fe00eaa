"""The trait families a user may care about when bringing an image, and how each
trait is labelled for people.

Membership comes from os-traits by prefix (``vocabulary.family``), never a re-typed list:
a trait os-traits adds to a family appears here with it. The titles are the one small
table; a trait's label is derived from its name: the image property value that
names it where there is one (``COMPUTE_NET_VIF_MODEL_SPAPR_VLAN`` -> ``spapr-vlan``,
from the vocabulary's table of properties), otherwise its name after the family
prefix, in words (``COMPUTE_SECURITY_TPM_2_0`` -> ``TPM 2.0``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from moorage.model import vocabulary


@dataclass(frozen=True)
class Family:
    """A group of traits shown together: ``key`` for programs, ``title`` for people."""

    key: str
    title: str
    prefixes: tuple[str, ...]

    @functools.cached_property
    def members(self) -> frozenset[str]:
        """Every os-traits trait of the family."""
        return frozenset().union(*(vocabulary.family(prefix) for prefix in self.prefixes))

    @functools.cached_property
    def named_by_property(self) -> bool:
        """Whether an image property's values name the family's traits."""
        return any(vocabulary.named_by_property(prefix) for prefix in self.prefixes)


FAMILIES: tuple[Family, ...] = (
    Family("nic_models", "Network card models", (vocabulary.VIF_MODEL,)),
    Family("video_models", "Video models", (vocabulary.GRAPHICS_MODEL,)),
    Family("sound_models", "Sound models", (vocabulary.SOUND_MODEL,)),
    Family("viommu_models", "vIOMMU models", (vocabulary.VIOMMU_MODEL,)),
    Family("storage_buses", "Disk and CD-ROM buses", (vocabulary.STORAGE_BUS,)),
    Family("image_formats", "Image formats", (vocabulary.IMAGE_TYPE,)),
    Family("architectures", "Architectures", (vocabulary.HW_ARCH,)),
    Family("emulated_architectures", "Emulated architectures", (vocabulary.EMULATED_ARCH,)),
    Family("cpu_features", "CPU features", ("HW_CPU",)),
    Family("firmware", "Firmware and security", (vocabulary.FIRMWARE, "COMPUTE_SECURITY")),
)

# Digits split by an underscore were a version or a number with a dot: TPM_1_2.
_DOTTED = re.compile(r"(?<=\d)_(?=\d)")


def family_of(trait: str) -> Family | None:
    """The family a trait is shown in; None for the traits users are not shown."""
    return next((family for family in FAMILIES if trait in family.members), None)


def label(trait: str) -> str:
    """A short human name for ``trait``: ``e1000``, ``x86_64``, ``TPM 2.0``."""
    named = vocabulary.naming_value(trait)
    if named is not None:
        return named
    family = family_of(trait)
    rest = trait
    if family is not None:
        prefix = next(p for p in family.prefixes if trait.startswith(p + "_"))
        rest = trait[len(prefix) + 1:]
        if family.named_by_property:
            # A value os-traits names but the property does not allow: HW_ARCH_ARMV7.
            return rest.lower()
    return _DOTTED.sub(".", rest).replace("_", " ")
