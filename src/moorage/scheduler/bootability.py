"""Which hosts can boot an image, today and with each prefilter on (pure).

Why: turning on ``[scheduler] image_metadata_prefilter`` or
``query_placement_for_image_type_support`` makes placement require traits of every
boot. On a cloud whose hosts do not report those traits yet, every boot of an image
that needs them ends in NoValidHost. This module answers, before anyone turns an
option on, how many hosts could boot each image and which trait no host reports; the
upgrade preflight (``moorage scheduler preflight``), the compute API's image admission
and its start-up check share it.

The requirements come from the request filters' own translations
(``checkable_image_type_trait``, ``image_metadata_traits``), so what is counted here is
what the filters will ask of placement. A host is a compute node's root provider, seen
through the traits of it that were read (``host_traits`` reads them): a disabled host
(COMPUTE_STATUS_DISABLED, which ``compute_status_filter`` always forbids) boots
nothing, whatever it reports.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from oslo_config import cfg

from moorage.conf import option_value
from moorage.model.image import Image
from moorage.model.vocabulary import PROPERTY_FAMILIES, Prefilter, prefiltered
from moorage.scheduler.filter_records import Origin, OriginKind
from moorage.scheduler.request_filters import (
    STATUS_DISABLED,
    checkable_image_type_trait,
    image_metadata_traits,
)

PREFILTERS: tuple[Prefilter, ...] = tuple(Prefilter)

# The trait families each prefilter requires a member of, in the vocabulary's order.
FAMILIES: Mapping[Prefilter, tuple[str, ...]] = {
    p: tuple(dict.fromkeys(named.prefix for named in prefiltered(p))) for p in PREFILTERS}
ALL_FAMILIES: tuple[str, ...] = tuple(f for p in PREFILTERS for f in FAMILIES[p])


def parse_prefilter(name: str) -> Prefilter:
    """A prefilter by its option name; ValueError naming the allowed ones."""
    try:
        return Prefilter(name)
    except ValueError:
        raise ValueError(f"unknown prefilter {name!r}; allowed: "
                         f"{', '.join(PREFILTERS)}") from None


def configured_prefilters(conf: cfg.ConfigOpts) -> frozenset[Prefilter]:
    """The prefilters ``conf`` turns on."""
    return frozenset(p for p in PREFILTERS if option_value(conf, "scheduler", p.value))


def family_of(trait: str) -> str | None:
    """The prefilter family ``trait`` belongs to (``COMPUTE_NET_VIF_MODEL``), if any."""
    return next((f for f in ALL_FAMILIES if trait.startswith(f + "_")), None)


@dataclass(frozen=True)
class Requirement:
    """A trait a boot of the image requires of its host, and why.

    ``prefilter`` is the option that makes the trait required; None for the image's
    own ``trait:NAME=required`` properties, which are required whatever the options."""

    trait: str
    origin: Origin  # disk_format=vmdk, hw_vif_model=e1000, trait:HW_CPU_X86_AVX2=required
    prefilter: Prefilter | None

    @property
    def family(self) -> str | None:
        return family_of(self.trait) if self.prefilter is not None else None

    def __str__(self) -> str:
        return f"{self.trait} ({self.origin.setting})"


def image_requirements(image: Image) -> tuple[Requirement, ...]:
    """Every trait a boot of ``image`` may require, each with the option that makes
    it required (a boot from volume skips the image type: see the request filter)."""
    found: list[Requirement] = []
    image_type = checkable_image_type_trait(image.disk_format)
    if image_type is not None:
        found.append(Requirement(image_type, Origin(OriginKind.IMAGE, "disk_format",
                                                    image.disk_format), Prefilter.IMAGE_TYPE))
    for trait, origin in image_metadata_traits(image.properties).traits.items():
        found.append(Requirement(trait, origin, Prefilter.IMAGE_METADATA))
    for trait in sorted(image.properties.traits_required):
        found.append(Requirement(trait, Origin.image_trait(trait), None))
    return tuple(found)


def required_under(requirements: Iterable[Requirement],
                   prefilters: Collection[Prefilter]) -> tuple[Requirement, ...]:
    """The requirements that hold with ``prefilters`` on."""
    return tuple(r for r in requirements if r.prefilter is None or r.prefilter in prefilters)


def traits_of_interest(requirements: Iterable[Requirement]) -> frozenset[str]:
    """What must be read of each host to judge ``requirements``: their traits and
    whether the host is disabled."""
    return frozenset(r.trait for r in requirements) | {STATUS_DISABLED}


@dataclass(frozen=True)
class HostTraits:
    """A compute host as placement shows it: the traits of its root provider that were
    read, and the prefilter families it reports any trait of; and, where the compute
    API keeps them (Moorage's ``GET /scheduler/hosts``), what its driver reports
    unsupported (``refused``, None when unknown), which placement does not keep."""

    name: str
    uuid: str
    traits: frozenset[str]
    families: frozenset[str]
    refused: frozenset[str] | None = None

    def refuses(self, requirements: Iterable[Requirement]) -> bool:
        """Its own reports say its late check refuses a guest needing these."""
        refused = self.refused or frozenset()
        return any(r.trait in refused for r in requirements)

    @classmethod
    def of(cls, name: str, host_traits: Iterable[str], uuid: str = "") -> HostTraits:
        """A host whose every trait is known (its families follow from them)."""
        known = frozenset(host_traits)
        return cls(name, uuid or name, known, frozenset(
            family for trait in known if (family := family_of(trait)) is not None))

    @property
    def enabled(self) -> bool:
        return STATUS_DISABLED not in self.traits


def bootable(hosts: Iterable[HostTraits], requirements: Iterable[Requirement]) -> int:
    """How many enabled hosts report every required trait."""
    needed = {r.trait for r in requirements}
    return sum(1 for host in hosts if host.enabled and needed <= host.traits)


def missing(hosts: Sequence[HostTraits],
            requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """The requirements no host reports at all (enabled or not)."""
    reported: set[str] = set().union(*(host.traits for host in hosts))
    return tuple(dict.fromkeys(r for r in requirements if r.trait not in reported))


def not_reporting(hosts: Iterable[HostTraits],
                  families: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """For each family, the enabled hosts that report no trait of it at all, neither
    supported (placement) nor unsupported (their own reports): their agents do not
    report that family yet (as opposed to a host that reports other members of the
    family and lacks the one an image needs, or one that reports them all False)."""
    enabled = [host for host in hosts if host.enabled]
    silent = {family: tuple(sorted(
        h.name for h in enabled if family not in h.families
        and not any(t.startswith(family + "_") for t in h.refused or ())))
        for family in dict.fromkeys(families)}
    return {family: names for family, names in silent.items() if names}


def cannot(hosts: Iterable[HostTraits],
           requirements: Iterable[Requirement]) -> dict[str, tuple[str, ...]]:
    """For each trait of ``requirements``, the enabled hosts whose own reports say they
    cannot give it (reported unsupported): not "not yet", never."""
    enabled = [host for host in hosts if host.enabled and host.refused]
    found = {r.trait: tuple(sorted(h.name for h in enabled if r.trait in (h.refused or ())))
             for r in requirements}
    return {trait: names for trait, names in found.items() if names}


@dataclass(frozen=True)
class Assessment:
    """One image on today's hosts: how many enabled hosts can boot it under today's
    options (``hosts``), with today's options and each prefilter on, with all on, and
    with the ``planned`` ones on, each count with the late checks the hosts' own
    reports predict; what no host reports of what the planned options require, the
    hosts that report none of a family they require (not yet), and those that report
    a needed trait unsupported (cannot)."""

    hosts: int
    with_prefilter: Mapping[Prefilter, int]
    with_all: int
    planned: frozenset[Prefilter]
    with_planned: int
    missing: tuple[Requirement, ...]
    not_reporting: Mapping[str, tuple[str, ...]]
    # trait -> the enabled hosts that report it unsupported (when their reports are known)
    cannot: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def stranded(self) -> bool:
        """Bootable today, and by no host once the planned prefilters are on."""
        return self.hosts > 0 and self.with_planned == 0


def assess(image: Image, hosts: Sequence[HostTraits], configured: Collection[Prefilter],
           planned: Collection[Prefilter] = PREFILTERS) -> Assessment:
    """``image`` on ``hosts`` with the ``configured`` prefilters on today; ``planned``
    (today's and the ones to turn on; all by default) decides what is missing."""
    requirements = image_requirements(image)
    today = frozenset(configured)
    after = today | frozenset(planned)
    needed_after = required_under(requirements, after)
    # The late checks, as each host's own reports predict them: a host that refuses a
    # trait the guest needs (required of placement or not) boots it under no option.
    able = [host for host in hosts if not host.refuses(requirements)]
    return Assessment(
        hosts=bootable(able, required_under(requirements, today)),
        with_prefilter={p: bootable(able, required_under(requirements, today | {p}))
                        for p in PREFILTERS},
        with_all=bootable(able, required_under(requirements, PREFILTERS)),
        planned=after,
        with_planned=bootable(able, needed_after),
        missing=missing(hosts, needed_after),
        not_reporting=not_reporting(
            hosts, (f for r in needed_after if (f := r.family) is not None)),
        cannot=cannot(hosts, needed_after),
    )


def unbootable_reason(hosts: Sequence[HostTraits],
                      requirements: Sequence[Requirement]) -> str | None:
    """Why no enabled host can boot an image that requires ``requirements``, in one
    line; None when one can, or when there is no host at all to judge by (a cloud
    whose hosts have not registered yet refuses nothing)."""
    if not hosts or bootable(hosts, requirements):
        return None
    enabled = [host for host in hosts if host.enabled]
    absent = missing(hosts, requirements)
    only_disabled = tuple(dict.fromkeys(
        r for r in requirements if r not in absent
        and not any(r.trait in host.traits for host in enabled)))
    reasons = [f"no host reports {r}" for r in absent]
    reasons += [f"only disabled hosts report {r}" for r in only_disabled]
    if not reasons:
        reasons = ([f"all {len(hosts)} hosts are disabled"] if not enabled else [
            "no enabled host reports all of "
            + ", ".join(str(r) for r in dict.fromkeys(requirements))])
    return "no enabled host can boot this image: " + "; ".join(reasons)


def unreported_families(prefilters: Iterable[Prefilter],
                        traits_in_use: Collection[str]) -> dict[Prefilter, tuple[str, ...]]:
    """For each of ``prefilters``, the families it requires a member of that no
    provider reports any trait of (``traits_in_use``: every trait some provider has)."""
    in_use = {family for trait in traits_in_use if (family := family_of(trait)) is not None}
    silent = {p: tuple(f for f in FAMILIES[p] if f not in in_use)
              for p in dict.fromkeys(prefilters)}
    return {p: families for p, families in silent.items() if families}


def properties_of_family(family: str) -> tuple[str, ...]:
    """The image properties whose values require a trait of ``family``."""
    return tuple(named.name for named in PROPERTY_FAMILIES
                 if named.prefix == family and named.prefilter is not None)
