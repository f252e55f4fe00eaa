"""What a user is shown: the census cut at the host floor, in families, and the image
properties with what each value needs (pure).

The floor is the privacy rule. A trait fewer than ``floor`` hosts offer is not
listed, and an image property value that needs it reads "not offered" exactly as one
no host offers: telling 0 from 1 would point at a single special host. Nothing here
carries a host name, a provider, a version or a count below the floor; the shapes
have no field that could. Free capacity is summed over the hosts that offer a trait
and rounded down to 1, 2 or 5 times a power of ten (``rounded_down``): the sums of two
traits offered by the same hosts but one differ by that host's free capacity, which
exact sums would give away.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moorage.api.capabilities import families, properties
from moorage.api.capabilities.census import RESOURCES, Census
from moorage.model.discretion import rounded_down
from moorage.model.vocabulary import PROPERTY_FAMILIES, Prefilter


class Availability(enum.StrEnum):
    OFFERED = "offered"          # at least ``floor`` hosts offer the trait
    NOT_OFFERED = "not_offered"  # fewer do (perhaps none: not said)
    NO_TRAIT = "no_trait"        # os-traits has no trait for the value


class CheckedBy(enum.StrEnum):
    """Where a property's trait is enforced, with this cloud's options."""

    PLACEMENT = "placement"  # its prefilter is on: only hosts with the trait are asked
    HOST = "host"            # the prefilter is off: the host refuses it at spawn


@dataclass(frozen=True)
class TraitEntry:
    trait: str
    label: str
    hosts: int
    free: Mapping[str, int]


@dataclass(frozen=True)
class FamilyEntry:
    key: str
    title: str
    traits: tuple[TraitEntry, ...]


@dataclass(frozen=True)
class ValueEntry:
    value: str
    trait: str | None
    availability: Availability
    hosts: int | None  # only when offered


@dataclass(frozen=True)
class PropertyEntry:
    property: str
    checked_by: CheckedBy
    values: tuple[ValueEntry, ...]


@dataclass(frozen=True)
class Catalogue:
    floor: int
    families: tuple[FamilyEntry, ...]
    properties: tuple[PropertyEntry, ...]


def build(census: Census, floor: int, prefiltered: frozenset[str]) -> Catalogue:
    """The catalogue of ``census`` cut at ``floor``; ``prefiltered`` names the image
    properties whose request filter is on in this cloud."""
    shown = {trait: offer for trait, offer in census.items() if offer.hosts >= floor}
    family_entries = tuple(
        FamilyEntry(family.key, family.title, tuple(
            TraitEntry(trait, families.label(trait), shown[trait].hosts,
                       {rc: rounded_down(shown[trait].free.get(rc, 0)) for rc in RESOURCES})
            for trait in sorted(family.members & shown.keys())))
        for family in families.FAMILIES)

    def value_entry(requirement: properties.PropertyRequirement) -> ValueEntry:
        trait = requirement.trait
        if trait is None:
            return ValueEntry(requirement.value, None, Availability.NO_TRAIT, None)
        if trait in shown:
            return ValueEntry(requirement.value, trait, Availability.OFFERED,
                              shown[trait].hosts)
        return ValueEntry(requirement.value, trait, Availability.NOT_OFFERED, None)

    property_entries = tuple(
        PropertyEntry(name, CheckedBy.PLACEMENT if name in prefiltered else CheckedBy.HOST,
                      tuple(value_entry(r) for r in requirements))
        for name, requirements in properties.requirements())
    return Catalogue(floor, family_entries, property_entries)


def prefiltered_properties(image_type_filter: bool, image_metadata_filter: bool
                           ) -> frozenset[str]:
    """The properties placement checks, given the two prefilter options."""
    on = {Prefilter.IMAGE_TYPE: image_type_filter,
          Prefilter.IMAGE_METADATA: image_metadata_filter}
    return frozenset(named.name for named in PROPERTY_FAMILIES
                     if named.prefilter is not None and on[named.prefilter])


def to_json(catalogue: Catalogue) -> dict[str, Any]:
    """The body of ``GET /v2.1/capabilities`` (under ``"capabilities"``)."""
    return {
        "host_floor": catalogue.floor,
        "families": [
            {"family": f.key, "title": f.title, "traits": [
                {"trait": t.trait, "label": t.label, "hosts": t.hosts, "free": dict(t.free)}
                for t in f.traits]}
            for f in catalogue.families],
        "image_properties": [
            {"property": p.property, "checked_by": str(p.checked_by), "values": [
                {"value": v.value, "trait": v.trait, "availability": str(v.availability),
                 "hosts": v.hosts}
                for v in p.values]}
            for p in catalogue.properties],
    }
