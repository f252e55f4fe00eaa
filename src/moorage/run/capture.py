"""A twin of a real cloud: what was read from it (placement's hosts, Glance's images,
nova's flavors and servers; moorage.run.cloud_reader) turned into a cloud file
(docs/cloud-file.md) that ``moorage run`` plays with the prefilters off, each on and
both. Pure: the reading is elsewhere, so every rule here is tested without a cloud.

- **Hosts.** Each root provider with compute inventory is a host. Identical hosts (the
  same architecture, image types, traits, capacity) make one group of simulated hosts
  that report what the real ones report: ``HW_ARCH_*`` is the group's architecture,
  ``COMPUTE_IMAGE_TYPE_*`` its image types, the other traits its traits. For a device
  family a host reports at all (NIC, disk bus, video models: its driver reports the
  family), the family's traits it does not report are reported unsupported, so the
  simulated host refuses such a guest at spawn as the real driver would. A provider
  whose only inventory is one unit of a custom resource class is an Ironic node.
- **Images.** Active images, with their properties; an image the compute API would
  refuse (a property value nova does not know, a ``trait:`` that is not one) is
  skipped and named with the reason.
- **Workload.** Today's mix: each (image, flavor) weighted by the servers that run it
  now, scaled to ``boots``; servers booted from a volume, or of an image or flavor that
  is gone, are counted and left out. No server at all: each image once with the
  smallest flavor.
- **Size.** More hosts than ``max_hosts`` are sampled: every group scaled by the same
  share (at least one host each), and the notes say so. Capacity is the providers'
  totals; the twin starts empty (today's usage is not copied).

Names of the real cloud's groups, images and flavors are made file names (1 to 63 of
A-Z, a-z, 0-9, ``_ . -``, unique); the description keeps the real name and id.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from moorage.model.glance import GLANCE_ATTRIBUTES
from moorage.model.image import ARCHITECTURES, CONTAINER_FORMATS, DISK_FORMATS
from moorage.model.vocabulary import (
    GRAPHICS_MODEL,
    HW_ARCH,
    IMAGE_TYPE,
    STORAGE_BUS,
    VIF_MODEL,
    family,
    is_custom,
    is_trait_name,
    naming_value,
)
from moorage.run.description import extra_spec_problem, image_property_problem
from moorage.virt.capabilities import IMAGE_TYPES

# Device families a driver reports whole (supported ones True, the others False):
# a host reporting any trait of one refuses the others at spawn.
DEVICE_FAMILIES = (VIF_MODEL, STORAGE_BUS, GRAPHICS_MODEL)
# Traits a simulated host reports of itself, or that describe state, not ability.
_NOT_COPIED = frozenset({"COMPUTE_STATUS_DISABLED"})
COMPUTE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
DEFAULT_MAX_HOSTS = 5000
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ObservedHost:
    """A root resource provider: its name, inventory totals and traits."""

    name: str
    totals: Mapping[str, int]
    traits: frozenset[str]


@dataclass(frozen=True)
class ObservedFlavor:
    id: str
    name: str
    vcpus: int
    ram: int
    disk: int
    extra_specs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ObservedServer:
    """What a server runs: its flavor's id or name (nova's embedded flavor gives the
    name) and its image's id ("" when it booted from a volume)."""

    flavor: str
    image: str


@dataclass(frozen=True)
class Observed:
    """Everything read from the cloud."""

    name: str
    hosts: Sequence[ObservedHost]
    images: Sequence[Mapping[str, object]]  # Glance v2 records
    flavors: Sequence[ObservedFlavor]
    servers: Sequence[ObservedServer]
    children: int = 0  # nested providers (not hosts), counted for the notes


@dataclass(frozen=True)
class Capture:
    """The cloud file's data, what was left out and why, and how hosts were grouped."""

    cloud: dict[str, object]
    skipped_images: list[tuple[str, str]]   # (image, why)
    skipped_flavors: list[tuple[str, str]]  # (flavor, why)
    notes: list[str]
    groups: list[tuple[str, int, list[str]]]  # (group, real hosts, first host names)


@dataclass(frozen=True)
class _Shape:
    """What makes hosts alike."""

    ironic_class: str | None
    architecture: str | None
    image_types: tuple[str, ...] | None
    traits: tuple[str, ...]
    unsupported: tuple[str, ...]
    capacity: tuple[tuple[str, int], ...]


def host_shape(host: ObservedHost) -> _Shape:
    """How a simulated host would report what ``host`` reports."""
    traits = {t for t in host.traits if t not in _NOT_COPIED and is_trait_name(t)}
    ironic = _ironic_class(host.totals)
    if ironic is not None:
        return _Shape(ironic, None, None, tuple(sorted(traits)), (),
                      _capacity(host.totals))
    arches = sorted(a for t in traits if t.startswith(HW_ARCH + "_")
                    if (a := naming_value(t)) in ARCHITECTURES)
    types = sorted(v for t in traits if t.startswith(IMAGE_TYPE + "_")
                   if (v := naming_value(t)) in IMAGE_TYPES)
    kept = {t for t in traits
            if not t.startswith((HW_ARCH + "_", IMAGE_TYPE + "_"))}
    unsupported: set[str] = set()
    for prefix in DEVICE_FAMILIES:
        members = family(prefix)
        if kept & members:
            unsupported |= members - kept
    return _Shape(None, arches[0] if arches else None,
                  tuple(types) if types else None, tuple(sorted(kept)),
                  tuple(sorted(unsupported)), _capacity(host.totals))


def _ironic_class(totals: Mapping[str, int]) -> str | None:
    """The Ironic resource class of a node's provider (one unit of one custom class,
    no compute classes), as Ironic names it (CUSTOM_BAREMETAL_GOLD: baremetal_gold)."""
    custom = [rc for rc, total in totals.items() if is_custom(rc) and total == 1]
    if len(custom) == 1 and not any(totals.get(rc) for rc in COMPUTE_CLASSES):
        return custom[0].removeprefix("CUSTOM_").lower()
    return None


def _capacity(totals: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    keys = {"VCPU": "vcpus", "MEMORY_MB": "memory_mb", "DISK_GB": "disk_gb"}
    return tuple((keys[rc], int(totals[rc])) for rc in COMPUTE_CLASSES
                 if totals.get(rc, 0) >= 1)


def is_host(host: ObservedHost) -> bool:
    """A compute host or an Ironic node (not a provider of disks or devices only)."""
    return bool(host.totals.get("VCPU")) or _ironic_class(host.totals) is not None


class _Names:
    """File names from the real cloud's: safe characters, at most 63, each once."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def __call__(self, real: str, fallback: str) -> str:
        base = _UNSAFE.sub("-", real).strip("-._")[:55] or fallback
        if not base[0].isalnum():
            base = f"x{base}"[:55]
        name, n = base, 1
        while name in self._used:
            n += 1
            name = f"{base}-{n}"
        self._used.add(name)
        return name


def capture(observed: Observed, *, boots: int | None = None,
            max_hosts: int = DEFAULT_MAX_HOSTS, seed: int = 1) -> Capture:
    """The twin of ``observed``: a cloud file's data, and what it left out."""
    notes: list[str] = []
    hosts = [h for h in observed.hosts if is_host(h)]
    if observed.children or len(hosts) < len(observed.hosts):
        notes.append(f"{len(observed.hosts) - len(hosts) + observed.children} providers "
                     "that are not hosts (nested, or without compute inventory) are not "
                     "simulated")
    if not hosts:
        raise ValueError(f"cloud {observed.name}: placement has no compute host (no root "
                         "provider with VCPU or an Ironic node's inventory)")
    groups, listing = _groups(hosts, max_hosts, notes)
    images, skipped_images, image_names = _images(observed.images)
    if not images:
        raise ValueError(f"cloud {observed.name}: no image the twin can boot (read "
                         f"{len(observed.images)}; {len(skipped_images)} skipped)")
    flavors, skipped_flavors, flavor_names = _flavors(observed.flavors)
    if not flavors:
        raise ValueError(f"cloud {observed.name}: no flavor the twin can use")
    workload = _workload(observed.servers, image_names, flavor_names, flavors, boots,
                         notes)
    notes.append("capacity is each provider's inventory total; the twin starts with no "
                 "server, not with today's usage")
    cloud: dict[str, object] = {
        "name": _Names()(observed.name, "twin"),
        "description": f"A twin of the cloud {observed.name}: {len(hosts)} hosts in "
                       f"{len(groups)} groups, {len(images)} images, {len(flavors)} "
                       "flavors, today's flavor x image mix. Written by "
                       "`moorage cloud capture`; edit and replay it.",
        "seed": seed,
        "host_groups": groups,
        "images": images,
        "flavors": flavors,
        "workload": workload,
    }
    return Capture(cloud, skipped_images, skipped_flavors, notes, listing)


def _groups(hosts: Sequence[ObservedHost], max_hosts: int, notes: list[str]
            ) -> tuple[list[dict[str, object]], list[tuple[str, int, list[str]]]]:
    alike: dict[_Shape, list[str]] = {}
    for host in sorted(hosts, key=lambda h: h.name):
        alike.setdefault(host_shape(host), []).append(host.name)
    ordered = sorted(alike.items(), key=lambda item: (-len(item[1]), item[1][0]))
    share = min(1.0, max_hosts / len(hosts))
    if share < 1.0:
        notes.append(f"sampled: {len(hosts)} hosts are more than --max-hosts {max_hosts}; "
                     f"each group is simulated at {share:.1%} of its size (at least one "
                     "host)")
    names = _Names()
    groups: list[dict[str, object]] = []
    listing: list[tuple[str, int, list[str]]] = []
    for index, (shape, members) in enumerate(ordered, start=1):
        kind = (shape.ironic_class and "baremetal") or shape.architecture or "host"
        name = names(f"g{index}-{kind}", f"g{index}")
        count = max(1, round(len(members) * share))
        shown = ", ".join(members[:3]) + (f" and {len(members) - 3} more"
                                          if len(members) > 3 else "")
        group: dict[str, object] = {
            "name": name, "count": count,
            "driver": "ironic" if shape.ironic_class else "fake",
            "description": f"{len(members)} real host(s) alike: {shown}",
        }
        if shape.capacity:
            group["capacity"] = dict(shape.capacity)
        if shape.ironic_class:
            group["resource_class"] = shape.ironic_class
        if shape.architecture:
            group["architecture"] = shape.architecture
        if shape.image_types is not None:
            group["image_types"] = list(shape.image_types)
        if shape.traits:
            group["traits"] = list(shape.traits)
        if shape.unsupported:
            group["unsupported_traits"] = list(shape.unsupported)
        groups.append(group)
        listing.append((name, len(members), members[:3]))
    return groups, listing


def _images(records: Iterable[Mapping[str, object]]
            ) -> tuple[list[dict[str, object]], list[tuple[str, str]], dict[str, str]]:
    """The twin's images, the skipped ones with why, and {real id: file name}."""
    names = _Names()
    images: list[dict[str, object]] = []
    skipped: list[tuple[str, str]] = []
    by_id: dict[str, str] = {}
    for record in records:
        image_id, real_name = str(record.get("id") or ""), str(record.get("name") or "")
        label = f"{real_name or '(no name)'} ({image_id})"
        status = record.get("status", "active")
        if status != "active":
            skipped.append((label, f"status {status}, not active"))
            continue
        disk_format = record.get("disk_format")
        if disk_format not in DISK_FORMATS:
            skipped.append((label, f"disk_format {disk_format!r}; the twin boots "
                                   f"{', '.join(DISK_FORMATS)}"))
            continue
        properties = _properties(record)
        problems = [f"{key}: {problem}" for key, value in properties.items()
                    if (problem := image_property_problem(key, value)) is not None]
        if problems:
            skipped.append((label, "; ".join(problems)))
            continue
        container = record.get("container_format")
        image: dict[str, object] = {
            "name": names(real_name, f"image-{len(images) + 1}"),
            "description": f"{real_name} ({image_id})",
            "disk_format": disk_format,
            "container_format": container if container in CONTAINER_FORMATS else "bare",
        }
        if properties:
            image["properties"] = properties
        images.append(image)
        by_id[image_id] = str(image["name"])
    return images, skipped, by_id


def _properties(record: Mapping[str, object]) -> dict[str, object]:
    """A Glance v2 record's image properties: its keys that are not Glance's own."""
    found: dict[str, object] = {}
    for key, value in record.items():
        if key not in GLANCE_ATTRIBUTES and isinstance(value, str | int | float | bool):
            found[key] = value
    nested = record.get("properties")
    if isinstance(nested, Mapping):
        found.update({str(k): v for k, v in nested.items()
                      if isinstance(v, str | int | float | bool)})
    return found


def _flavors(observed: Iterable[ObservedFlavor]
             ) -> tuple[list[dict[str, object]], list[tuple[str, str]], dict[str, str]]:
    """The twin's flavors, the skipped ones with why, and {real id and name: file name}."""
    names = _Names()
    flavors: list[dict[str, object]] = []
    skipped: list[tuple[str, str]] = []
    by_ref: dict[str, str] = {}
    for flavor in observed:
        label = f"{flavor.name} ({flavor.id})"
        if flavor.vcpus < 1 and not flavor.extra_specs:
            skipped.append((label, "no VCPU and no extra specs: nothing to place"))
            continue
        problems = [f"{key}: {problem}" for key, value in flavor.extra_specs.items()
                    if (problem := extra_spec_problem(key, value)) is not None]
        if problems:
            skipped.append((label, "; ".join(problems)))
            continue
        entry: dict[str, object] = {
            "name": names(flavor.name, f"flavor-{len(flavors) + 1}"),
            "description": label,
            "vcpus": max(1, flavor.vcpus), "ram": max(1, flavor.ram),
            "disk": max(0, flavor.disk),
        }
        if flavor.extra_specs:
            entry["extra_specs"] = dict(flavor.extra_specs)
        flavors.append(entry)
        by_ref[flavor.id] = by_ref[flavor.name] = str(entry["name"])
    return flavors, skipped, by_ref


def _workload(servers: Sequence[ObservedServer], images: Mapping[str, str],
              flavors: Mapping[str, str], flavor_entries: Sequence[Mapping[str, object]],
              boots: int | None, notes: list[str]) -> dict[str, object]:
    mix: Counter[tuple[str, str]] = Counter()
    from_volume = gone = 0
    for server in servers:
        if not server.image:
            from_volume += 1
        elif server.image not in images or server.flavor not in flavors:
            gone += 1
        else:
            mix[(images[server.image], flavors[server.flavor])] += 1
    if from_volume:
        notes.append(f"{from_volume} server(s) booted from a volume are not in the mix")
    if gone:
        notes.append(f"{gone} server(s) of an image or flavor the twin does not have "
                     "(deleted, not active, or skipped) are not in the mix")
    if not mix:
        smallest = min(flavor_entries, key=lambda f: (int(str(f["ram"])), str(f["name"])))
        mix = Counter({(image, str(smallest["name"])): 1 for image in images.values()})
        notes.append(f"no server runs an image the twin has: the mix is each image once "
                     f"with the smallest flavor ({smallest['name']})")
    total = boots if boots is not None else max(sum(mix.values()), len(mix))
    weights = [{"image": image, "flavor": flavor, "weight": count}
               for (image, flavor), count in sorted(mix.items(),
                                                    key=lambda item: (-item[1], item[0]))]
    return {"order": "shuffled", "mix": {"total": max(1, total), "weights": weights}}
