"""The stage of a run: hosts started once, each configuration on fresh services, played
one boot at a time (repeatable) or many at a time."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from moorage.compute.agent import ComputeAgent
from moorage.run import description
from moorage.run.host_plans import host_plans
from moorage.run.player import CONFIGURATIONS, play_on, stage_of
from moorage.run.results import ConfigurationResult
from moorage.run.stage import Stage

CLOUD = """\
name: stage
seed: 11
host_groups:
  - name: q35
    count: 3
    driver: fake
    capacity: {vcpus: 16, memory_mb: 65536, disk_gb: 500}
    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO]
    unsupported_traits: [COMPUTE_NET_VIF_MODEL_E1000]
    image_types: [raw, qcow2]
  - name: pc
    count: 1
    driver: fake
    capacity: {vcpus: 8, memory_mb: 16384, disk_gb: 500}
    traits: [COMPUTE_NET_VIF_MODEL_VIRTIO, COMPUTE_NET_VIF_MODEL_E1000]
    image_types: [raw, qcow2]
  - name: lv
    count: 1
    driver: libvirt
    machine_type: q35
    capacity: {vcpus: 8, memory_mb: 16384, disk_gb: 500}
images:
  - {name: legacy, disk_format: qcow2, properties: {hw_vif_model: e1000}}
  - {name: cirros, disk_format: qcow2}
  - {name: vhd, disk_format: vhd}
flavors:
  - {name: small, vcpus: 1, ram: 512, disk: 1}
workload:
  order: shuffled
  boots:
    - {image: legacy, flavor: small, count: 6}
    - {image: cirros, flavor: small, count: 14}
    - {image: vhd, flavor: small, count: 2}
"""

BY_NAME = {c.name: c for c in CONFIGURATIONS}


def _stage(tmp_path: Path, name: str) -> tuple[Stage, description.CloudDescription]:
    path = tmp_path / "cloud.yaml"
    path.write_text(CLOUD)
    cloud = description.load_cloud(path)
    # The libvirt host from recorded capabilities: an agent of its own, not in the fleet.
    plans = [plan for _, plan in host_plans(cloud, False, workdir=tmp_path / name)]
    return stage_of(plans, tmp_path / name), cloud


def _play(stage: Stage, cloud: description.CloudDescription, configuration: str,
          concurrency: int = 1) -> ConfigurationResult:
    return play_on(stage, BY_NAME[configuration],
                   [description.flavor_json(f) for f in cloud.flavors],
                   [description.image_json(i) for i in cloud.images],
                   [(b.image, b.flavor) for b in description.boots(cloud)],
                   concurrency=concurrency)


def _agents(stage: Stage) -> dict[str, ComputeAgent]:
    assert stage.fleet is not None
    return {**stage.fleet.agents, **{r.host: r.agent for r in stage.agents}}


def _placed(result: ConfigurationResult) -> list[tuple[int, str | None, int, str | None]]:
    return [(b.index, b.host, b.spawn_attempts, b.fault) for b in result.boots]


def test_configurations_share_the_hosts_and_nothing_else(tmp_path: Path) -> None:
    stage, cloud = _stage(tmp_path, "one")
    stage.start()
    try:
        agents = _agents(stage)
        assert set(agents) == {"q35-1", "q35-2", "q35-3", "pc-1", "lv-1"}
        assert [r.host for r in stage.agents] == ["lv-1"], "libvirt runs beside the fleet"
        off = _play(stage, cloud, "prefilters off")
        # Each host's guests are gone before the next configuration: its driver has none.
        assert all(agent.driver.guests() == [] for agent in agents.values())
        both = _play(stage, cloud, "both")
        again = _play(stage, cloud, "prefilters off")
        assert _agents(stage) == agents, "the hosts started once"
    finally:
        stage.stop()
    assert both.active == 20   # vhd: no host takes it
    assert off.reschedules > 0 and both.reschedules == 0
    assert off.no_valid_host >= 2
    # Only hosts with an e1000 NIC (the q35 fake hosts refuse it).
    assert {b.host for b in both.boots if b.image == "legacy"} <= {"pc-1", "lv-1"}
    # A configuration played after others plays as on a cloud of its own.
    assert _placed(again) == _placed(off)
    fresh, _ = _stage(tmp_path, "two")
    fresh.start()
    try:
        alone = _play(fresh, cloud, "both")
    finally:
        fresh.stop()
    assert _placed(alone) == _placed(both)


def test_many_boots_at_a_time_all_come_to_rest(tmp_path: Path) -> None:
    stage, cloud = _stage(tmp_path, "many")
    stage.start()
    try:
        one = _play(stage, cloud, "both")
        eight = _play(stage, cloud, "both", concurrency=8)
    finally:
        stage.stop()
    assert eight.concurrency == 8 and eight.boots_per_second is not None
    assert [b.index for b in eight.boots] == list(range(22))
    assert all(b.status in ("ACTIVE", "ERROR") for b in eight.boots)
    # The order is not fixed, what fits is: the same servers end ACTIVE, on hosts
    # that run them at the first try.
    assert eight.active == one.active == 20
    assert {b.index for b in eight.boots if b.fault} == {
        b.index for b in one.boots if b.fault}
    assert eight.reschedules == 0
    assert {b.host for b in eight.boots if b.image == "legacy"} <= {"pc-1", "lv-1"}


def test_services_log_requests_only_when_the_run_does(tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    stage, _cloud = _stage(tmp_path, "quiet")
    logger = logging.getLogger("moorage")
    with caplog.at_level(logging.WARNING, logger="moorage"):
        quiet = stage._placement("placement-q", tmp_path / "q.sqlite")
        assert quiet.command()[3] == "-q"
    with caplog.at_level(logging.INFO, logger="moorage"):
        assert logger.isEnabledFor(logging.INFO)
        verbose = stage._placement("placement-v", tmp_path / "v.sqlite")
        assert "-q" not in verbose.command()
