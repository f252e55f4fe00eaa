"""The names Moorage shares with os-traits and os-resource-classes, each written once.

- Trait families by prefix, and a family's trait for one value, as upstream names it:
  prefix, underscore, the value with ``-`` turned into ``_``, upper case
  (``spapr-vlan`` -> ``COMPUTE_NET_VIF_MODEL_SPAPR_VLAN``). A name os-traits does not
  know is an error (``UnknownTrait``), never dropped silently: a driver table that
  drifts from os-traits fails its test instead of quietly reporting less.
- Which image property names a trait of which family (``PROPERTY_FAMILIES``): the
  prefilter that makes that trait required, and whether every driver refuses the
  value at spawn when its host reported the trait unsupported. The request filters,
  the drivers' late checks, the libvirt driver's model switches, the capability
  catalogue and the truth tests read this one table.
- Custom names (``CUSTOM_*``) as placement allows them, and the ``[libvirt]
  virt_type`` values that run QEMU.

Pure, below every package that reads it: nothing of Moorage but ``model``.
"""

from __future__ import annotations

import enum
import functools
import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import dataclass

import os_resource_classes
import os_traits

from moorage.model.image import enum_values

KNOWN: frozenset[str] = frozenset(os_traits.get_traits())
OS_TRAITS_VERSION = importlib.metadata.version("os-traits")

# Trait families (os-traits prefixes).
STORAGE_BUS = "COMPUTE_STORAGE_BUS"
GRAPHICS_MODEL = "COMPUTE_GRAPHICS_MODEL"
VIF_MODEL = "COMPUTE_NET_VIF_MODEL"
HW_ARCH = "HW_ARCH"
EMULATED_ARCH = "COMPUTE_ARCH"
VIOMMU_MODEL = "COMPUTE_VIOMMU_MODEL"
SOUND_MODEL = "COMPUTE_SOUND_MODEL"
IMAGE_TYPE = "COMPUTE_IMAGE_TYPE"
FIRMWARE = "COMPUTE_FIRMWARE"

# [libvirt] virt_type values that run QEMU (and so have QEMU's domain capabilities);
# the only ones Moorage builds guests for.
QEMU_VIRT_TYPES = ("kvm", "qemu")


# -- trait names ------------------------------------------------------------------------
class UnknownTrait(ValueError):
    """A computed trait name that os-traits does not define."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not a trait os-traits {OS_TRAITS_VERSION} defines")
        self.name = name


def checked(name: str) -> str:
    """``name`` if os-traits defines it; UnknownTrait otherwise."""
    if name not in KNOWN:
        raise UnknownTrait(name)
    return name


def trait_name(prefix: str, value: str) -> str:
    """The trait for one value of a device family, unchecked (for error messages)."""
    return f"{prefix}_{value.replace('-', '_').upper()}"


def device_trait(prefix: str, value: str) -> str:
    """The trait for one value of a device family; UnknownTrait if os-traits lacks it."""
    return checked(trait_name(prefix, value))


def family(prefix: str) -> frozenset[str]:
    """Every os-traits name of a family (``COMPUTE_NET_VIF_MODEL`` -> its 13 traits)."""
    return frozenset(name for name in KNOWN if name.startswith(prefix + "_"))


# -- custom names -----------------------------------------------------------------------
# Placement's rule for a custom trait or resource class, and the longest name it keeps.
CUSTOM_PATTERN = "^CUSTOM_[A-Z0-9_]+$"
CUSTOM_NAME = re.compile(CUSTOM_PATTERN)
NAME_MAX_LENGTH = 255
STANDARD_RESOURCE_CLASSES: frozenset[str] = frozenset(os_resource_classes.STANDARDS)


def is_custom(name: str) -> bool:
    """A custom trait or resource class name (os-traits and os-resource-classes say the
    same: it starts with ``CUSTOM_``), well-formed or not."""
    return bool(os_traits.is_custom(name))


def is_trait_name(name: str) -> bool:
    """An os-traits name, or a custom trait (CUSTOM_ and upper-case letters, digits, _)."""
    return name in KNOWN or bool(CUSTOM_NAME.match(name))


def is_resource_class_name(name: str) -> bool:
    """An os-resource-classes name, or a custom class (as for a custom trait)."""
    return name in STANDARD_RESOURCE_CLASSES or bool(CUSTOM_NAME.match(name))


def reportable(name: str) -> str:
    """``name`` if a driver may report it: an os-traits name, or CUSTOM_ and then
    upper-case letters, digits and underscores, 255 characters at most, as placement
    requires; UnknownTrait otherwise."""
    if is_custom(name):
        if not CUSTOM_NAME.match(name) or len(name) > NAME_MAX_LENGTH:
            raise UnknownTrait(name)
        return name
    return checked(name)


# -- image properties that name traits --------------------------------------------------
class Prefilter(enum.StrEnum):
    """The request filters that make an image's values required traits of its host, by
    the ``[scheduler]`` option that turns each on."""

    IMAGE_METADATA = "image_metadata_prefilter"
    IMAGE_TYPE = "query_placement_for_image_type_support"


@dataclass(frozen=True)
class PropertyFamily:
    """An image property whose every value names one trait of a family
    (``hw_vif_model=e1000`` names COMPUTE_NET_VIF_MODEL_E1000)."""

    name: str  # the image property
    prefix: str
    # The prefilter that requires the trait of the image's value of the property;
    # None: no request filter asks placement for it.
    prefilter: Prefilter | None
    # A device model every driver's late check refuses when its host reported the
    # value's trait unsupported (virt.driver.ReportedSupport.check).
    device_model: bool = False

    @property
    def values(self) -> tuple[str, ...]:
        """The canonical values the property allows (model.image)."""
        return enum_values(self.name)

    def trait(self, value: str) -> str:
        """The trait ``value`` names, unchecked (os-traits may lack it)."""
        return trait_name(self.prefix, value)


_META = Prefilter.IMAGE_METADATA
PROPERTY_FAMILIES: tuple[PropertyFamily, ...] = (
    PropertyFamily("disk_format", IMAGE_TYPE, Prefilter.IMAGE_TYPE),
    # The image metadata prefilter's, in upstream's order. hw_viommu_model uses
    # os-traits' real prefix COMPUTE_VIOMMU_MODEL (upstream computes COMPUTE_VIOMMU_*,
    # which does not exist, and so drops the whole filter for any image that sets it).
    PropertyFamily("hw_cdrom_bus", STORAGE_BUS, _META, device_model=True),
    PropertyFamily("hw_disk_bus", STORAGE_BUS, _META, device_model=True),
    PropertyFamily("hw_video_model", GRAPHICS_MODEL, _META, device_model=True),
    PropertyFamily("hw_vif_model", VIF_MODEL, _META, device_model=True),
    PropertyFamily("hw_architecture", HW_ARCH, _META),
    PropertyFamily("hw_emulation_architecture", EMULATED_ARCH, _META),
    PropertyFamily("hw_viommu_model", VIOMMU_MODEL, _META, device_model=True),
    # No request filter asks for it; its values still name its family's traits.
    PropertyFamily("hw_sound_model", SOUND_MODEL, None, device_model=True),
)
_BY_PROPERTY: Mapping[str, PropertyFamily] = {f.name: f for f in PROPERTY_FAMILIES}


def property_family(name: str) -> PropertyFamily:
    """The family image property ``name`` names traits of; KeyError for a property
    that names none."""
    return _BY_PROPERTY[name]


def prefiltered(prefilter: Prefilter) -> tuple[PropertyFamily, ...]:
    """The properties whose traits ``prefilter`` requires, in the table's order."""
    return tuple(f for f in PROPERTY_FAMILIES if f.prefilter is prefilter)


def named_by_property(prefix: str) -> bool:
    """Whether an image property's values name the traits of family ``prefix``."""
    return any(f.prefix == prefix for f in PROPERTY_FAMILIES)


@functools.cache
def _values_by_trait() -> Mapping[str, str]:
    named: dict[str, str] = {}
    for prop in PROPERTY_FAMILIES:
        for value in prop.values:
            named.setdefault(prop.trait(value), value)
    return named


def naming_value(trait: str) -> str | None:
    """The image property value that names ``trait``, as the property spells it
    (``COMPUTE_NET_VIF_MODEL_SPAPR_VLAN`` -> ``spapr-vlan``); None when none does."""
    return _values_by_trait().get(trait)
