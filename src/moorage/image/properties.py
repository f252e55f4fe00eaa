"""The rules an image's properties are held to when they are written, wherever they are
written (the image service, the compute API's legacy ``/v2.1/images``): ``hw_*``
enums with upstream's aliases (``moorage.model.image``), and ``trait:NAME`` only as
``required`` with NAME an os-traits name or CUSTOM_*. A bad one fails the write, not a
boot."""

from __future__ import annotations

from collections.abc import Mapping

from moorage.model.image import TRAIT_PREFIX, InvalidImageProperty, parse_properties
from moorage.model.vocabulary import is_trait_name

TRAIT_NAMES = "an os-traits name or CUSTOM_ followed by A-Z, 0-9 and _"


def check_properties(properties: Mapping[str, str]) -> None:
    """InvalidImageProperty naming the first property that breaks a rule, and what it
    allows."""
    parse_properties(properties)
    for name, value in properties.items():
        if not name.startswith(TRAIT_PREFIX):
            continue
        trait = name[len(TRAIT_PREFIX):]
        if not is_trait_name(trait):
            raise InvalidImageProperty(name, trait, TRAIT_NAMES)
        if value != "required":
            raise InvalidImageProperty(name, value, ("required",))
