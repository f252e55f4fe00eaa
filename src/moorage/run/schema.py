"""The JSON Schema of a cloud description file (``moorage run CLOUD.yaml``).

The schema checks the shape: which keys exist, their types, ranges and the closed
vocabularies (drivers, architectures, disk formats, image backends). What needs
more than a shape — image property values, trait names, extra specs, names a
workload refers to — is checked by ``moorage.run.description`` with the same
validators the compute API uses. The vocabularies come from the modules that own
them, never re-typed.
"""

from __future__ import annotations

from typing import Required, TypedDict

from moorage.model.image import ARCHITECTURES, CONTAINER_FORMATS, DISK_FORMATS
from moorage.model.vocabulary import QEMU_VIRT_TYPES
from moorage.virt.capabilities import IMAGE_TYPES
from moorage.virt.loader import DRIVERS

# Names of groups, images and flavors: they become host names and API names.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$"
NAME_RULE = "1 to 63 of A-Z, a-z, 0-9, '_', '.', '-', starting with a letter or digit"
# The drivers a host group may name (libvirt hosts run on real QEMU or from recorded
# domain capabilities, as the run decides: the file does not choose).
CLOUD_DRIVERS = ("fake", "vmware", "ironic", "libvirt")
assert set(CLOUD_DRIVERS) <= set(DRIVERS), "a cloud driver the compute agents do not have"
# [libvirt] images_type values (without "default" and "ploop").
IMAGE_BACKENDS = ("qcow2", "raw", "rbd", "lvm", "flat")
ORDERS = ("sequential", "shuffled")

# The JSON Schema keywords these schemas use, so that mypy checks each one's spelling
# and value (the messages of moorage.run.description read them too).
Schema = TypedDict("Schema", {
    "$schema": str,
    "title": str,
    "type": str | list[str],
    "pattern": str,
    "minimum": int,
    "maximum": int,
    "minLength": int,
    "enum": list[str],
    "items": "Schema",
    "minItems": int,
    "properties": dict[str, "Schema"],
    "required": list[str],
    "additionalProperties": "bool | Schema",
}, total=False)

_NAME: Schema = {"type": "string", "pattern": NAME_PATTERN}
_POSITIVE: Schema = {"type": "integer", "minimum": 1}
_COUNT: Schema = {"type": "integer", "minimum": 0}
_TRAITS: Schema = {"type": "array", "items": {"type": "string"}}
_SCALAR: Schema = {"type": ["string", "integer", "number", "boolean"]}
_TEXT: Schema = {"type": "string"}


def _object(properties: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


CAPACITY = _object({"vcpus": _POSITIVE, "memory_mb": _POSITIVE, "disk_gb": _POSITIVE})

HOST_GROUP = _object({
    "name": _NAME,
    "count": _POSITIVE,
    "driver": {"enum": list(CLOUD_DRIVERS)},
    "description": _TEXT,
    "capacity": CAPACITY,
    "architecture": {"enum": list(ARCHITECTURES)},
    "traits": _TRAITS,
    "unsupported_traits": _TRAITS,
    "image_types": {"type": "array", "items": {"enum": list(IMAGE_TYPES)}},
    "image_backend": {"enum": list(IMAGE_BACKENDS)},
    "virt_type": {"enum": list(QEMU_VIRT_TYPES)},  # the ones Moorage builds guests for
    "machine_type": {"type": "string", "minLength": 1},
    "resource_class": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
}, required=("name", "count", "driver"))

IMAGE = _object({
    "name": _NAME,
    "disk_format": {"enum": list(DISK_FORMATS)},
    "container_format": {"enum": list(CONTAINER_FORMATS)},
    "properties": {"type": "object", "additionalProperties": _SCALAR},
    "description": _TEXT,
}, required=("name", "disk_format"))

FLAVOR = _object({
    "name": _NAME,
    "vcpus": _POSITIVE,
    "ram": _POSITIVE,
    "disk": _COUNT,
    "extra_specs": {"type": "object", "additionalProperties": _SCALAR},
    "description": _TEXT,
}, required=("name", "vcpus", "ram"))

BOOT = _object({"image": _NAME, "flavor": _NAME, "count": _POSITIVE},
               required=("image", "flavor", "count"))
WEIGHT = _object({"image": _NAME, "flavor": _NAME, "weight": _POSITIVE},
                 required=("image", "flavor", "weight"))
MIX = _object({"total": _POSITIVE,
               "weights": {"type": "array", "items": WEIGHT, "minItems": 1}},
              required=("total", "weights"))
WORKLOAD = _object({
    "order": {"enum": list(ORDERS)},
    "concurrency": {"type": "integer", "minimum": 1, "maximum": 256},
    "boots": {"type": "array", "items": BOOT, "minItems": 1},
    "mix": MIX,
})

CLOUD_SCHEMA: Schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Moorage cloud description",
    **_object({
        "name": _NAME,
        "description": _TEXT,
        "seed": {"type": "integer"},
        "host_groups": {"type": "array", "items": HOST_GROUP, "minItems": 1},
        "images": {"type": "array", "items": IMAGE, "minItems": 1},
        "flavors": {"type": "array", "items": FLAVOR, "minItems": 1},
        "workload": WORKLOAD,
    }, required=("name", "seed", "host_groups", "images", "flavors", "workload")),
}

# A fleet file (``moorage compute fleet FLEET.yaml``): host groups only, of the
# drivers a fleet simulates (FLEET_DRIVERS).

FLEET_SCHEMA: Schema = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "Moorage fleet of simulated hosts",
    **_object({
        "name": _NAME,
        "description": _TEXT,
        "host_groups": {"type": "array", "items": HOST_GROUP, "minItems": 1},
    }, required=("name", "host_groups")),
}


# -- the document, as the schema admits it ------------------------------------------------
# What moorage.run.description reads once the schema found nothing wrong: the same keys
# as the schema above, typed.

# A property or extra spec value as YAML gives it (the services take it as a string).
Scalar = str | int | float | bool


class CapacityEntry(TypedDict, total=False):
    vcpus: int
    memory_mb: int
    disk_gb: int


class HostGroupEntry(TypedDict, total=False):
    name: Required[str]
    count: Required[int]
    driver: Required[str]
    description: str
    capacity: CapacityEntry
    architecture: str
    traits: list[str]
    unsupported_traits: list[str]
    image_types: list[str]
    image_backend: str
    virt_type: str
    machine_type: str
    resource_class: str


class ImageEntry(TypedDict, total=False):
    name: Required[str]
    disk_format: Required[str]
    container_format: str
    properties: dict[str, Scalar]
    description: str


class FlavorEntry(TypedDict, total=False):
    name: Required[str]
    vcpus: Required[int]
    ram: Required[int]
    disk: int
    extra_specs: dict[str, Scalar]
    description: str


class BootEntry(TypedDict):
    image: str
    flavor: str
    count: int


class WeightEntry(TypedDict):
    image: str
    flavor: str
    weight: int


class MixEntry(TypedDict):
    total: int
    weights: list[WeightEntry]


class WorkloadEntry(TypedDict, total=False):
    order: str
    concurrency: int
    boots: list[BootEntry]
    mix: MixEntry


class FleetFile(TypedDict, total=False):
    name: Required[str]
    description: str
    host_groups: Required[list[HostGroupEntry]]


class CloudFile(FleetFile, total=False):
    seed: Required[int]
    images: Required[list[ImageEntry]]
    flavors: Required[list[FlavorEntry]]
    workload: Required[WorkloadEntry]
