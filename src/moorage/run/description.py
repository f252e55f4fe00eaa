"""A cloud description file: the hosts, images, flavors and workload ``moorage run`` plays.

``load_cloud`` reads the YAML file, checks it against ``schema.CLOUD_SCHEMA`` and then
with the validators the services themselves use (image properties with
``parse_properties``, flavor extra specs with the compute API's validation, trait
names with os-traits), so a bad file is refused before anything starts. Every
problem is a ``CloudError`` naming the file, the line, what is wrong and what is
allowed: the YAML is composed into its node tree first, which keeps each value's
line.

``boots`` turns the workload into the ordered list of boots (deterministic for the
seed); ``moorage.run.host_plans`` turns the host groups into the hosts to start.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, TypeVar, cast

import jsonschema
import yaml

from moorage.api.extra_specs import InvalidExtraSpec, validate_extra_spec
from moorage.compute.fleet import FLEET_DRIVERS
from moorage.model.image import TRAIT_PREFIX, InvalidImageProperty, parse_properties
from moorage.model.vocabulary import is_trait_name
from moorage.run.schema import (
    CLOUD_SCHEMA,
    FLEET_SCHEMA,
    NAME_PATTERN,
    NAME_RULE,
    BootEntry,
    CloudFile,
    FleetFile,
    HostGroupEntry,
    Schema,
    WeightEntry,
)
from moorage.virt.capabilities import IMAGE_TYPES, image_type_key
from moorage.virt.fake import arch_trait, contrary_arch_traits
from moorage.virt.libvirt import recorded
from moorage.virt.libvirt.discovery import MachineTypeError, static_capabilities
from moorage.virt.libvirt.driver import InvalidConfiguration

BUNDLED_EXAMPLE: Path = Path(__file__).parent / "clouds" / "example.yaml"
# The bundled clouds, by the name `moorage run --example` takes.
EXAMPLES: dict[str, Path] = {
    "small": BUNDLED_EXAMPLE,
    "large": Path(__file__).parent / "clouds" / "large.yaml",
}

# Capacity of a host (or of a VMware cluster, or of an Ironic node) that says none.
DEFAULT_CAPACITY = (32, 131072, 2000)
# The architecture of a fake host that names none (upstream's fake driver's).
FAKE_ARCHITECTURE = "x86_64"
# Keys only some drivers have: key -> the drivers that take it.
DRIVER_KEYS: Mapping[str, tuple[str, ...]] = {
    "virt_type": ("libvirt",),
    # fake: the libvirt machine type it stands in for, checked against the recordings
    "machine_type": ("libvirt", "fake"),
    "image_backend": ("libvirt", "fake"),
    "architecture": ("fake",),
    # libvirt hosts report what they discover; nothing adds traits to them (yet).
    "traits": ("fake", "ironic"),
    "unsupported_traits": ("fake",),
    "image_types": ("fake",),
    "resource_class": ("ironic",),
}

JsonPath = tuple[str | int, ...]
_Entry = TypeVar("_Entry")


# -- the description ------------------------------------------------------------------

@dataclass(frozen=True)
class Capacity:
    """What one host offers: VCPU, MEMORY_MB, DISK_GB (an Ironic node: its properties)."""

    vcpus: int = DEFAULT_CAPACITY[0]
    memory_mb: int = DEFAULT_CAPACITY[1]
    disk_gb: int = DEFAULT_CAPACITY[2]


@dataclass(frozen=True)
class HostGroup:
    """``count`` alike hosts of one driver."""

    name: str
    count: int
    driver: str                               # fake | vmware | ironic | libvirt
    capacity: Capacity = field(default_factory=Capacity)
    architecture: str | None = None           # fake: the host's (default x86_64)
    traits: tuple[str, ...] = ()              # fake, ironic: reported supported
    unsupported_traits: tuple[str, ...] = ()  # fake: reported unsupported, refused at spawn
    image_types: tuple[str, ...] | None = None  # fake: the disk formats it takes
    image_backend: str | None = None          # libvirt images_type; fake: which formats
    virt_type: str | None = None              # libvirt
    machine_type: str | None = None           # libvirt: x86_64 guests' machine type;
                                              # fake: the one it stands in for
    resource_class: str | None = None         # ironic
    description: str = ""

    def host_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class ImageSpec:
    """An image as the compute API takes it; ``properties`` as written, validated."""

    name: str
    disk_format: str
    container_format: str = "bare"
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FlavorSpec:
    """A flavor as the compute API takes it (ram in MiB, disk in GiB)."""

    name: str
    vcpus: int
    ram: int
    disk: int = 0
    extra_specs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkloadItem:
    image: str
    flavor: str
    count: int


@dataclass(frozen=True)
class Workload:
    """What to boot, and in which order: as listed, or shuffled by the cloud's seed."""

    items: tuple[WorkloadItem, ...]
    order: str = "shuffled"
    # Servers booted at a time; 1 plays the same run for the same seed.
    concurrency: int = 1

    @property
    def total(self) -> int:
        return sum(item.count for item in self.items)


@dataclass(frozen=True)
class CloudDescription:
    name: str
    seed: int
    source: str
    host_groups: tuple[HostGroup, ...]
    images: tuple[ImageSpec, ...]
    flavors: tuple[FlavorSpec, ...]
    workload: Workload
    description: str = ""


@dataclass(frozen=True)
class Boot:
    """One boot of the workload, ``index`` counting from 0 in the order played."""

    index: int
    image: str
    flavor: str


# -- errors ------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    line: int
    message: str


class CloudError(ValueError):
    """A cloud file that cannot be played: every problem as ``FILE:LINE: message``."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = tuple(sorted(problems, key=lambda p: p.line))
        super().__init__("\n".join(f"{source}:{p.line}: {p.message}" for p in self.problems))


class _Lines:
    """The line of every value of the document, by its path (mapping keys as str)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.by_path: dict[JsonPath, int] = {(): 1}

    def record(self, node: yaml.Node, path: JsonPath, ancestors: frozenset[int]) -> None:
        self.by_path.setdefault(path, node.start_mark.line + 1)
        if id(node) in ancestors:  # an alias of an enclosing node
            return
        inside = ancestors | {id(node)}
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = str(key_node.value)
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise CloudError(self.source, [Problem(line, (
                        f"{where((*path, key))}: the key {key!r} is given twice (first on "
                        f"line {seen[key]}); allowed: each key once"))])
                seen[key] = line
                self.by_path[(*path, key)] = line
                self.record(value_node, (*path, key), inside)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.record(item, (*path, index), inside)

    def line(self, path: JsonPath) -> int:
        """The line of ``path``, or of its nearest enclosing value that has one."""
        for end in range(len(path), -1, -1):
            if path[:end] in self.by_path:
                return self.by_path[path[:end]]
        return 1


def where(path: JsonPath) -> str:
    """``host_groups[2].driver``, ``images[0].properties["trait:CUSTOM_X"]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part.isidentifier():
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "the file"


# -- loading -----------------------------------------------------------------------

def load_cloud(path: Path) -> CloudDescription:
    """The cloud ``path`` describes; CloudError naming every problem, by line."""
    source = str(path)
    data, lines = _compose(_read(path, "cloud"), source)
    problems = _schema_problems(data, lines)
    if not problems:
        cloud = cast(CloudFile, data)  # the schema admitted it
        problems = [*_group_problems(cloud, lines), *_image_problems(cloud, lines),
                    *_flavor_problems(cloud, lines), *_workload_problems(cloud, lines)]
        if not problems:
            return _description(cloud, source)
    raise CloudError(source, _name_groups(data, problems))


@dataclass(frozen=True)
class FleetDescription:
    """A fleet of simulated hosts: its name and host groups (``moorage compute fleet``)."""

    name: str
    source: str
    host_groups: tuple[HostGroup, ...]
    description: str = ""


def load_fleet(path: Path) -> FleetDescription:
    """The fleet ``path`` describes (a cloud file's ``name`` and ``host_groups``, of
    fake, vmware and ironic groups only); CloudError naming every problem, by line and
    group, before anything starts."""
    source = str(path)
    data, lines = _compose(_read(path, "fleet"), source, FLEET_SCHEMA)
    problems = _schema_problems(data, lines, FLEET_SCHEMA)
    if not problems:
        fleet = cast(FleetFile, data)  # the schema admitted it
        problems = _group_problems(fleet, lines)
        for at, group in _entries("host_groups", fleet["host_groups"]):
            if group["driver"] not in FLEET_DRIVERS:
                problems.append(Problem(lines.line((*at, "driver")), (
                    f"{where((*at, 'driver'))}: a fleet runs simulated hosts only; "
                    f"allowed: {', '.join(FLEET_DRIVERS)} (run a {group['driver']} host as "
                    "its own agent: moorage compute run)")))
        if not problems:
            return FleetDescription(name=fleet["name"], source=source,
                                    host_groups=_host_groups(fleet["host_groups"]),
                                    description=fleet.get("description", ""))
    raise CloudError(source, _name_groups(data, problems))


def _read(path: Path, kind: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CloudError(str(path), [Problem(1, f"cannot read the {kind} file: {exc}; "
                                                "allowed: a UTF-8 YAML file")]) from None


def _name_groups(data: object, problems: Sequence[Problem]) -> list[Problem]:
    """``host_groups[3]`` in a message becomes ``host_groups[3] (group NAME)``."""
    groups = data.get("host_groups") if isinstance(data, Mapping) else None
    if not isinstance(groups, list):
        return list(problems)

    def named(match: re.Match[str]) -> str:
        index = int(match.group(1))
        group = groups[index] if index < len(groups) else None
        name = group.get("name") if isinstance(group, Mapping) else None
        return match.group(0) + (f" (group {name})" if isinstance(name, str) else "")

    return [Problem(p.line, re.sub(r"host_groups\[(\d+)\]", named, p.message, count=1))
            for p in problems]


def _compose(text: str, source: str, schema: Schema = CLOUD_SCHEMA
             ) -> tuple[object, _Lines]:
    """The document's values and their lines (PyYAML's safe loader, node tree kept)."""
    loader = yaml.SafeLoader(text)
    lines = _Lines(source)
    try:
        node = loader.get_single_node()
        if node is None:
            raise CloudError(source, [Problem(1, "the file is empty; allowed: a mapping "
                                                 "with " + ", ".join(schema.get("properties",
                                                                                {})))])
        lines.record(node, (), frozenset())
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise CloudError(source, [Problem(line, f"not valid YAML: {what}")]) from None
    except yaml.YAMLError as exc:
        raise CloudError(source, [Problem(1, f"not valid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    return data, lines


# -- the schema's problems, in words ----------------------------------------------------

def _schema_problems(data: object, lines: _Lines,
                     schema: Schema = CLOUD_SCHEMA) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(schema)
    problems: list[Problem] = []
    for error in validator.iter_errors(data):
        problems.extend(_explain(error, _path(data, error.absolute_path), lines))
    return list(dict.fromkeys(problems))  # one "required" error per key, each naming all


def _path(data: object, raw: Sequence[str | int]) -> JsonPath:
    """jsonschema's path with mapping keys as str and list indices as int."""
    path: list[str | int] = []
    value = data
    for part in raw:
        if isinstance(value, list) and isinstance(part, int):
            path.append(part)
            value = value[part] if -len(value) <= part < len(value) else None
        else:
            path.append(str(part))
            value = value.get(part) if isinstance(value, Mapping) else None
    return tuple(path)


def _explain(error: jsonschema.ValidationError, path: JsonPath,
             lines: _Lines) -> list[Problem]:
    # jsonschema hands back the (sub)schema of ours that refused the value.
    schema = cast(Schema, error.schema) if isinstance(error.schema, Mapping) else Schema()
    kind = error.validator
    here = where(path)
    instance = error.instance if isinstance(error.instance, Mapping) else {}
    if kind == "additionalProperties":
        allowed = ", ".join(schema.get("properties", {}))
        return [Problem(lines.line((*path, str(key))),
                        f"{where((*path, str(key)))}: unknown key {str(key)!r}; "
                        f"allowed: {allowed}")
                for key in instance if key not in schema.get("properties", {})]
    if kind == "required":
        missing = [k for k in schema.get("required", ()) if k not in instance]
        return [Problem(lines.line(path), f"{here}: the key {key!r} is missing; required: "
                                          f"{', '.join(schema['required'])}")
                for key in missing]
    if kind == "enum" and path and path[-1] == "driver":
        return [Problem(lines.line(path), f"{here}: unknown driver {error.instance!r}; "
                                          f"allowed: {_allowed(schema)}")]
    if kind == "minItems":
        return [Problem(lines.line(path), f"{here}: the list is empty; allowed: "
                                          f"{_allowed(schema)}")]
    return [Problem(lines.line(path), f"{here}: {_shown(error.instance)} is not valid; "
                                      f"allowed: {_allowed(schema)}")]


def _shown(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "an empty value"
    return repr(value)


def _allowed(schema: Schema) -> str:
    """What ``schema`` allows, in words."""
    if "enum" in schema:
        return ", ".join(str(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "integer":
        low = schema.get("minimum")
        return "an integer" + (f" of {low} or more" if low is not None else "")
    if kind == "string":
        if schema.get("pattern") == NAME_PATTERN:
            return NAME_RULE
        if "pattern" in schema:
            return f"a string matching {schema['pattern']}"
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "object":
        keys = ", ".join(schema.get("properties", {}))
        return f"a mapping with keys {keys}" if keys else "a mapping of names to values"
    if kind == "array":
        items = schema.get("items", {})
        least = schema.get("minItems")
        return ("a list" + (f" of at least {least}" if least else "")
                + (f" of {_allowed(items)}" if items else ""))
    if isinstance(kind, list):
        return "a string, number or boolean"
    return str(kind)


# -- the checks beyond the schema ---------------------------------------------------------

def _entries(key: str, entries: Sequence[_Entry]) -> Iterator[tuple[JsonPath, _Entry]]:
    """Each entry of the list under ``key``, with its path."""
    for index, entry in enumerate(entries):
        yield (key, index), entry


def _unique_names(key: str, names: Sequence[str], lines: _Lines) -> list[Problem]:
    """A problem for each entry of the list under ``key`` named as an earlier one."""
    first: dict[str, JsonPath] = {}
    problems = []
    for path, name in _entries(key, names):
        if name in first:
            problems.append(Problem(lines.line((*path, "name")), (
                f"{where((*path, 'name'))}: {name!r} is already the name of "
                f"{where(first[name])} (line {lines.line(first[name])}); allowed: a name "
                "used once")))
        else:
            first[name] = path
    return problems


TRAIT_RULE = "an os-traits name or CUSTOM_ followed by A-Z, 0-9 and _"


def _trait_problem(path: JsonPath, name: str, lines: _Lines) -> Problem | None:
    if is_trait_name(name):
        return None
    return Problem(lines.line(path), f"{where(path)}: {name!r} is not a trait; allowed: "
                                     f"{TRAIT_RULE}")


def image_property_problem(key: str, value: object) -> str | None:
    """What is wrong with image property ``key = value`` for the services (the compute
    API's check, and a ``trait:`` property's), or None."""
    if key.startswith(TRAIT_PREFIX):
        trait = key[len(TRAIT_PREFIX):]
        if not is_trait_name(trait):
            return f"{trait!r} is not a trait; allowed: {TRAIT_RULE}"
        return None if _text(value) == "required" else (
            f"{value!r} is not valid; allowed: required")
    try:
        parse_properties({key: _text(value)})
    except InvalidImageProperty as exc:
        return str(exc)
    return None


def extra_spec_problem(key: str, value: object) -> str | None:
    """What is wrong with flavor extra spec ``key = value`` for the flavor extra-specs
    API, or None."""
    try:
        validate_extra_spec(key, value)
    except InvalidExtraSpec as exc:
        return str(exc)
    return None


def _group_problems(data: FleetFile, lines: _Lines) -> list[Problem]:
    groups = data["host_groups"]
    problems = _unique_names("host_groups", [g["name"] for g in groups], lines)
    for path, group in _entries("host_groups", groups):
        driver = group["driver"]
        for key, drivers in DRIVER_KEYS.items():
            if key in group and driver not in drivers:
                problems.append(Problem(lines.line((*path, key)), (
                    f"{where((*path, key))}: a {driver} group has no {key}; allowed: "
                    f"{key} in {' and '.join(drivers)} groups")))
        for key, names in _reported(group):
            for index, name in enumerate(names):
                problem = _trait_problem((*path, key, index), name, lines)
                if problem is not None:
                    problems.append(problem)
        both = sorted(set(group.get("traits", ())) & set(group.get("unsupported_traits", ())))
        if both:
            problems.append(Problem(lines.line((*path, "unsupported_traits")), (
                f"{where((*path, 'unsupported_traits'))}: {', '.join(both)} also in traits; "
                "allowed: a trait either supported or unsupported")))
        if driver == "fake":
            problems.extend(_arch_trait_problems(path, group, lines))
            if "machine_type" in group:
                problems.extend(_stand_in_problems(path, group, lines))
        backend, types = group.get("image_backend"), group.get("image_types")
        if backend is not None and types is not None:
            takes = backend_image_types(backend)
            refused = [t for t in types if t not in takes]
            if refused:
                problems.append(Problem(lines.line((*path, "image_types")), (
                    f"{where((*path, 'image_types'))}: image_backend {backend} cannot take "
                    f"{', '.join(refused)}; allowed: {', '.join(takes)}")))
    return problems


def _reported(group: HostGroupEntry) -> tuple[tuple[str, list[str]], ...]:
    """The group's traits by the key that lists them: supported, then unsupported."""
    return (("traits", group.get("traits", [])),
            ("unsupported_traits", group.get("unsupported_traits", [])))


def _arch_trait_problems(path: JsonPath, group: HostGroupEntry,
                         lines: _Lines) -> list[Problem]:
    """A fake host reports HW_ARCH_<its architecture> itself: its traits may not
    claim another architecture, nor deny its own."""
    arch = group.get("architecture", FAKE_ARCHITECTURE)
    own = arch_trait(arch)
    if own is not None:
        allowed = {True: f"{own} or none (the host reports it itself)",
                   False: f"another HW_ARCH_* trait or none (the host reports {own})"}
    else:  # armv7l: os-traits has no trait for it
        allowed = dict.fromkeys((True, False), f"none (os-traits has no trait for {arch})")
    problems = []
    for (key, names), supported in zip(_reported(group), (True, False), strict=True):
        for index, name in enumerate(names):
            if contrary_arch_traits(arch, {name: supported}):
                here = (*path, key, index)
                problems.append(Problem(lines.line(here), (
                    f"{where(here)}: {name} contradicts architecture {arch}; allowed: "
                    f"{allowed[supported]}")))
    return problems


def _stand_in_problems(path: JsonPath, group: HostGroupEntry,
                       lines: _Lines) -> list[Problem]:
    """A fake host standing in for a libvirt machine type may not say a device model
    or bus is (not) supported where the libvirt driver, on the recorded QEMU, says the
    opposite: an example cannot invent a limitation, nor a capability."""
    arch, machine = group.get("architecture", FAKE_ARCHITECTURE), group["machine_type"]
    try:
        reports = recorded.machine_type_reports(arch, machine)
    except (MachineTypeError, InvalidConfiguration):
        here = (*path, "machine_type")
        known = recorded.recorded_machine_types(arch) if arch == "x86_64" else []
        allowed = ", ".join(known) or f"none for a fake {arch} group"
        return [Problem(lines.line(here), (
            f"{where(here)}: no libvirt host of {arch} {machine} is recorded to check a "
            f"fake group against; allowed: {allowed}"))]
    problems = []
    for (key, names), supported in zip(_reported(group), (True, False), strict=True):
        for index, name in enumerate(names):
            report = reports.get(name)
            if report is not None and report.supported != supported:
                here = (*path, key, index)
                problems.append(Problem(lines.line(here), (
                    f"{where(here)}: the libvirt driver reports {name} "
                    f"{'supported' if report.supported else 'unsupported'} on {arch} "
                    f"{machine} ({report.detail}); allowed: what it reports, or nothing")))
    return problems


def _image_problems(data: CloudFile, lines: _Lines) -> list[Problem]:
    images = data["images"]
    problems = _unique_names("images", [i["name"] for i in images], lines)
    for path, image in _entries("images", images):
        for key, value in image.get("properties", {}).items():
            here = (*path, "properties", str(key))
            problem = image_property_problem(str(key), value)
            if problem is not None:
                problems.append(Problem(lines.line(here), f"{where(here)}: {problem}"))
    return problems


def _flavor_problems(data: CloudFile, lines: _Lines) -> list[Problem]:
    flavors = data["flavors"]
    problems = _unique_names("flavors", [f["name"] for f in flavors], lines)
    for path, flavor in _entries("flavors", flavors):
        for key, value in flavor.get("extra_specs", {}).items():
            here = (*path, "extra_specs", str(key))
            problem = extra_spec_problem(str(key), value)
            if problem is not None:
                problems.append(Problem(lines.line(here), f"{where(here)}: {problem}"))
    return problems


def _workload_problems(data: CloudFile, lines: _Lines) -> list[Problem]:
    workload = data["workload"]
    given = [key for key in ("boots", "mix") if key in workload]
    if len(given) != 1:
        return [Problem(lines.line(("workload",)), (
            f"workload: {'both boots and mix are' if given else 'neither boots nor mix is'} "
            "given; allowed: exactly one of boots (a list of image, flavor, count) and mix "
            "(total and weights)"))]
    known = {"image": [entry["name"] for entry in data["images"]],
             "flavor": [entry["name"] for entry in data["flavors"]]}
    entries: Sequence[BootEntry | WeightEntry]
    base: JsonPath
    if "boots" in workload:
        entries, base = workload["boots"], ("workload", "boots")
    else:
        entries, base = workload["mix"]["weights"], ("workload", "mix", "weights")
    problems = []
    for index, entry in enumerate(entries):
        for kind, name in (("image", entry["image"]), ("flavor", entry["flavor"])):
            if name not in known[kind]:
                here = (*base, index, kind)
                problems.append(Problem(lines.line(here), (
                    f"{where(here)}: unknown {kind} {name!r}; allowed: "
                    f"{', '.join(known[kind])}")))
    return problems


def _text(value: object) -> str:
    """A property or extra spec value as the services store it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- building the description ----------------------------------------------------------------

def backend_image_types(image_backend: str) -> list[str]:
    """The disk formats a KVM host on ``image_backend`` takes, from the libvirt driver's
    capability table, with images not converted to raw ([DEFAULT] force_raw_images =
    False): rbd and lvm then take raw images, not qcow2."""
    found = static_capabilities("kvm", image_backend, force_raw_images=False)
    return [f for f in IMAGE_TYPES if image_type_key(f) in found
            and found[image_type_key(f)].supported]


def _host_groups(groups: Sequence[HostGroupEntry]) -> tuple[HostGroup, ...]:
    return tuple(
        HostGroup(
            name=g["name"], count=g["count"], driver=g["driver"],
            capacity=Capacity(**g.get("capacity", {})),
            architecture=g.get("architecture"),
            traits=tuple(g.get("traits", ())),
            unsupported_traits=tuple(g.get("unsupported_traits", ())),
            image_types=tuple(g["image_types"]) if "image_types" in g else None,
            image_backend=g.get("image_backend"), virt_type=g.get("virt_type"),
            machine_type=g.get("machine_type"), resource_class=g.get("resource_class"),
            description=g.get("description", ""),
        )
        for g in groups)


def _description(data: CloudFile, source: str) -> CloudDescription:
    groups = _host_groups(data["host_groups"])
    images = tuple(
        ImageSpec(i["name"], i["disk_format"], i.get("container_format", "bare"),
                  {str(k): _text(v) for k, v in i.get("properties", {}).items()})
        for i in data["images"])
    flavors = tuple(
        FlavorSpec(f["name"], f["vcpus"], f["ram"], f.get("disk", 0),
                   {str(k): _text(v) for k, v in f.get("extra_specs", {}).items()})
        for f in data["flavors"])
    workload = data["workload"]
    if "boots" in workload:
        items = tuple(WorkloadItem(b["image"], b["flavor"], b["count"])
                      for b in workload["boots"])
    else:
        items = _apportion(workload["mix"]["total"], workload["mix"]["weights"])
    return CloudDescription(
        name=data["name"], seed=data["seed"], source=source, host_groups=groups,
        images=images, flavors=flavors,
        workload=Workload(items, workload.get("order", "shuffled"),
                          workload.get("concurrency", 1)),
        description=data.get("description", ""))


def _apportion(total: int, weights: Sequence[WeightEntry]) -> tuple[WorkloadItem, ...]:
    """``total`` boots shared by weight (largest remainder; ties go to the first listed)."""
    whole = sum(w["weight"] for w in weights)
    shares = [total * w["weight"] / whole for w in weights]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(shares[i] - counts[i]), i))
    for i in by_remainder[:total - sum(counts)]:
        counts[i] += 1
    return tuple(WorkloadItem(w["image"], w["flavor"], n)
                 for w, n in zip(weights, counts, strict=True) if n > 0)


def with_seed(desc: CloudDescription, seed: int) -> CloudDescription:
    """The same cloud played with another seed (``moorage run --seed``)."""
    return dataclasses.replace(desc, seed=seed)


class FlavorBody(TypedDict):
    """A flavor as the compute API's POST /flavors (and os-extra_specs) takes it."""

    name: str
    vcpus: int
    ram: int
    disk: int
    extra_specs: dict[str, str]


class ImageBody(TypedDict):
    """An image as the compute API's POST /images takes it."""

    name: str
    disk_format: str
    container_format: str
    properties: dict[str, str]


def flavor_json(flavor: FlavorSpec) -> FlavorBody:
    return FlavorBody(name=flavor.name, vcpus=flavor.vcpus, ram=flavor.ram, disk=flavor.disk,
                      extra_specs=dict(flavor.extra_specs))


def image_json(image: ImageSpec) -> ImageBody:
    return ImageBody(name=image.name, disk_format=image.disk_format,
                     container_format=image.container_format,
                     properties=dict(image.properties))


# -- what to play ------------------------------------------------------------------------------

def boots(desc: CloudDescription) -> list[Boot]:
    """The workload's boots in the order they are played: as listed, or shuffled with
    a generator seeded by the cloud's seed (the same file plays the same order)."""
    pairs = [(item.image, item.flavor) for item in desc.workload.items
             for _ in range(item.count)]
    if desc.workload.order == "shuffled":
        random.Random(desc.seed).shuffle(pairs)
    return [Boot(index, image, flavor) for index, (image, flavor) in enumerate(pairs)]
