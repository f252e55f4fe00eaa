"""hw_vif_model=e1000 with the image metadata prefilter on and off.

Three fake hosts: two large ones whose NIC models do not include e1000 (they
report COMPUTE_NET_VIF_MODEL_E1000 unsupported and refuse such a guest at spawn, the
late check) and a smaller one that has it. The weighers prefer the large hosts, so
without the prefilter the build tries them first and reschedules.
"""

from __future__ import annotations

from typing import Any

from moorage.scheduler.filter_records import Constraint, FilterRecord, Origin, OriginKind
from moorage.scheduler.manager import Scheduler
from tests.functional.servers.conftest import fake_host

E1000 = "COMPUTE_NET_VIF_MODEL_E1000"
VIRTIO = "COMPUTE_NET_VIF_MODEL_VIRTIO"


def _hosts() -> list[Any]:
    return [
        fake_host("big1", traits=[VIRTIO], unsupported=[E1000], memory_mb=65536),
        fake_host("big2", traits=[VIRTIO], unsupported=[E1000], memory_mb=65536),
        fake_host("small", traits=[VIRTIO, E1000], memory_mb=16384),
    ]


def _rescheduled_e1000_boot(make_cloud: Any) -> tuple[Any, dict[str, Any]]:
    """With the prefilter off, an e1000 image tried on the big hosts, then placed on
    the small one (three attempts allowed)."""
    cloud = make_cloud(_hosts(), scheduler={"image_metadata_prefilter": False,
                                            "max_attempts": 3})
    server = cloud.boot_and_wait(cloud.flavor("small"),
                                 cloud.image("e1000", "raw", {"hw_vif_model": "e1000"}))
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "small"
    return cloud, server


def test_prefilter_on_sends_e1000_only_to_capable_host(make_cloud: Any) -> None:
    cloud = make_cloud(_hosts(), scheduler={"image_metadata_prefilter": True})
    flavor = cloud.flavor("small")
    image = cloud.image("e1000", "raw", {"hw_vif_model": "e1000"})
    for _ in range(3):
        server = cloud.boot_and_wait(flavor, image)
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == "small"
        assert cloud.spawn_attempts(server) == ["small"]
        record = {f["name"]: FilterRecord.from_json(f)
                  for f in server["moorage:scheduling"]["filters"]}
        assert record["transform_image_metadata"].ran is True
        assert [(a.constraint, a.names, a.origin) for a in record[
            "transform_image_metadata"].added] == [
            (Constraint.ROOT_REQUIRED, (E1000,),
             Origin(OriginKind.IMAGE_PROPERTY, "hw_vif_model", "e1000"))]
    # A virtio image still goes to the big hosts.
    plain = cloud.boot_and_wait(flavor, cloud.image("plain", "raw"))
    assert plain["OS-EXT-SRV-ATTR:host"] in ("big1", "big2")


def test_prefilter_off_reschedules_until_capable_host(make_cloud: Any) -> None:
    cloud, server = _rescheduled_e1000_boot(make_cloud)
    attempts = server["moorage:scheduling"]["attempts"]
    assert [a["host"] for a in attempts][-1] == "small"
    assert sorted(a["host"] for a in attempts[:-1]) == ["big1", "big2"]
    assert all(a["kind"] == "UnsupportedHardware" for a in attempts[:-1])
    assert all(a["feature"] == "hw_vif_model=e1000" for a in attempts[:-1])
    # The failed hosts' claims were released: only the final host holds anything.
    held = cloud.allocations(server["id"])
    assert [cloud.host_of_provider(rp) for rp in held] == ["small"]
    # Each failed host's claim moved to the next alternate in one write (a claim, then
    # two moves), not released and made again (which starts a new consumer at 1).
    assert cloud.placement.request(
        "GET", f"/allocations/{server['id']}")["consumer_generation"] == 3


def test_a_reschedule_claims_afresh_when_the_consumer_generation_is_not_the_expected(
        make_cloud: Any, monkeypatch: Any) -> None:
    """Should placement start consumers at another generation than upstream's 1, the
    move is refused (409, concurrent update) and the build releases and claims
    again: same outcome, one request more."""
    moves: list[bool | None] = []
    original = Scheduler.move_claim

    def skewed(self: Scheduler, spec: Any, destination: Any, generation: int,
               confirm: Any = None) -> bool | None:
        moved = original(self, spec, destination, generation + 10, confirm)
        moves.append(moved)
        return moved

    monkeypatch.setattr(Scheduler, "move_claim", skewed)
    cloud, server = _rescheduled_e1000_boot(make_cloud)
    assert moves == [None]  # refused once; after that the generation is not guessed
    held = cloud.allocations(server["id"])
    assert [cloud.host_of_provider(rp) for rp in held] == ["small"]


def test_prefilter_off_max_attempts_two_is_max_retries_exceeded(make_cloud: Any) -> None:
    cloud = make_cloud(_hosts(), scheduler={"max_attempts": 2})
    server = cloud.boot_and_wait(cloud.flavor("small"),
                                 cloud.image("e1000", "raw", {"hw_vif_model": "e1000"}))
    assert server["status"] == "ERROR"
    assert len(cloud.spawn_attempts(server)) == 2
    assert server["fault"]["message"].startswith("Exceeded maximum number of retries.")
    assert server["fault"]["details"]["kind"] == "MaxRetriesExceeded"
    assert cloud.allocations(server["id"]) == {}
    # No host holds it, so none is named, and there is nothing to rebuild on.
    assert server["OS-EXT-SRV-ATTR:host"] is None
    response = cloud.action(server["id"], {"rebuild": {"imageRef": server["image"]["id"]}})
    assert response.status_code == 409


def test_prefilter_off_max_attempts_one_shows_the_spawn_failure(make_cloud: Any) -> None:
    cloud = make_cloud(_hosts(), scheduler={"max_attempts": 1})
    server = cloud.boot_and_wait(cloud.flavor("small"),
                                 cloud.image("e1000", "raw", {"hw_vif_model": "e1000"}))
    assert server["status"] == "ERROR"
    assert len(cloud.spawn_attempts(server)) == 1
    assert "UnsupportedHardware" in server["fault"]["message"]
    assert "Exceeded maximum number of retries" not in server["fault"]["message"]
    assert cloud.allocations(server["id"]) == {}


def test_prefilter_on_without_capable_host_is_no_valid_host(make_cloud: Any) -> None:
    cloud = make_cloud(_hosts()[:2], scheduler={"image_metadata_prefilter": True})
    server = cloud.boot_and_wait(cloud.flavor("small"),
                                 cloud.image("e1000", "raw", {"hw_vif_model": "e1000"}))
    assert server["status"] == "ERROR"
    assert server["fault"]["message"].startswith("No valid host was found.")
    assert E1000 in server["fault"]["message"]
    assert cloud.spawn_attempts(server) == []
    assert cloud.allocations(server["id"]) == {}


def test_architecture_properties_with_the_prefilter(make_cloud: Any) -> None:
    """Upstream bug 2062425: hw_architecture and hw_emulation_architecture map to
    HW_ARCH_* and COMPUTE_ARCH_*, and a host reporting them takes the server."""
    cloud = make_cloud([
        fake_host("x86", traits=["COMPUTE_ARCH_X86_64"]),
        fake_host("arm", traits=["COMPUTE_ARCH_AARCH64"], memory_mb=65536,
                  architecture="aarch64"),
    ], scheduler={"image_metadata_prefilter": True})
    flavor = cloud.flavor("small")
    for prop in ("hw_architecture", "hw_emulation_architecture"):
        server = cloud.boot_and_wait(flavor, cloud.image(prop, "raw", {prop: "x86_64"}))
        assert server["status"] == "ACTIVE", server.get("fault")
        assert server["OS-EXT-SRV-ATTR:host"] == "x86"


def test_a_value_no_trait_expresses_is_reported_not_dropped(make_cloud: Any) -> None:
    """Upstream drops the whole filter, with a log line, when one value has no trait.
    Moorage keeps the other properties and tells the user about the one it could not
    express."""
    hosts = _hosts()
    for host in hosts:  # armv7l hosts: no HW_ARCH_* trait names their architecture
        host.options = {**host.options, ("fake_driver", "architecture"): "armv7l"}
    cloud = make_cloud(hosts, scheduler={"image_metadata_prefilter": True})
    image = cloud.image("mixed", "raw", {"hw_vif_model": "e1000",
                                        "hw_architecture": "armv7l"})
    server = cloud.boot_and_wait(cloud.flavor("small"), image)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"] == "small"  # e1000 still enforced
    record = {f["name"]: f for f in server["moorage:scheduling"]["filters"]}
    notes = record["transform_image_metadata"]["notes"]
    assert any("hw_architecture=armv7l" in note for note in notes), notes


def test_legacy_image_properties_filter(make_cloud: Any) -> None:
    """With the prefilter off, the legacy ImagePropertiesFilter still keeps an aarch64
    image off hosts that run only x86_64 guests, and says so."""
    cloud = make_cloud(_hosts()[:2], filter_scheduler={
        "enabled_filters": ["ComputeFilter", "ImagePropertiesFilter"]})
    image = cloud.image("arm", "raw", {"hw_architecture": "aarch64"})
    server = cloud.boot_and_wait(cloud.flavor("small"), image)
    assert server["status"] == "ERROR"
    assert "ImagePropertiesFilter" in server["fault"]["message"]
    assert cloud.spawn_attempts(server) == []
    # Without it (and without the prefilter), nothing stops the build at scheduling:
    # each host refuses the guest at spawn, the late check.
    plain = make_cloud(_hosts()[:2], filter_scheduler={"enabled_filters": ["ComputeFilter"]})
    server = plain.boot_and_wait(plain.flavor("small"),
                                 plain.image("arm", "raw", {"hw_architecture": "aarch64"}))
    assert server["status"] == "ERROR"
    assert len(plain.spawn_attempts(server)) == 2
    assert {a["feature"] for a in server["moorage:scheduling"]["attempts"]} == {
        "hw_architecture=aarch64"}
