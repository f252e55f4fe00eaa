"""What the compute agent's HTTP API carries, as pure translations.

``POST /guests`` carries a guest (``guest_to_json`` / ``guest_from_json``, the
flavor and image through ``moorage.model.codec``); a spawn that failed comes back
as a ``spawn_failed`` body (``spawn_failed_to_json`` / ``spawn_failed_from_json``).
``spawn_failure`` decides what a driver's exception tells the conductor: which
feature the host lacked, and whether another host could do better.

A malformed body is ``InvalidBody`` whose message names the field, what it was
and what is allowed: the service answers it with a 400 as is.
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping

from moorage.compute.client import PowerAction, PowerFailed, SpawnFailed
from moorage.model.codec import (
    Json,
    flavor_from_json,
    flavor_to_json,
    image_from_json,
    image_to_json,
)
from moorage.model.flavor import Flavor
from moorage.model.image import Image, InvalidImageProperty
from moorage.virt.driver import Guest, UnsupportedHardware

# Exceptions meaning the flavor and image contradict each other, or the image cannot
# be booted at all: every host would refuse the guest the same way, so the build
# stops instead of rescheduling (upstream aborts the build on the same ones). The
# libvirt driver's FlavorImageConflict and FlavorDiskSmallerThanImage, and the image
# cache's refusals (moorage.virt.image_cache, image_service), are named rather than
# imported so that an agent without libvirt's modules can tell them too. A corrupt
# download (ImageDownloadFailed) is this transfer's trouble: it reschedules.
CONTRADICTIONS = frozenset({"FlavorImageConflict", "FlavorDiskSmallerThanImage",
                            "ImageUnacceptable", "ImageNotActive", "ImageNotFound"})

# The header a call about a guest carries its operation's fence in (compute.client.Fence).
FENCE_HEADER = "X-Moorage-Fence"


def fenced_to_json(instance_uuid: str, fence: object) -> dict[str, object]:
    """The 409 of a call refused for its fence: a newer operation has been there."""
    return {"fenced": {"guest": instance_uuid, "fence": str(fence)},
            "error": {"message": f"guest {instance_uuid}: operation {fence} is older than "
                                 "one that has been here since; refused"}}


def is_fenced(body: object) -> bool:
    """Is this answer the refusal of a call for its fence?"""
    return isinstance(body, dict) and isinstance(body.get("fenced"), dict)


class InvalidBody(ValueError):
    """A request body the agent cannot use; the message says what is wrong."""


# -- guests ------------------------------------------------------------------------

def guest_to_json(guest: Guest) -> Json:
    """The ``guest`` object of ``POST /guests``."""
    return {
        "uuid": guest.uuid,
        "name": guest.name,
        "node": guest.node,
        "flavor": flavor_to_json(guest.flavor),
        "image": image_to_json(guest.image),
        "allocations": {rp: dict(amounts) for rp, amounts in guest.allocations.items()},
        "volume_backed": guest.volume_backed,
    }


def spawn_request(guest: Guest) -> Json:
    """The whole body of ``POST /guests``."""
    return {"guest": guest_to_json(guest)}


def guest_from_json(body: object) -> Guest:
    """The guest of a ``POST /guests`` body ``{"guest": {...}}``; InvalidBody naming
    the first field that is missing or wrong."""
    if not isinstance(body, Mapping) or not isinstance(body.get("guest"), Mapping):
        raise InvalidBody('the body must be a JSON object {"guest": {...}}')
    data = body["guest"]
    unknown = set(data) - {"uuid", "name", "node", "flavor", "image", "allocations",
                           "volume_backed"}
    if unknown:
        raise InvalidBody(f"guest: unknown field(s) {', '.join(sorted(unknown))}; allowed: "
                          "uuid, name, node, flavor, image, allocations, volume_backed")
    volume_backed = data.get("volume_backed", False)
    if not isinstance(volume_backed, bool):
        raise InvalidBody(f"guest.volume_backed: {volume_backed!r}; true or false is "
                          "required")
    instance_uuid = _text(data, "uuid", "guest")
    try:
        instance_uuid = str(uuid_module.UUID(instance_uuid))
    except ValueError:
        raise InvalidBody(f"guest.uuid: {instance_uuid!r} is not a UUID") from None
    return Guest(
        uuid=instance_uuid,
        name=_text(data, "name", "guest", allow_empty=True),
        node=_text(data, "node", "guest"),
        flavor=_flavor(data.get("flavor")),
        image=_image(data.get("image")),
        allocations=_allocations(data.get("allocations", {})),
        volume_backed=volume_backed,
    )


def _text(data: Mapping[str, object], key: str, where: str, *, allow_empty: bool = False
          ) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not (value or allow_empty):
        raise InvalidBody(f"{where}.{key}: {'missing' if value is None else repr(value)}; "
                          f"a {'' if allow_empty else 'non-empty '}string is required")
    return value


def _count(data: Mapping[str, object], key: str, where: str, *, least: int,
           required: bool = True) -> int:
    value = data.get(key, None if required else 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidBody(f"{where}.{key}: {'missing' if value is None else repr(value)}; "
                          f"an integer >= {least} is required")
    return value


def _flavor(data: object) -> Flavor:
    if not isinstance(data, Mapping):
        raise InvalidBody("guest.flavor: a JSON object (name, vcpus, memory_mb, root_gb, "
                          "ephemeral_gb, swap_mb, extra_specs) is required")
    _text(data, "name", "guest.flavor", allow_empty=True)
    _count(data, "vcpus", "guest.flavor", least=1)
    _count(data, "memory_mb", "guest.flavor", least=1)
    for key in ("root_gb", "ephemeral_gb", "swap_mb"):
        _count(data, key, "guest.flavor", least=0, required=False)
    specs = data.get("extra_specs", {})
    if not isinstance(specs, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in specs.items()):
        raise InvalidBody("guest.flavor.extra_specs: an object of strings to strings is "
                          "required")
    return flavor_from_json(data)


def _image(data: object) -> Image:
    if not isinstance(data, Mapping):
        raise InvalidBody("guest.image: a JSON object (id, name, disk_format, "
                          "container_format, min_disk, min_ram, size, properties) is "
                          "required")
    _text(data, "id", "guest.image")
    _text(data, "name", "guest.image", allow_empty=True)
    for key in ("disk_format", "container_format"):
        if key in data:
            _text(data, key, "guest.image")
    for key in ("min_disk", "min_ram"):
        _count(data, key, "guest.image", least=0, required=False)
    if data.get("size") is not None:
        _count(data, "size", "guest.image", least=0)
    if not isinstance(data.get("properties", {}), Mapping):
        raise InvalidBody("guest.image.properties: a JSON object is required")
    try:
        return image_from_json(data)
    except InvalidImageProperty as exc:
        raise InvalidBody(f"guest.image.{exc}") from None


def _allocations(data: object) -> dict[str, dict[str, int]]:
    shape = "an object {resource provider uuid: {resource class: amount}}"
    if not isinstance(data, Mapping):
        raise InvalidBody(f"guest.allocations: {shape} is required")
    allocations: dict[str, dict[str, int]] = {}
    for rp, amounts in data.items():
        if not isinstance(amounts, Mapping):
            raise InvalidBody(f"guest.allocations.{rp}: {shape} is required")
        for rc, amount in amounts.items():
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
                raise InvalidBody(f"guest.allocations.{rp}.{rc}: {amount!r}; an integer "
                                  ">= 1 is required")
        allocations[str(rp)] = {str(rc): int(amount) for rc, amount in amounts.items()}
    return allocations


# -- failed spawns ---------------------------------------------------------------------

def spawn_failure(host: str, exc: Exception) -> SpawnFailed:
    """What a driver's exception from ``spawn`` tells the conductor.

    UnsupportedHardware names the feature the host lacks, and another host may have
    it; a contradiction between flavor and image (CONTRADICTIONS) would fail on every
    host, so it does not reschedule; anything else is this host's trouble (its
    hypervisor, a node it no longer has...) and reschedules.
    """
    if isinstance(exc, SpawnFailed):
        return exc
    kind = type(exc).__name__
    if isinstance(exc, UnsupportedHardware):
        return SpawnFailed(host, kind, str(exc), exc.feature, True)
    return SpawnFailed(host, kind, str(exc) or kind, None, kind not in CONTRADICTIONS)


def spawn_failed_to_json(failure: SpawnFailed) -> Json:
    """The 409 body of a failed spawn."""
    return {"spawn_failed": {"kind": failure.kind, "message": failure.message,
                             "feature": failure.feature, "reschedule": failure.reschedule}}


def spawn_failed_from_json(host: str, body: object) -> SpawnFailed | None:
    """The SpawnFailed a 409 body carries; None if it is not a spawn_failed body."""
    if not isinstance(body, Mapping) or not isinstance(body.get("spawn_failed"), Mapping):
        return None
    data = body["spawn_failed"]
    kind, message = data.get("kind"), data.get("message")
    feature, reschedule = data.get("feature"), data.get("reschedule", True)
    if not (isinstance(kind, str) and isinstance(message, str)
            and (feature is None or isinstance(feature, str)) and isinstance(reschedule, bool)):
        return None
    return SpawnFailed(host, kind, message, feature, reschedule)


# -- power actions ----------------------------------------------------------------------

def power_request(action: PowerAction) -> Json:
    """The body of ``POST /guests/{uuid}/power``."""
    return {"action": str(action)}


def power_action_from_json(body: object) -> PowerAction:
    """The action of a power request; InvalidBody naming what is allowed."""
    allowed = ", ".join(PowerAction)
    if not isinstance(body, Mapping) or set(body) != {"action"}:
        raise InvalidBody(f'the body must be {{"action": ...}}, the action one of {allowed}')
    try:
        return PowerAction(body["action"])
    except ValueError:
        raise InvalidBody(f"action: {body['action']!r}; allowed: {allowed}") from None


def power_failed_to_json(kind: str, message: str) -> Json:
    """The 409 body of a power action the host could not do."""
    return {"power_failed": {"kind": kind, "message": message},
            "error": {"message": f"{kind}: {message}"}}


def power_failed_from_json(host: str, body: object) -> PowerFailed | None:
    """The PowerFailed a 409 body carries; None if it is not a power_failed body."""
    if not isinstance(body, Mapping) or not isinstance(body.get("power_failed"), Mapping):
        return None
    kind, message = body["power_failed"].get("kind"), body["power_failed"].get("message")
    if not (isinstance(kind, str) and isinstance(message, str)):
        return None
    return PowerFailed(host, kind, message)
