"""The trait families a user may care about when bringing an image, and how each
trait is labelled for people.

Membership comes from os-traits by prefix (``traits.family``), never a re-typed list:
a trait os-traits adds to a family appears here with it. The titles are the one small
table; a trait's label is derived from its name: the image property value that
names it where there is one (``COMPUTE_NET_VIF_MODEL_SPAPR_VLAN`` -> ``spapr-vlan``),
otherwise its name after the family prefix, in words (``COMPUTE_SECURITY_TPM_2_0`` ->
``TPM 2.0``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from moorage.model.image import enum_values
from moorage.virt import traits


@dataclass(frozen=True)
class Family:
    """A group of traits shown together: ``key`` for programs, ``title`` for people.
    ``label_property`` is the image property whose values name the family's traits."""

    key: str
    title: str
    prefixes: tuple[str, ...]
    label_property: str | None = None

    @functools.cached_property
    def members(self) -> frozenset[str]:
        """Every os-traits trait of the family."""
        return frozenset().union(*(traits.family(prefix) for prefix in self.prefixes))


FAMILIES: tuple[Family, ...] = (
    Family("nic_models", "Network card models", (traits.VIF_MODEL,), "hw_vif_model"),
    Family("video_models", "Video models", (traits.GRAPHICS_MODEL,), "hw_video_model"),
    Family("sound_models", "Sound models", (traits.SOUND_MODEL,), "hw_sound_model"),
    Family("viommu_models", "vIOMMU models", (traits.VIOMMU_MODEL,), "hw_viommu_model"),
    Family("storage_buses", "Disk and CD-ROM buses", (traits.STORAGE_BUS,), "hw_disk_bus"),
    Family("image_formats", "Image formats", (traits.IMAGE_TYPE,), "disk_format"),
    Family("architectures", "Architectures", (traits.HW_ARCH,), "hw_architecture"),
    Family("emulated_architectures", "Emulated architectures", (traits.EMULATED_ARCH,),
           "hw_emulation_architecture"),
    Family("cpu_features", "CPU features", ("HW_CPU",)),
    Family("firmware", "Firmware and security", (traits.FIRMWARE, "COMPUTE_SECURITY")),
)

# Digits split by an underscore were a version or a number with a dot: TPM_1_2.
_DOTTED = re.compile(r"(?<=\d)_(?=\d)")


@functools.cache
def _property_labels() -> Mapping[str, str]:
    """trait -> the image property value that names it, for every labelled family."""
    labels: dict[str, str] = {}
    for family in FAMILIES:
        if family.label_property is None:
            continue
        for value in enum_values(family.label_property):
            for prefix in family.prefixes:
                labels.setdefault(traits.trait_name(prefix, value), value)
    return labels


def family_of(trait: str) -> Family | None:
    """The family a trait is shown in; None for the traits users are not shown."""
    return next((family for family in FAMILIES if trait in family.members), None)


def label(trait: str) -> str:
    """A short human name for ``trait``: ``e1000``, ``x86_64``, ``TPM 2.0``."""
    named = _property_labels().get(trait)
    if named is not None:
        return named
    family = family_of(trait)
    rest = trait
    if family is not None:
        prefix = next(p for p in family.prefixes if trait.startswith(p + "_"))
        rest = trait[len(prefix) + 1:]
        if family.label_property is not None:
            # A value os-traits names but the property does not allow: HW_ARCH_ARMV7.
            return rest.lower()
    return _DOTTED.sub(".", rest).replace("_", " ")
