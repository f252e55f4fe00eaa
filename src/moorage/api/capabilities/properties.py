"""Which image properties a user can set, and the trait each value requires of a host.

Derived by running the scheduler's own translations on every value the property
allows (``image_metadata_traits`` for the ``hw_*`` properties, ``image_type_trait``
for ``disk_format``), so this table cannot disagree with what the request filters
ask placement for.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from moorage.model import vocabulary
from moorage.model.image import parse_properties
from moorage.scheduler.request_filters import image_metadata_traits, image_type_trait

DISK_FORMAT = "disk_format"


@dataclass(frozen=True)
class PropertyRequirement:
    """``property=value`` needs ``trait`` of its host; None: no os-traits trait says
    it, so placement cannot check it (the host checks it when it spawns the guest)."""

    property: str
    value: str
    trait: str | None


def _hw_trait(name: str, value: str) -> str | None:
    translation = image_metadata_traits(parse_properties({name: value}))
    return next(iter(translation.traits), None)


def _disk_format_trait(value: str) -> str | None:
    trait = image_type_trait(value)
    return trait if trait in vocabulary.KNOWN else None


def _trait(name: str, value: str) -> str | None:
    return _disk_format_trait(value) if name == DISK_FORMAT else _hw_trait(name, value)


@functools.cache
def requirements() -> tuple[tuple[str, tuple[PropertyRequirement, ...]], ...]:
    """Per property a prefilter checks (``disk_format`` first, then the request
    filters' order: the vocabulary's), every value it allows and the trait that value
    requires."""
    return tuple(
        (named.name, tuple(PropertyRequirement(named.name, value, _trait(named.name, value))
                           for value in named.values))
        for named in vocabulary.PROPERTY_FAMILIES if named.prefilter is not None)
