"""The agent's wire format: guests both ways, bad bodies named, failures mapped."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from moorage.compute import wire
from moorage.compute.client import PowerAction, SpawnFailed
from moorage.model.flavor import Flavor
from moorage.model.image import Image
from moorage.virt.driver import Guest, HypervisorUnavailable, UnsupportedHardware
from moorage.virt.switches import FlavorImageConflict

UUID = "6f1f9d3e-2a7b-4c55-9d0e-1b2c3d4e5f60"


def _guest() -> Guest:
    return Guest(
        uuid=UUID, name="web-1", node="cn1",
        flavor=Flavor("m1.small", 2, 2048, root_gb=20, swap_mb=512,
                      extra_specs={"trait:HW_CPU_X86_AVX2": "required"}),
        image=Image.create("img-1", "cirros", "qcow2", "bare",
                           {"hw_vif_model": "e1000", "trait:CUSTOM_GOLD": "required"},
                           min_disk_gb=1),
        allocations={"rp-1": {"VCPU": 2, "MEMORY_MB": 2048}},
        volume_backed=True,
    )


def test_a_guest_survives_the_round_trip() -> None:
    guest = _guest()
    assert wire.guest_from_json(wire.spawn_request(guest)) == guest


def test_an_images_size_survives_the_round_trip_and_is_absent_without_data() -> None:
    with_data = replace(_guest(), image=replace(_guest().image, size=1 << 20))
    assert wire.guest_from_json(wire.spawn_request(with_data)) == with_data
    assert wire.spawn_request(with_data)["guest"]["image"]["size"] == 1 << 20
    assert "size" not in wire.spawn_request(_guest())["guest"]["image"]


def _body_with(path: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(wire.spawn_request(_guest()))
    *parents, last = path.split(".")
    target = body["guest"]
    for key in parents:
        target = target[key]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return body


@pytest.mark.parametrize(("path", "value", "message"), [
    ("uuid", "not-a-uuid", "guest.uuid: 'not-a-uuid' is not a UUID"),
    ("uuid", KeyError, "guest.uuid: missing; a non-empty string is required"),
    ("node", "", "guest.node: ''; a non-empty string is required"),
    ("flavor", None, "guest.flavor: a JSON object"),
    ("flavor.vcpus", 0, "guest.flavor.vcpus: 0; an integer >= 1 is required"),
    ("flavor.memory_mb", "2048", "guest.flavor.memory_mb: '2048'; an integer"),
    ("flavor.root_gb", True, "guest.flavor.root_gb: True; an integer >= 0"),
    ("flavor.extra_specs", {"a": 1}, "guest.flavor.extra_specs: an object of strings"),
    ("image.id", KeyError, "guest.image.id: missing"),
    ("image.disk_format", "floppy", "guest.image.disk_format: 'floppy' is not valid; "
                                    "allowed: "),
    ("image.properties", {"hw_vif_model": "tulip"},
     "guest.image.hw_vif_model: 'tulip' is not valid; allowed: "),
    ("image.properties", [], "guest.image.properties: a JSON object is required"),
    ("image.size", -1, "guest.image.size: -1; an integer >= 0 is required"),
    ("image.size", "1024", "guest.image.size: '1024'; an integer >= 0 is required"),
    ("allocations", {"rp-1": {"VCPU": 0}}, "guest.allocations.rp-1.VCPU: 0; an integer >= 1"),
    ("allocations", [], "guest.allocations: an object"),
    ("colour", "blue", "guest: unknown field(s) colour; allowed: uuid, name, node"),
    ("volume_backed", "yes", "guest.volume_backed: 'yes'; true or false is required"),
])
def test_a_bad_body_is_named(path: str, value: Any, message: str) -> None:
    with pytest.raises(wire.InvalidBody) as caught:
        wire.guest_from_json(_body_with(path, value))
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("body", [None, [], {"guest": []}, {"server": {}}])
def test_a_body_of_the_wrong_shape_is_refused(body: object) -> None:
    with pytest.raises(wire.InvalidBody, match=r'\{"guest": \{\.\.\.\}\}'):
        wire.guest_from_json(body)


def test_unsupported_hardware_names_its_feature_and_reschedules() -> None:
    failure = wire.spawn_failure("h1", UnsupportedHardware("hw_vif_model=e1000", "no NIC"))
    assert (failure.host, failure.kind, failure.feature, failure.reschedule) == (
        "h1", "UnsupportedHardware", "hw_vif_model=e1000", True)
    assert "no NIC" in failure.message


def test_a_flavor_and_image_contradiction_does_not_reschedule() -> None:
    failure = wire.spawn_failure("h1", FlavorImageConflict("conflicting firmware: bios, uefi"))
    assert (failure.kind, failure.feature, failure.reschedule) == (
        "FlavorImageConflict", None, False)
    assert failure.message == "conflicting firmware: bios, uefi"


@pytest.mark.parametrize("kind", ["FlavorDiskSmallerThanImage", "ImageUnacceptable",
                                  "ImageNotActive", "ImageNotFound"])
def test_an_image_no_host_can_boot_does_not_reschedule(kind: str) -> None:
    failure = wire.spawn_failure("cn1", type(kind, (ValueError,), {})("refused"))
    assert (failure.kind, failure.reschedule) == (kind, False)


def test_a_corrupt_image_download_reschedules() -> None:
    from moorage.virt.image_cache import ImageDownloadFailed

    failure = wire.spawn_failure("cn1", ImageDownloadFailed("Corrupt image download"))
    assert (failure.kind, failure.reschedule) == ("ImageDownloadFailed", True)


def test_another_driver_error_reschedules_under_its_class_name() -> None:
    failure = wire.spawn_failure("h1", HypervisorUnavailable("libvirt is down"))
    assert (failure.kind, failure.message, failure.reschedule) == (
        "HypervisorUnavailable", "libvirt is down", True)


def test_spawn_failed_survives_the_round_trip() -> None:
    failure = SpawnFailed("h1", "UnsupportedHardware", "no e1000", "hw_vif_model=e1000", True)
    back = wire.spawn_failed_from_json("h1", wire.spawn_failed_to_json(failure))
    assert back is not None
    assert (back.host, back.kind, back.message, back.feature, back.reschedule) == (
        "h1", "UnsupportedHardware", "no e1000", "hw_vif_model=e1000", True)


@pytest.mark.parametrize("body", [
    None, {"error": {"message": "x"}}, {"spawn_failed": {"kind": "X"}},
    {"spawn_failed": {"kind": "X", "message": "m", "reschedule": "yes"}},
])
def test_a_409_that_is_not_spawn_failed_is_not_read_as_one(body: object) -> None:
    assert wire.spawn_failed_from_json("h1", body) is None


@pytest.mark.parametrize("body", [{"action": "pause"}, {"action": "stop", "now": 1},
                                  {}, None, ["stop"]])
def test_a_power_request_names_the_actions_allowed(body: object) -> None:
    with pytest.raises(wire.InvalidBody, match="reboot_hard"):
        wire.power_action_from_json(body)


def test_power_requests_and_failures_survive_the_round_trip() -> None:
    for action in PowerAction:
        assert wire.power_action_from_json(wire.power_request(action)) is action
    failure = wire.power_failed_from_json(
        "h1", wire.power_failed_to_json("GuestNotFound", "no guest x on h1"))
    assert failure is not None
    assert (failure.host, failure.kind, failure.message) == (
        "h1", "GuestNotFound", "no guest x on h1")
    assert wire.power_failed_from_json("h1", wire.spawn_failed_to_json(
        SpawnFailed("h1", "X", "y"))) is None
