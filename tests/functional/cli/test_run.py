"""``moorage run``, as a user runs it: the bundled example, a cloud file of one's own,
the reports it writes, and a bad file refused before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import lxml.html
import pytest

from tests.functional.run.test_html_in_browser import run_chromium
from tests.libvirt_fixtures import require_libvirt

SMALL_CLOUD = """\
name: small
seed: 7
host_groups:
  - name: q35
    count: 2
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
images:
  - {name: legacy, disk_format: qcow2, properties: {hw_vif_model: e1000}}
  - {name: cirros, disk_format: qcow2}
flavors:
  - {name: small, vcpus: 1, ram: 512, disk: 1}
workload:
  order: shuffled
  boots:
    - {image: legacy, flavor: small, count: 4}
    - {image: cirros, flavor: small, count: 4}
"""


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "moorage", "run", *args],
                          capture_output=True, text=True, timeout=timeout)


def _by_name(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["configuration"]: c for c in results["configurations"]}


def test_the_bundled_example_shows_what_the_prefilters_remove(tmp_path: Path) -> None:
    """The README's first command: its report shows the reschedules and NoValidHost
    errors that the prefilters remove, with numbers from this run."""
    result = _run("--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    assert "prefilters" in result.stdout and "reschedules" in result.stdout
    configurations = _by_name(json.loads((tmp_path / "r.json").read_text()))
    assert list(configurations) == ["prefilters off", "image type", "image metadata",
                                    "both", "legacy ImagePropertiesFilter"]
    off, both = configurations["prefilters off"], configurations["both"]
    assert off["reschedules"] > 0 and both["reschedules"] < off["reschedules"]
    assert off["no_valid_host"] > both["no_valid_host"]
    assert both["active"] > off["active"]
    assert both["candidates_mean"] < off["candidates_mean"]
    assert off["failures"], "a failure says which constraint excluded hosts"
    # The report of this very run, opened in headless Chromium, shows its charts with
    # this run's numbers.
    dumped = run_chromium("--dump-dom", (tmp_path / "r.html").as_uri(),
                          profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = lxml.html.fromstring(dumped.stdout)
    assert dom.find("body").get("data-rendered") == "yes"
    charts = dom.xpath("//svg[@data-chart]")
    assert len(charts) >= 6
    drawn = {bar.get("data-configuration"): bar.get("data-value")
             for bar in dom.xpath("//svg[@data-chart='reschedules']//rect[@class='bar']")}
    assert drawn == {name: str(c["reschedules"]) for name, c in configurations.items()}


def test_a_cloud_file_of_ones_own_is_deterministic(tmp_path: Path) -> None:
    cloud = tmp_path / "small.yaml"
    cloud.write_text(SMALL_CLOUD)
    outputs = []
    for attempt in range(2):
        path = tmp_path / f"run{attempt}.json"
        result = _run(str(cloud), "--only", "prefilters off", "--only", "both",
                      "--json", str(path))
        assert result.returncode == 0, result.stderr
        outputs.append(_by_name(json.loads(path.read_text())))
    for name in ("prefilters off", "both"):
        placed = [[(s["image"], s["host"], s["spawn_attempts"]) for s in run[name]["servers"]]
                  for run in outputs]
        assert placed[0] == placed[1], f"{name}: the same seed played differently"
    both = outputs[0]["both"]
    assert {s["host"] for s in both["servers"] if s["image"] == "legacy"} == {"pc-1"}
    assert both["reschedules"] == 0
    assert outputs[0]["prefilters off"]["reschedules"] > 0


def test_a_bad_cloud_file_is_refused_before_anything_starts(tmp_path: Path) -> None:
    cloud = tmp_path / "bad.yaml"
    cloud.write_text(SMALL_CLOUD.replace("driver: fake\n    capacity: {vcpus: 8",
                                         "driver: xen\n    capacity: {vcpus: 8"))
    result = _run(str(cloud), timeout=60)
    assert result.returncode == 1
    line = next(n for n, text in enumerate(SMALL_CLOUD.splitlines(), 1)
                if "vcpus: 8" in text) - 1
    assert f"{cloud}:{line}:" in result.stderr
    assert "unknown driver 'xen'" in result.stderr and "allowed:" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_an_unknown_configuration_is_refused(tmp_path: Path) -> None:
    result = _run("--only", "everything", timeout=60)
    assert result.returncode == 1
    assert "unknown configuration 'everything'" in result.stderr


def test_a_burst_is_played_many_at_a_time_and_the_report_says_so(tmp_path: Path) -> None:
    cloud = tmp_path / "small.yaml"
    cloud.write_text(SMALL_CLOUD)
    path = tmp_path / "burst.json"
    result = _run(str(cloud), "--only", "both", "--concurrency", "4", "--json", str(path))
    assert result.returncode == 0, result.stderr
    run = json.loads(path.read_text())
    both = _by_name(run)["both"]
    assert both["concurrency"] == 4 and both["boots_per_second"] > 0
    assert [s["index"] for s in both["servers"]] == list(range(8))
    assert {s["status"] for s in both["servers"]} == {"ACTIVE"}
    assert both["reschedules"] == 0
    assert any("4 at a time" in note and "not fixed" in note for note in run["notes"])
    assert "boots/s" in result.stderr, "the progress says how fast it goes"


def test_bad_run_options_are_refused_in_one_line(tmp_path: Path) -> None:
    cloud = tmp_path / "small.yaml"
    cloud.write_text(SMALL_CLOUD)
    for args, message in [
            (["--concurrency", "0"], "--concurrency 0: allowed: 1 to 256"),
            (["--api-workers", "-1"], "--api-workers -1: allowed: 0 to 64"),
            ([str(cloud), "--example", "large"],
             "give one of a cloud file, --example and --from-cloud, not a cloud file and "
             "--example"),
    ]:
        result = _run(*args, timeout=60)
        assert result.returncode == 1, (args, result.stderr)
        assert message in result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""


TWO_LIBVIRT_GROUPS = """\
name: two-machine-types
seed: 11
host_groups:
  - name: q35
    count: 2
    driver: libvirt
    virt_type: qemu
    machine_type: q35
    capacity: {vcpus: 16, memory_mb: 65536, disk_gb: 500}
  - name: pc
    count: 1
    driver: libvirt
    virt_type: qemu
    machine_type: pc
    capacity: {vcpus: 8, memory_mb: 16384, disk_gb: 500}
images:
  - {name: dos-ide, disk_format: qcow2, properties: {hw_disk_bus: ide}}
  - {name: cirros, disk_format: qcow2}
flavors:
  - {name: small, vcpus: 1, ram: 128, disk: 1}
workload:
  order: shuffled
  boots:
    - {image: dos-ide, flavor: small, count: 3}
    - {image: cirros, flavor: small, count: 3}
"""


def test_two_real_libvirt_groups_refuse_ide_on_q35_only_without_the_prefilters(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Two libvirt groups of different machine types on this machine's real QEMU: with
    the prefilters off, the q35 hosts refuse the IDE image at spawn (their QEMU has no
    IDE controller) and it reschedules to the pc host; with them on, placement sends it
    to the pc host at once."""
    require_libvirt(request)
    cloud = tmp_path / "two.yaml"
    cloud.write_text(TWO_LIBVIRT_GROUPS)
    path = tmp_path / "r.json"
    result = _run(str(cloud), "--only", "prefilters off", "--only", "both",
                  "--json", str(path))
    assert result.returncode == 0, result.stderr
    run = json.loads(path.read_text())
    assert {(h["group"], h["real"]) for h in run["hosts"]} == {("q35", True), ("pc", True)}
    off, both = _by_name(run)["prefilters off"], _by_name(run)["both"]
    assert off["refused_at_spawn"] == [
        {"host": "q35-1", "feature": "COMPUTE_STORAGE_BUS_IDE", "builds": 3},
        {"host": "q35-2", "feature": "COMPUTE_STORAGE_BUS_IDE", "builds": 3}]
    assert both["refused_at_spawn"] == [] and both["reschedules"] == 0
    for configuration in (off, both):
        assert configuration["active"] == 6
        assert {s["host"] for s in configuration["servers"] if s["image"] == "dos-ide"} == {
            "pc-1"}
    assert ("COMPUTE_STORAGE_BUS_IDE: 6 builds on q35 (2 of 2 hosts; libvirt, 2 on real "
            "QEMU)") in result.stdout
