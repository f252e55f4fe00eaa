"""Trait names for what a hypervisor can do, built from their parts and checked
against os-traits.

A device model becomes a trait as upstream names it: prefix, underscore, the
model with ``-`` turned into ``_``, upper case (``spapr-vlan`` ->
``COMPUTE_NET_VIF_MODEL_SPAPR_VLAN``). A name os-traits does not know is an
error (``UnknownTrait``), never dropped silently: a driver table that drifts
from os-traits fails its test instead of quietly reporting less.
"""

from __future__ import annotations

import importlib.metadata
import re

import os_traits

KNOWN: frozenset[str] = frozenset(os_traits.get_traits())
OS_TRAITS_VERSION = importlib.metadata.version("os-traits")

STORAGE_BUS = "COMPUTE_STORAGE_BUS"
GRAPHICS_MODEL = "COMPUTE_GRAPHICS_MODEL"
VIF_MODEL = "COMPUTE_NET_VIF_MODEL"
HW_ARCH = "HW_ARCH"
EMULATED_ARCH = "COMPUTE_ARCH"
VIOMMU_MODEL = "COMPUTE_VIOMMU_MODEL"
SOUND_MODEL = "COMPUTE_SOUND_MODEL"
IMAGE_TYPE = "COMPUTE_IMAGE_TYPE"
FIRMWARE = "COMPUTE_FIRMWARE"


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


def is_custom(name: str) -> bool:
    return name.startswith("CUSTOM_")


CUSTOM_NAME = re.compile(r"^CUSTOM_[A-Z0-9_]{1,248}$")


def reportable(name: str) -> str:
    """``name`` if a driver may report it: an os-traits name, or CUSTOM_ and then
    upper-case letters, digits and underscores as placement requires; UnknownTrait
    otherwise."""
    if is_custom(name):
        if not CUSTOM_NAME.match(name):
            raise UnknownTrait(name)
        return name
    return checked(name)
