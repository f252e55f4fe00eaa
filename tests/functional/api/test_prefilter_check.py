"""The compute API's start-up check: a prefilter on while no provider reports any
trait of a family it requires is a warning naming the family and the image
properties it strands; a placement that does not answer is a warning too, and the
service starts either way (``moorage api serve``, as a process)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from moorage.api.service import check_prefilter_traits
from moorage.conf import load_config
from moorage.placement.client import PlacementClient
from moorage.placement.launcher import free_port


def options(url: str, **scheduler: bool) -> Any:
    return load_config([], [("placement", "endpoint_override", url),
                            *(("scheduler", k, v) for k, v in scheduler.items())])


@pytest.fixture
def placement_url(placement_server: Any) -> str:
    """One host that reports image types and an architecture, no device model."""
    client = PlacementClient(placement_server.url, "admin")
    host = client.create_provider("kvm1", str(uuid.uuid4()))
    client.set_traits(host.uuid, host.generation,
                      ["COMPUTE_IMAGE_TYPE_QCOW2", "HW_ARCH_X86_64"])
    return str(placement_server.url)


def test_a_family_no_provider_reports(placement_url: str,
                                      caplog: pytest.LogCaptureFixture) -> None:
    conf = options(placement_url, image_metadata_prefilter=True,
                   query_placement_for_image_type_support=True)
    lines = check_prefilter_traits(conf)
    assert lines == [
        "[scheduler] image_metadata_prefilter is on, but no resource provider reports "
        "any COMPUTE_STORAGE_BUS_* or COMPUTE_GRAPHICS_MODEL_* or COMPUTE_NET_VIF_MODEL_* "
        "or COMPUTE_ARCH_* or COMPUTE_VIOMMU_MODEL_* trait: every boot of an image that "
        "sets hw_cdrom_bus, hw_disk_bus, hw_video_model, hw_vif_model, "
        "hw_emulation_architecture, hw_viommu_model will find no valid host until the "
        "hosts report them (their agents are older, or their drivers do not); `moorage "
        "scheduler preflight` counts the hosts per image"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == lines


def test_nothing_to_say(placement_url: str) -> None:
    assert check_prefilter_traits(options(
        placement_url, query_placement_for_image_type_support=True)) == []
    # no prefilter on: placement is not even asked
    assert check_prefilter_traits(options("http://127.0.0.1:9")) == []


def test_placement_unreachable_is_said_not_raised() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    [line] = check_prefilter_traits(options(url, image_metadata_prefilter=True))
    assert line.startswith("could not check that the hosts report the traits the "
                           f"prefilters image_metadata_prefilter require: placement at "
                           f"{url} is not reachable"), line


def test_api_serve_warns_and_serves(placement_url: str, tmp_path: Path) -> None:
    conf = tmp_path / "api.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path / 'api.sqlite'}\n"
                    f"[placement]\nendpoint_override = {placement_url}\n"
                    "[api]\nauth_strategy = noauth2\n"
                    "[scheduler]\nquery_placement_for_image_type_support = true\n"
                    "image_metadata_prefilter = true\n")
    api = subprocess.Popen([sys.executable, "-m", "moorage", "api", "serve", "--config-file",
                            str(conf), "--port", str(free_port())],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert api.stdout is not None
        serving = api.stdout.readline()
        assert serving.startswith("compute api: serving"), serving
    finally:
        api.terminate()
        _, stderr = api.communicate(timeout=30)
    # oslo.log's lines: "<time> <pid> WARNING <logger> [-] <message>".
    warned = [line.partition(" [-] ")[2] for line in stderr.splitlines()
              if "[scheduler]" in line]
    assert len(warned) == 1, stderr
    assert warned[0].startswith("[scheduler] image_metadata_prefilter is on, but no "
                                "resource provider reports any COMPUTE_STORAGE_BUS_*")
