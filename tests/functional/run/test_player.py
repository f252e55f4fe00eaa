"""The player against the real services: what the prefilters change, measured."""

from __future__ import annotations

from pathlib import Path

from moorage.embedded import SAMPLE_HOSTS
from moorage.run.player import CONFIGURATIONS, play

FLAVORS = [{"name": "small", "vcpus": 1, "ram": 512, "disk": 1}]
IMAGES = [
    {"name": "e1000", "disk_format": "raw", "properties": {"hw_vif_model": "e1000"}},
    {"name": "cirros", "disk_format": "qcow2"},
    {"name": "vhd", "disk_format": "vhd"},
]
BOOTS = [("e1000", "small"), ("cirros", "small"), ("vhd", "small")] * 2


def test_prefilters_remove_reschedules_and_name_what_excluded_hosts(
        tmp_path: Path) -> None:
    by_name = {c.name: c for c in CONFIGURATIONS}
    off = play(by_name["prefilters off"], SAMPLE_HOSTS, FLAVORS, IMAGES, BOOTS, tmp_path)
    both = play(by_name["both"], SAMPLE_HOSTS, FLAVORS, IMAGES, BOOTS, tmp_path)
    assert len(off.boots) == len(both.boots) == 6
    # Off: qcow2 and vhd images are tried on hosts that refuse them at spawn.
    assert off.reschedules > 0
    assert off.no_valid_host == off.max_retries_exceeded == 2  # only after reschedules
    assert {b.fault for b in off.boots if b.image == "vhd"} == {"MaxRetriesExceeded"}
    # Both on: no spawn ever fails; the vhd image is a NoValidHost naming its trait.
    assert both.reschedules == 0
    assert all(b.spawn_attempts == 1 for b in both.boots if b.status == "ACTIVE")
    vhd = [b for b in both.boots if b.image == "vhd"]
    assert {b.fault for b in vhd} == {"NoValidHost"}
    assert all(b.spawn_attempts == 0 for b in vhd)
    constraints = both.failures_by_constraint()
    assert constraints[0][0] == ("required host trait COMPUTE_IMAGE_TYPE_VHD (image "
                                 "disk_format=vhd)")
    assert constraints[0][1] == 2       # both vhd boots
    assert constraints[0][2] == 4       # no host of the four takes vhd
    # Fewer candidates per request once placement knows what the image needs.
    off_mean, both_mean = off.candidates_mean(), both.candidates_mean()
    assert off_mean is not None and both_mean is not None and both_mean < off_mean
    assert all(b.scheduling_seconds is not None and b.scheduling_seconds > 0
               for b in both.boots)
    # The e1000 image lands on the one host that has e1000 on the first try.
    assert {(b.host, b.spawn_attempts) for b in both.boots if b.image == "e1000"} == {
        ("kvm-q35", 1)}
